// Property test for hybrid caches: random mixes of 2 to 5 groups (full
// attention, sliding window, chunked local, recurrent in both modes; block
// sizes multiples of a random hash unit; windows; rewinding groups) driven
// by random request streams that share prefixes: chunked prefills split as
// the scheduler would, decode steps, frees. Every lookup's hit must equal
// the brute-force HybridOracle's, and the cache's invariants (reference
// counts against block tables and copy pins, free queue, index) must hold
// after every step. Half of the caches publish their events, through the
// wire format, to a ClusterIndex: its answers must equal the cache's own
// lookup, hybrid hit and full attention's chain.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <numeric>

#include "gen.h"
#include "hkv/cluster_index.h"
#include "hybrid_oracle.h"
#include "test_util.h"

namespace hkv {
namespace {

GroupSpec GenGroup(std::uint32_t unit) {
  GroupSpec g;
  switch (*rc::gen::inRange(0, 5)) {
    case 0:
      g.kind = GroupKind::kFullAttention;
      break;
    case 1:
      g.kind = GroupKind::kSlidingWindow;
      break;
    case 2:
      g.kind = GroupKind::kChunkedLocal;
      break;
    case 3:
      g.kind = GroupKind::kRecurrent;
      break;
    default:
      g.kind = GroupKind::kScratch;
      g.scratch_blocks = *rc::gen::inRange(1u, 3u);
      break;
  }
  g.block_size = unit * *rc::gen::element(1u, 2u, 4u);
  if (g.kind == GroupKind::kChunkedLocal) {
    g.block_size = unit;
    g.chunk_size = unit * *rc::gen::inRange(1u, 4u);
  }
  if (g.kind == GroupKind::kSlidingWindow) {
    g.sliding_window = *rc::gen::inRange(1u, 3 * g.block_size + 1);
  }
  if (g.kind == GroupKind::kFullAttention && *rc::gen::inRange(0, 4) == 0) {
    g.output_window = *rc::gen::inRange(1u, 3 * g.block_size + 1);  // R-SWA
  }
  if (g.kind != GroupKind::kChunkedLocal && g.kind != GroupKind::kScratch &&
      *rc::gen::inRange(0, 4) == 0) {
    g.speculation = Speculation::kEagle;
  }
  if (g.kind == GroupKind::kRecurrent) {
    g.speculative_blocks = *rc::gen::inRange(0u, 3u);
    if (*rc::gen::inRange(0, 4) == 0) {
      g.recurrent_mode = RecurrentMode::kNone;
    } else if (*rc::gen::arbitrary<bool>()) {
      g.checkpoint_blocks = 1;  // the kernel exports the prompt's checkpoint
    }
  }
  // Under DCP only full attention is sharded.
  if (g.kind == GroupKind::kSlidingWindow ||
      g.kind == GroupKind::kChunkedLocal) {
    g.dcp_layout = DcpLayout::kReplicated;
  }
  return g;
}

CacheConfig GenConfig() {
  const auto unit = *rc::gen::element(1u, 2u, 4u);
  CacheConfig config{.num_blocks = *rc::gen::inRange(24u, 96u),
                     .keys = {.hash_unit = unit}};
  const auto n = *rc::gen::inRange(2, 6);
  for (int i = 0; i < n; ++i) config.groups.push_back(GenGroup(unit));
  config.dcp = *rc::gen::element(1u, 1u, 2u);
  std::uint32_t scheduler_block = 1;
  for (const GroupSpec& g : config.groups) {
    scheduler_block =
        std::lcm(scheduler_block,
                 static_cast<std::uint32_t>(TokensPerBlock(g, config.dcp)));
  }
  // States at every block boundary need the hash unit to be the scheduler
  // block; otherwise a recurrent group keeps states where chunks end.
  const bool all_mode = scheduler_block == unit && *rc::gen::arbitrary<bool>();
  for (GroupSpec& g : config.groups) {
    if (g.kind == GroupKind::kRecurrent && all_mode &&
        g.recurrent_mode == RecurrentMode::kAlign) {
      g.recurrent_mode = RecurrentMode::kAll;
      g.checkpoint_blocks = 0;
    }
  }
  // Half of the caches give each group a pool of its own.
  if (*rc::gen::arbitrary<bool>()) {
    config.num_blocks = 1;
    for (std::size_t g = 0; g < config.groups.size(); ++g) {
      config.group_pool_blocks.push_back(*rc::gen::inRange(6u, 30u));
      config.num_blocks += config.group_pool_blocks.back();
    }
    // Half of those rebalance, with slots of 1 to 8 bytes.
    if (*rc::gen::arbitrary<bool>()) {
      for (std::size_t g = 0; g < config.groups.size(); ++g) {
        config.pool_slot_bytes.push_back(*rc::gen::inRange(1u, 9u));
      }
    }
  }
  // Retention: dense, resend positions only, one per 1-3 scheduler blocks,
  // or placement.
  switch (*rc::gen::inRange(0, 4)) {
    case 1:
      config.retention_interval = 0;
      break;
    case 2:
      config.retention_interval = scheduler_block * *rc::gen::inRange(1u, 4u);
      break;
    case 3:
      config.retention = Retention::kPlacement;
      break;
    default:
      break;
  }
  return config;
}

struct Live {
  Request request;
  std::uint32_t computed;
};

class HybridHarness {
 public:
  explicit HybridHarness(const CacheConfig& config)
      : config_(config), cache_(config) {
    if (config.events == KvEventMode::kEnabled) {
      hashes_ = *rc::gen::element(HashEncoding::kBytes, HashEncoding::kLow64);
      index_ = *ClusterIndex::Create({.instance_config = config,
                                      .capacity_keys = 64 * config.num_blocks,
                                      .hashes = hashes_},
                                     1);
    }
    max_block_ = 0;
    for (const GroupSpec& g : config.groups) {
      max_block_ =
          std::max(max_block_,
                   static_cast<std::uint32_t>(TokensPerBlock(g, config.dcp)));
    }
  }

