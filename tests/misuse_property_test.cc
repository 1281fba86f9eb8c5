// Property test: random valid scheduler calls (admissions with their hits,
// prefill chunks, decodes with lookahead, commits, frees, step ends) on
// random hybrid caches, interleaved with random misuses of every call. Each
// misuse must throw UsageError and leave the cache's state snapshot as it
// was; the invariants hold after every call.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <limits>
#include <map>
#include <memory>

#include "cache/state_snapshot.h"
#include "gen.h"
#include "test_util.h"

namespace hkv {
namespace {

constexpr std::uint32_t kMax32 = std::numeric_limits<std::uint32_t>::max();

struct Live {
  Request request;
  std::uint32_t computed = 0;  // committed so far (hit included)
  std::uint32_t slots = 0;     // tokens its blocks cover
};

CacheConfig GenConfig() {
  const auto unit = *rc::gen::element(1u, 2u, 4u);
  const auto block = unit * *rc::gen::element(1u, 2u, 4u);
  CacheConfig config{.groups = {{.block_size = block}},
                     .num_blocks = *rc::gen::inRange(2u, 40u),
                     .keys = {.function = KeyFunction::kXxh3_128Cbor,
                              .hash_unit = unit,
                              .seed = "7"},
                     .events = KvEventMode::kEnabled,
                     .max_model_len = *rc::gen::inRange(8u, 80u)};
  switch (*rc::gen::inRange(0, 3)) {
    case 0:
      config.groups.push_back(
          {.kind = GroupKind::kRecurrent,
           .block_size = unit * *rc::gen::element(1u, 2u, 4u)});
      break;
    case 1:
      config.groups.push_back({.kind = GroupKind::kSlidingWindow,
                               .block_size = block,
                               .sliding_window = *rc::gen::inRange(1u, 12u)});
      break;
    default:
      break;
  }
  return config;
}

class Harness {
 public:
  explicit Harness(const CacheConfig& config)
      : config_(config), cache_(config), other_(config) {}

  std::map<std::uint64_t, Live>& live() { return live_; }

  void Admit() {
    const Request r = NewRequest();
    const CacheHit hit = cache_.Lookup(r);
    const std::uint32_t left = r.num_tokens() - hit.num_tokens;
    const std::uint32_t chunk = cache_.SplitPrefill(
        r, {.num_computed_tokens = hit.num_tokens,
            .num_new_tokens = *rc::gen::inRange(1u, left + 1),
            .shared_prefix_boundary = hit.shared_prefix_boundary});
    if (chunk == 0 ||
        !cache_.Allocate(r, {.num_new_tokens = chunk, .hit = &hit})) {
      return;
    }
    const std::uint32_t done = hit.num_tokens + chunk;
    cache_.Commit(r, done);
    live_.emplace(next_id_ - 1, Live{r, done, done});
  }

  // The next prefill chunk, or a decode of 1-2 tokens with lookahead.
  void Advance(Live& live) {
    Request& r = live.request;
    std::uint32_t num_new = 0;
    std::uint32_t lookahead = 0;
    if (live.computed < r.num_tokens()) {
      num_new =
          cache_.SplitPrefill(r, {.num_computed_tokens = live.computed,
                                  .num_new_tokens = *rc::gen::inRange(
                                      1u, r.num_tokens() - live.computed + 1)});
    } else if (r.num_tokens() + 2 <= config_.max_model_len) {
      num_new = *rc::gen::inRange(1u, 3u);
      r.AppendTokens(testing::GenTokens(num_new, num_new));
      lookahead = *rc::gen::inRange(0u, 3u);
    }
    if (num_new == 0 ||
        !cache_.Allocate(r, {.num_computed_tokens = live.computed,
                             .num_new_tokens = num_new,
                             .num_lookahead_tokens = lookahead})) {
      return;
    }
    live.slots = std::max(
        live.slots,
        std::min(live.computed + num_new + lookahead, config_.max_model_len));
    live.computed += num_new;
    cache_.Commit(r, live.computed);
  }

  void Free(std::uint64_t id) {
    cache_.Free(RequestId{id});
    live_.erase(id);
  }

  void EndStep() {
    cache_.TakeCopies();
    if (*rc::gen::arbitrary<bool>()) cache_.FinishStep();
    if (*rc::gen::arbitrary<bool>()) cache_.TakeEvents();
    if (*rc::gen::arbitrary<bool>()) cache_.TakeStats();
  }

  // One random misuse: it must be refused and change nothing.
  void Misuse() {
    const std::string before = internal::StateSnapshot(cache_);
    const int kind = *rc::gen::inRange(0, 12);
    bool refused = false;
    try {
      Misuse(kind);
    } catch (const UsageError&) {
      refused = true;
    }
    RC_ASSERT(refused);
    RC_ASSERT(internal::StateSnapshot(cache_) == before);
    RC_ASSERT(cache_.CheckInvariants());
  }

  void CheckInvariants() const { RC_ASSERT(cache_.CheckInvariants()); }
  // Misuses that offered a real hit (of another request or cache).
  int hits_misused() const { return hits_misused_; }

