// Property test: random sequences of lookups, chunked prefills, decode steps
// with lookahead, frees and evictions, on random geometries (block sizes,
// hash units dividing them, pool sizes, EAGLE on/off, both free orders),
// checked step by step against the brute-force CacheModel: hits and the
// blocks returned, the ids every allocation takes, copies, the exact free
// queue, reference counts and registrations, plus CheckInvariants().
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>

#include "cache_model.h"
#include "gen.h"
#include "test_util.h"

namespace hkv {
namespace {

using testing::CacheModel;
using testing::ModelHit;

struct Live {
  Request request;
  std::uint32_t computed = 0;
};

class Harness {
 public:
  explicit Harness(const testing::ModelConfig& c)
      : cache_(CacheConfig{
            .groups = {{.block_size = c.block_size,
                        .speculation = c.eagle ? Speculation::kEagle
                                               : Speculation::kNone}},
            .num_blocks = c.num_blocks,
            .keys = {.hash_unit = c.hash_unit},
            .free_order = c.free_order}),
        model_(c) {}

  void Admit(const std::vector<TokenId>& prompt) {
    history_.push_back(prompt);
    const RequestId id{next_id_++};
    Request request({.id = id}, prompt, cache_.key_scheme());
    const CacheHit hit = CheckLookup(request);
    const ModelHit model_hit{hit.num_tokens, hit.blocks[0]};
    const std::uint32_t remaining = request.num_tokens() - hit.num_tokens;
    const auto chunk = *rc::gen::inRange<std::uint32_t>(1, remaining + 1);
    if (Step(request, 0, chunk, 0, &hit, &model_hit)) {
      live_.emplace(static_cast<std::uint64_t>(id),
                    Live{std::move(request), hit.num_tokens + chunk});
    }
  }

  // Prefills the next chunk, or decodes 1-3 tokens with 0-2 lookahead slots.
  void Advance(Live& live) {
    Request& r = live.request;
    std::uint32_t lookahead = 0;
    std::uint32_t num_new = 0;
    if (live.computed < r.num_tokens()) {
      num_new = *rc::gen::inRange<std::uint32_t>(
          1, r.num_tokens() - live.computed + 1);
    } else {
      num_new = *rc::gen::inRange<std::uint32_t>(1, 4);
      r.AppendTokens(testing::GenTokens(num_new, num_new));
      lookahead = *rc::gen::inRange<std::uint32_t>(0, 3);
    }
    if (Step(r, live.computed, num_new, lookahead, nullptr, nullptr))
      live.computed += num_new;
  }

  void Free(std::uint64_t key) {
    cache_.Free(live_.at(key).request.id());
    model_.Free(live_.at(key).request.id());
    live_.erase(key);
  }

  CacheHit CheckLookup(const Request& request) {
    const CacheHit hit = cache_.Lookup(request);
    // Keys read on demand find the same hit.
    RC_ASSERT(testing::SameAsLookupKeys(cache_, request, hit));
    const std::vector<TokenId> tokens(request.tokens().begin(),
                                      request.tokens().end());
    const ModelHit expected = model_.Lookup(tokens);
    RC_ASSERT(hit.num_tokens == expected.num_tokens);
    RC_ASSERT(hit.blocks[0] == expected.blocks);
    return hit;
  }

  // Copies are taken after every operation; a step ends only sometimes, so
  // pinned endpoints pile up and outlive their requests.
  void CheckState() {
    RC_ASSERT(cache_.TakeCopies() == model_.TakeCopies());
    if (*rc::gen::arbitrary<bool>()) {
      cache_.FinishStep();
      model_.FinishStep();
    }
    RC_ASSERT(cache_.pool().FreeQueueSnapshot() == model_.FreeQueue());
    for (std::uint32_t i = 1; i < cache_.pool().num_blocks(); ++i) {
      RC_ASSERT(cache_.pool().ref_count(BlockId{i}) ==
                model_.ref_count(BlockId{i}));
      RC_ASSERT(cache_.pool().primary_num_tokens(BlockId{i}) ==
                model_.longest_proof(BlockId{i}));
    }
    RC_ASSERT(cache_.CheckInvariants());
  }

  std::map<std::uint64_t, Live>& live() { return live_; }
  const std::vector<std::vector<TokenId>>& history() const { return history_; }

 private:
  bool Step(const Request& r, std::uint32_t computed, std::uint32_t num_new,
            std::uint32_t lookahead, const CacheHit* hit,
            const ModelHit* model_hit) {
    const std::optional<NewBlocks> placed =
        cache_.Allocate(r, {.num_computed_tokens = computed,
                            .num_new_tokens = num_new,
                            .num_lookahead_tokens = lookahead,
                            .hit = hit});
    const std::uint32_t hit_tokens = hit ? hit->num_tokens : 0;
    const std::optional<std::vector<BlockId>> expected =
        model_.Allocate(r.id(), computed,
                        computed + hit_tokens + num_new + lookahead, model_hit);
    RC_ASSERT(placed.has_value() == expected.has_value());
    if (!placed) {
      RC_ASSERT(cache_.HoldsBlocks(r.id()) == model_.holds(r.id()));
      return false;
    }
    RC_ASSERT(placed->blocks[0] == *expected);
    const std::uint32_t done = computed + hit_tokens + num_new;
    cache_.Commit(r, done);
    const std::vector<TokenId> tokens(r.tokens().begin(), r.tokens().end());
    model_.Commit(r.id(), tokens, r.num_prompt_tokens(), done);
    return true;
  }

  internal::CacheCore cache_;
  CacheModel model_;
  std::map<std::uint64_t, Live> live_;
  std::vector<std::vector<TokenId>> history_;
  std::uint64_t next_id_ = 1;
};

RC_GTEST_PROP(CachePropertyTest, AgreesWithBruteForceModel, ()) {
  const auto unit = *rc::gen::element(1u, 2u, 4u);
  const auto block = unit * *rc::gen::element(1u, 2u, 4u);
  const auto num_blocks = *rc::gen::inRange(2u, 40u);
  const bool eagle = *rc::gen::arbitrary<bool>();
  const FreeOrder order =
      *rc::gen::element(FreeOrder::kPrependUncached, FreeOrder::kAppendAll);
  Harness h({.block_size = block,
             .hash_unit = unit,
             .num_blocks = num_blocks,
             .eagle = eagle,
             .free_order = order});
  const auto steps = *rc::gen::inRange(1, 40);
  for (int step = 0; step < steps; ++step) {
    const int op = *rc::gen::inRange(0, 100);
    if (op < 40 || h.live().empty()) {
      h.Admit(testing::GenPrompt(h.history(), 4 * block + 8));
    } else if (op < 90) {
      auto it = h.live().begin();
      std::advance(it, *rc::gen::inRange<std::size_t>(0, h.live().size()));
      if (op < 70) {
        h.Advance(it->second);
      } else {
        h.Free(it->first);
      }
    } else {
      const Request probe({.id = RequestId{0}},
                          testing::GenPrompt(h.history(), 4 * block + 8),
                          *MakeKeyScheme({.hash_unit = unit}));
      h.CheckLookup(probe);
    }
    h.CheckState();
  }
}

}  // namespace
}  // namespace hkv