  void CheckLookup(const Request& r) {
    const CacheHit hit = cache_.Lookup(r);
    // Keys read on demand find the same hit.
    RC_ASSERT(testing::SameAsLookupKeys(cache_, r, hit));
    const testing::HybridOracle oracle(config_, cache_.pool());
    const std::uint32_t expected = oracle.Hit(r);
    if (hit.num_tokens != expected) {
      Describe();
      RC_LOG() << " tokens " << r.num_tokens() << " hit " << hit.num_tokens
               << " oracle " << expected << "\n";
    }
    RC_ASSERT(hit.num_tokens == expected);
    if (!index_) return;
    FeedIndex();
    const std::vector<InstanceMatch> match = index_->Match(r.tokens());
    RC_ASSERT(match.size() == 1u);
    if (match[0].hybrid_tokens != hit.num_tokens ||
        match[0].attention_tokens != hit.chain_tokens) {
      Describe();
      RC_LOG() << " index hit " << match[0].hybrid_tokens << " chain "
               << match[0].attention_tokens << "; cache hit " << hit.num_tokens
               << " chain " << hit.chain_tokens << "; prompt " << r.num_tokens()
               << "\n";
    }
    RC_ASSERT(match[0].hybrid_tokens == hit.num_tokens);
    RC_ASSERT(match[0].attention_tokens == hit.chain_tokens);
  }

  // The cache's events so far, as one batch on the wire.
  void FeedIndex() {
    const std::vector<KvEvent> events = cache_.TakeEvents();
    const std::string batch =
        EncodeEventBatch(events, 0.0, 0, cache_.key_scheme().function, hashes_);
    RC_ASSERT(index_->ApplyBatch(0, sequence_++, batch, BatchSource::kLive) ==
              BatchOutcome::kApplied);
  }