 private:
  Request NewRequest() {
    const std::uint32_t max_len = std::min(config_.max_model_len, 40u);
    std::vector<TokenId> prompt = testing::GenPrompt(history_, max_len);
    history_.push_back(prompt);
    return Request({.id = RequestId{next_id_++}}, prompt, cache_.key_scheme());
  }

  Live* AnyLive() {
    if (live_.empty()) return nullptr;
    auto it = live_.begin();
    std::advance(it, *rc::gen::inRange<std::size_t>(0, live_.size()));
    return &it->second;
  }

  void Misuse(int kind) {
    Live* live = AnyLive();
    const Request fresh = NewRequest();
    const std::uint32_t max_len = config_.max_model_len;
    switch (kind) {
      case 0:  // free of a request holding nothing
        cache_.Free(fresh.id());
        break;
      case 1:  // commit of a request holding nothing
        cache_.Commit(fresh, fresh.num_tokens());
        break;
      case 2:  // lookahead beyond max_model_len
        (void)cache_.Allocate(fresh, {.num_new_tokens = 1,
                                      .num_lookahead_tokens = *rc::gen::inRange(
                                          max_len + 1, kMax32)});
        break;
      case 3:  // token counts whose sum exceeds max_model_len (or 2^32)
        (void)cache_.Allocate(
            fresh, {.num_external_computed_tokens =
                        *rc::gen::element(0u, max_len, kMax32 - 3),
                    .num_new_tokens = *rc::gen::inRange(max_len + 1, kMax32)});
        break;
      case 4:  // computed tokens a new request cannot have
        (void)cache_.Allocate(fresh,
                              {.num_computed_tokens = 1, .num_new_tokens = 1});
        break;
      case 5:  // another request's hit
        MisuseHit(fresh, cache_.Lookup(NewRequest()));
        break;
      case 6:  // another cache's hit, on the same prompt
        MisuseHit(fresh, OtherCachesHit(fresh));
        break;
      case 7:  // nothing to allocate
        (void)cache_.Allocate(fresh, {});
        break;
      case 8:  // a prefill chunk past the request
        (void)cache_.SplitPrefill(
            fresh, {.num_computed_tokens = fresh.num_tokens() + 1});
        break;
      default:
        MisuseLive(live, kind);
        cache_.Free(fresh.id());  // a request holding nothing, if none live
    }
  }

  // Caches `r`'s prompt in the other cache and looks it up there.
  CacheHit OtherCachesHit(const Request& r) {
    const Request twin({.id = RequestId{0}}, r.tokens(), other_.key_scheme());
    if (other_.Allocate(twin, {.num_new_tokens = twin.num_tokens()})) {
      other_.Commit(twin, twin.num_tokens());
      other_.Free(twin.id());
    }
    return other_.Lookup(r);
  }

  void MisuseHit(const Request& r, const CacheHit& hit) {
    if (hit.num_tokens == 0) {  // no hit to adopt: any foreign origin
      cache_.Free(r.id());
      return;
    }
    ++hits_misused_;
    (void)cache_.Allocate(r, {.num_new_tokens = 1, .hit = &hit});
  }

  void MisuseLive(Live* live, int kind) {
    if (live == nullptr) return;
    const Request& r = live->request;
    switch (kind) {
      case 9:  // a commit below the last one
        if (live->computed > 0) {
          cache_.Commit(r, *rc::gen::inRange(0u, live->computed));
        }
        break;
      case 10:  // computed beyond the blocks, or in-flight beyond computed
        (void)cache_.Allocate(
            r, {.num_computed_tokens = live->slots + 1, .num_new_tokens = 1});
        break;
      default:  // a running request adopting a hit
        const CacheHit hit = cache_.Lookup(r);
        if (hit.num_tokens == 0) break;
        (void)cache_.Allocate(r, {.num_computed_tokens = live->computed,
                                  .num_new_tokens = 1,
                                  .hit = &hit});
    }
  }

  CacheConfig config_;
  internal::CacheCore cache_;
  internal::CacheCore other_;  // a cache whose hits this one must refuse
  std::map<std::uint64_t, Live> live_;
  std::vector<std::vector<TokenId>> history_;
  std::uint64_t next_id_ = 1;
  int hits_misused_ = 0;
};

RC_GTEST_PROP(MisusePropertyTest, RefusedCallsChangeNothing, ()) {
  Harness h(GenConfig());
  const auto steps = *rc::gen::inRange(1, 50);
  for (int step = 0; step < steps; ++step) {
    const int op = *rc::gen::inRange(0, 100);
    if (op < 30) {
      h.Misuse();
      continue;
    }
    if (op < 55 || h.live().empty()) {
      h.Admit();
    } else if (op < 80) {
      auto it = h.live().begin();
      std::advance(it, *rc::gen::inRange<std::size_t>(0, h.live().size()));
      h.Advance(it->second);
    } else if (op < 90) {
      h.Free(h.live().begin()->first);
    } else {
      h.EndStep();
    }
    h.CheckInvariants();
  }
  RC_CLASSIFY(h.hits_misused() > 0, "a real hit misused");
  RC_CLASSIFY(!h.live().empty(), "requests live at the end");
}

}  // namespace
}  // namespace hkv