  void Admit() {
    const std::vector<TokenId> prompt =
        testing::GenPrompt(history_, 6 * max_block_);
    history_.push_back(prompt);
    Request r({.id = RequestId{next_id_++}}, prompt, cache_.key_scheme());
    CheckLookup(r);
    const CacheHit hit = cache_.Lookup(r);
    const auto budget = *rc::gen::inRange(1u, 4 * max_block_ + 1);
    std::uint32_t done = hit.num_tokens;
    bool first = true;
    while (done < r.num_tokens()) {
      const std::uint32_t want = std::min(budget, r.num_tokens() - done);
      std::uint32_t n = cache_.SplitPrefill(
          r, {.num_computed_tokens = done,
              .num_new_tokens = want,
              .max_num_scheduled_tokens = budget,
              .shared_prefix_boundary = hit.shared_prefix_boundary});
      if (n == 0) n = want;  // a block above the budget: schedule it anyway
      const std::optional<NewBlocks> placed =
          first ? cache_.Allocate(r, {.num_new_tokens = n, .hit = &hit})
                : cache_.Allocate(
                      r, {.num_computed_tokens = done, .num_new_tokens = n});
      if (!placed) break;
      first = false;
      EndStep(r, {.start = done, .end = done + n}, placed->state_exports);
      done += n;
    }
    if (first) return;
    live_.emplace(static_cast<std::uint64_t>(r.id()), Live{std::move(r), done});
  }

  void Decode(std::uint64_t key) {
    Live& live = live_.at(key);
    if (live.computed < live.request.num_tokens()) return;
    const auto n = *rc::gen::inRange(1u, 3u);
    live.request.AppendTokens(testing::GenTokens(n, n));
    const auto lookahead = *rc::gen::inRange(0u, 3u);
    const std::optional<NewBlocks> placed =
        cache_.Allocate(live.request, {.num_computed_tokens = live.computed,
                                       .num_new_tokens = n,
                                       .num_lookahead_tokens = lookahead});
    if (!placed) return;
    EndStep(live.request, {.start = live.computed, .end = live.computed + n},
            placed->state_exports);
    live.computed += n;
  }

  void Free(std::uint64_t key) {
    RC_LOG() << "free " << key << "\n";
    cache_.Free(live_.at(key).request.id());
    live_.erase(key);
  }

  void Probe() {
    const Request r({.id = RequestId{0}},
                    testing::GenPrompt(history_, 6 * max_block_),
                    cache_.key_scheme());
    CheckLookup(r);
  }

  std::map<std::uint64_t, Live>& live() { return live_; }
  const internal::CacheCore& cache() const { return cache_; }

 private:
  struct Chunk {
    std::uint32_t start;
    std::uint32_t end;
  };
  // One step: the copies run, the model computes tokens [start, end) of
  // `r` (recurrent kernels leave the states this records, and export those
  // the allocation asked for), the cache commits. Every key of a recurrent
  // block must name the state it holds.
  void EndStep(const Request& r, Chunk chunk,
               std::span<const StateExport> exports) {
    const auto [start, end] = chunk;
    RC_LOG() << "step: request " << static_cast<std::uint64_t>(r.id()) << " of "
             << r.num_tokens() << " tokens computes [" << start << ", " << end
             << ")\n";
    for (const BlockCopy& copy : cache_.TakeCopies()) {
      if (!IsRecurrent(copy.group)) continue;
      auto from = states_.find(ToIndex(copy.source));
      if (from == states_.end()) {
        states_.erase(ToIndex(copy.destination));
      } else {
        states_[ToIndex(copy.destination)] = from->second;
      }
    }
    for (std::uint32_t g = 0; g < config_.groups.size(); ++g) {
      if (IsRecurrent(GroupId{g})) RecordStates(r, GroupId{g}, start, end);
    }
    for (const StateExport& exported : exports) {
      RC_ASSERT(exported.position > start && exported.position < end);
      states_[ToIndex(exported.block)] = KeyAt(r, exported.position);
    }
    cache_.Commit(r, end);
    cache_.FinishStep();
    RC_ASSERT(cache_.CheckInvariants());
    CheckStates();
  }

  void Describe() const {
    RC_LOG() << "hash unit " << config_.keys.hash_unit << "; groups:";
    for (const GroupSpec& g : config_.groups) {
      RC_LOG() << " kind " << static_cast<int>(g.kind) << " b " << g.block_size
               << " W " << g.sliding_window << " out " << g.output_window
               << " C " << g.chunk_size << " eagle "
               << (g.speculation == Speculation::kEagle) << " mode "
               << static_cast<int>(g.recurrent_mode) << " spec "
               << g.speculative_blocks << " export " << g.checkpoint_blocks
               << ";";
    }
    RC_LOG() << " dcp " << config_.dcp << " retention "
             << (config_.retention_interval
                     ? static_cast<int>(*config_.retention_interval)
                     : -1)
             << (config_.retention == Retention::kPlacement ? " placement" : "")
             << "\n";
  }

  bool IsRecurrent(GroupId g) const {
    return config_.groups[ToIndex(g)].kind == GroupKind::kRecurrent;
  }

  static std::optional<BlockHash> KeyAt(const Request& r, std::uint32_t p) {
    const std::uint32_t unit = r.key_scheme().hash_unit;
    if (p == 0 || p % unit != 0 || p / unit > r.keys().size()) return {};
    return r.keys()[p / unit - 1];
  }

  void RecordStates(const Request& r, GroupId g, std::uint32_t start,
                    std::uint32_t end) {
    const std::span<const BlockId> table = cache_.block_table(r.id(), g);
    const std::uint32_t b = cache_.geometry(g).block_size;
    const auto record = [&](std::uint32_t index, std::uint32_t position) {
      if (index < table.size() && table[index] != kNullBlock) {
        states_[ToIndex(table[index])] = KeyAt(r, position);
      }
    };
    if (config_.groups[ToIndex(g)].recurrent_mode == RecurrentMode::kAll) {
      for (std::uint32_t p = (start / b + 1) * b; p <= end; p += b) {
        record(p / b - 1, p);
      }
    }
    // The chunk's end state lives in the block for its position.
    record((end + b - 1) / b - 1, end);
  }

  void CheckStates() {
    const internal::BlockPool& pool = cache_.pool();
    for (std::uint32_t i = 1; i < pool.num_blocks(); ++i) {
      for (const internal::PrefixKey& key : pool.KeysOf(BlockId{i})) {
        if (!IsRecurrent(key.group)) continue;
        auto it = states_.find(i);
        if (it == states_.end() || it->second != std::optional(key.hash)) {
          Describe();
          RC_LOG() << " block " << i << " keyed at "
                   << pool.primary_num_tokens(BlockId{i}) << " holds "
                   << (it == states_.end() ? "nothing recorded"
                                           : "another state")
                   << "\n";
        }
        RC_ASSERT(it != states_.end());
        RC_ASSERT(it->second == std::optional<BlockHash>(key.hash));
      }
    }
  }

  CacheConfig config_;
  internal::CacheCore cache_;
  std::uint32_t max_block_;
  std::map<std::uint64_t, Live> live_;
  // Recurrent blocks: the key of the position whose state each holds.
  std::map<std::uint32_t, std::optional<BlockHash>> states_;
  std::vector<std::vector<TokenId>> history_;
  std::uint64_t next_id_ = 1;
  std::unique_ptr<ClusterIndex> index_;  // with events enabled
  HashEncoding hashes_ = HashEncoding::kBytes;
  std::uint64_t sequence_ = 0;
};

RC_GTEST_PROP(HybridPropertyTest, LookupsMatchTheOracle, ()) {
  CacheConfig config = GenConfig();
  RC_PRE(config.Validate().has_value());
  if (*rc::gen::arbitrary<bool>()) config.events = KvEventMode::kEnabled;
  HybridHarness h(config);
  const auto steps = *rc::gen::inRange(1, 30);
  for (int step = 0; step < steps; ++step) {
    const int op = *rc::gen::inRange(0, 100);
    if (op < 40 || h.live().empty()) {
      h.Admit();
    } else if (op < 85) {
      auto it = h.live().begin();
      std::advance(it, *rc::gen::inRange<std::size_t>(0, h.live().size()));
      if (op < 65) {
        h.Decode(it->first);
      } else {
        h.Free(it->first);
      }
    } else {
      h.Probe();
    }
    RC_ASSERT(h.cache().CheckInvariants());
  }
}

}  // namespace
}  // namespace hkv
