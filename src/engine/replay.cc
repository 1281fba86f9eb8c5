#include "hkv/replay.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "engine/sim_util.h"
#include "groups/kind_traits.h"
#include "hkv/cache_manager.h"
#include "hkv/group_list.h"
#include "hkv/limits.h"
#include "hkv/request.h"

namespace hkv {
namespace {

constexpr std::size_t kProgressInterval = 1000;

using internal::CeilDiv;
using internal::NanosecondsSince;
using internal::NearestRank;

// The cache's groups: the options' list, or one full-attention group.
std::vector<GroupSpec> GroupsOf(const ReplayOptions& options) {
  if (!options.groups.empty()) return options.groups;
  return {{.block_size = options.block_size}};
}

std::uint32_t ScaledBlock(const GroupSpec& spec, std::uint32_t dcp) {
  return static_cast<std::uint32_t>(TokensPerBlock(spec, dcp));
}

std::uint32_t EffectiveHashUnit(const ReplayOptions& options) {
  if (options.hash_unit != 0) return options.hash_unit;
  if (options.groups.empty()) return options.block_size;
  std::uint32_t unit = std::numeric_limits<std::uint32_t>::max();
  for (const GroupSpec& spec : options.groups) {
    unit = std::min(unit, ScaledBlock(spec, options.dcp));
  }
  return unit;
}

Result<void> Invalid(std::string message) {
  return Fail(ErrorCode::kInvalidArgument, std::move(message));
}

// The cache config with a placeholder pool size, for validation and, once
// the pool is sized, for the cache.
CacheConfig ConfigOf(const ReplayOptions& options) {
  return {.groups = GroupsOf(options),
          .num_blocks = 2,
          .keys = {.function = options.key_function,
                   .hash_unit = EffectiveHashUnit(options)},
          .dcp = options.dcp,
          .retention_interval = options.retention_interval,
          .retention = options.retention,
          .free_order = options.free_order};
}

// The old single-group checks keep their messages; group lists are judged
// by CacheConfig::Validate.

Result<void> CheckTrace(std::span<const TraceRequest> trace) {
  for (std::size_t i = 0; i < trace.size(); ++i) {
    if (Result<void> valid = ValidateTraceRequest(trace[i]); !valid) {
      return Invalid("trace request " + std::to_string(i) + ": " +
                     valid.error().message);
    }
  }
  return {};
}

// Usable blocks (the null block excluded): per group, the capacity in whole
// blocks, or enough for every request of the trace to keep all its blocks
// (and speculative blocks) cached. At least one, so that an empty trace
// still makes a valid cache.
Result<std::uint32_t> UsableBlocks(std::span<const TraceRequest> trace,
                                   const ReplayOptions& options) {
  std::uint64_t usable = 0;
  for (const GroupSpec& spec : GroupsOf(options)) {
    const std::uint32_t b = ScaledBlock(spec, options.dcp);
    if (options.capacity_tokens) {
      usable += *options.capacity_tokens / b;
      continue;
    }
    for (const TraceRequest& request : trace) {
      usable += CeilDiv(request.input_length, b) + spec.speculative_blocks;
    }
  }
  usable = std::max<std::uint64_t>(usable, 1);
  if (usable >= kMaxPoolBlocks) {
    const std::string size =
        std::to_string(usable) +
        " blocks plus the null block, above the limit of " +
        std::to_string(kMaxPoolBlocks) + " blocks per pool";
    if (options.capacity_tokens) {
      return Fail(ErrorCode::kInvalidArgument,
                  "capacity_tokens " +
                      std::to_string(*options.capacity_tokens) +
                      " makes a pool of " + size);
    }
    return Fail(ErrorCode::kInfeasible,
                "keeping every block of the trace (no capacity_tokens) "
                "takes " +
                    size);
  }
  return static_cast<std::uint32_t>(usable);
}

struct ReplayerSetup {
  std::vector<GroupSpec> groups;
  std::uint32_t dcp = 1;
  std::uint32_t usable_blocks = 0;
  std::uint32_t max_num_batched_tokens = 0;
};

// The cache and the counters of one replay.
class Replayer {
 public:
  Replayer(CacheManager cache, ReplayerSetup setup)
      : cache_(std::move(cache)), setup_(std::move(setup)) {}

  void Run(std::size_t index, const TraceRequest& request);
  ReplayResult Finish();

 private:
  // Blocks the full-attention groups alone hold for `n` tokens, which no
  // chunking or eviction reduces.
  std::uint64_t FullAttentionBlocks(std::uint32_t n) const;
  // Computes the prompt after `hit` in chunks, then frees the request.
  // Returns false, holding nothing, when a chunk does not fit the pool.
  bool Prefill(const Request& r, const CacheHit& hit);

  CacheManager cache_;
  ReplayerSetup setup_;
  std::vector<std::uint64_t> lookup_ns_;
  ReplayResult result_;
};

std::uint64_t Replayer::FullAttentionBlocks(std::uint32_t n) const {
  std::uint64_t blocks = 0;
  for (const GroupSpec& spec : setup_.groups) {
    if (internal::TraitsOf(spec.kind).reads_whole_prefix) {
      blocks += CeilDiv(n, ScaledBlock(spec, setup_.dcp));
    }
  }
  return blocks;
}

void Replayer::Run(std::size_t index, const TraceRequest& request) {
  const std::uint32_t n = request.input_length;
  ++result_.requests;
  result_.prompt_tokens += n;
  if (FullAttentionBlocks(n) > setup_.usable_blocks) {
    ++result_.rejected_requests;
    return;
  }
  const std::vector<TokenId> tokens = MooncakeTokens(request);
  const Request r({.id = RequestId{index}}, tokens, cache_.key_scheme());
  const auto start = std::chrono::steady_clock::now();
  const CacheHit hit = cache_.Lookup(r);
  const std::uint64_t lookup_ns = NanosecondsSince(start);
  // Every earlier request has been freed, so the whole pool is free or
  // evictable: a chunk that does not fit now never will.
  if (!Prefill(r, hit)) {
    ++result_.rejected_requests;
    return;
  }
  lookup_ns_.push_back(lookup_ns);
  result_.hit_tokens += hit.num_tokens;
}

bool Replayer::Prefill(const Request& r, const CacheHit& hit) {
  const std::uint32_t n = r.num_tokens();
  const std::uint32_t budget = setup_.max_num_batched_tokens;
  std::uint32_t done = hit.num_tokens;
  for (bool first = true; done < n; first = false) {
    std::uint32_t step = internal::NextPrefillChunk(
        cache_, r,
        {.num_computed_tokens = done,
         .budget_left = budget,
         .max_num_batched_tokens = budget,
         .shared_prefix_boundary = hit.shared_prefix_boundary});
    // SplitPrefill answers 0 when the chunk cannot reach a block boundary
    // yet the budget holds a block; a full budget always reaches one, so
    // this should not happen, but a 0 would loop here forever: schedule the
    // budget as is instead.
    if (step == 0) step = std::min(budget, n - done);
    const AllocationRequest args =
        first ? AllocationRequest{.num_new_tokens = step, .hit = &hit}
              : AllocationRequest{.num_computed_tokens = done,
                                  .num_new_tokens = step};
    if (!cache_.Allocate(r, args)) {
      if (!first) cache_.Free(r.id());
      return false;
    }
    cache_.Commit(r, done + step);
    cache_.TakeCopies();
    cache_.FinishStep();
    done += step;
  }
  cache_.Free(r.id());
  return true;
}

ReplayResult Replayer::Finish() {
  std::sort(lookup_ns_.begin(), lookup_ns_.end());
  result_.lookup_ns_median = NearestRank(lookup_ns_, 50);
  result_.lookup_ns_p99 = NearestRank(lookup_ns_, 99);
  result_.evicted_blocks = cache_.counters().evicted_blocks;
  const PrefixCacheStats stats = cache_.TakeStats();
  result_.speculative_rewind = stats.speculative_rewind;
  result_.no_checkpoint = stats.no_checkpoint;
  result_.window_not_covered = stats.window_not_covered;
  result_.evicted = stats.evicted;
  const std::vector<std::uint64_t> cached = cache_.CachedBlocksPerGroup();
  for (std::size_t g = 0; g < setup_.groups.size(); ++g) {
    const GroupSpec& spec = setup_.groups[g];
    result_.groups.push_back({.kind = std::string(GroupKindName(spec.kind)),
                              .block_size = ScaledBlock(spec, setup_.dcp),
                              .cached_blocks = cached[g]});
  }
  return result_;
}

}  // namespace

Result<void> CheckReplayOptions(const ReplayOptions& options) {
  const std::uint32_t b = options.block_size;
  const std::uint32_t unit = EffectiveHashUnit(options);
  if (options.groups.empty() && b == 0) {
    return Invalid("block size must be at least 1 token, got 0");
  }
  if (options.groups.empty() && unit != 0 && b % unit != 0) {
    return Invalid("hash unit " + std::to_string(unit) +
                   " does not divide block size " + std::to_string(b));
  }
  if (options.max_num_batched_tokens == 0) {
    return Invalid("max_num_batched_tokens must be at least 1 token, got 0");
  }
  const CacheConfig config = ConfigOf(options);
  if (Result<void> valid = config.Validate(); !valid) return valid;
  std::uint32_t largest = 0;
  for (const GroupSpec& spec : config.groups) {
    largest = std::max(largest, ScaledBlock(spec, options.dcp));
  }
  if (options.capacity_tokens && *options.capacity_tokens < largest) {
    return Invalid("capacity of " + std::to_string(*options.capacity_tokens) +
                   " tokens is below one block of " + std::to_string(largest) +
                   " tokens");
  }
  return {};
}

Result<ReplayResult> Replay(std::span<const TraceRequest> trace,
                            const ReplayOptions& options) {
  if (Result<void> valid = CheckReplayOptions(options); !valid) {
    return tl::unexpected(valid.error());
  }
  if (Result<void> valid = CheckTrace(trace); !valid) {
    return tl::unexpected(valid.error());
  }
  Result<std::uint32_t> usable = UsableBlocks(trace, options);
  if (!usable) return tl::unexpected(usable.error());
  CacheConfig config = ConfigOf(options);
  config.num_blocks = *usable + 1;
  Result<CacheManager> cache = CacheManager::Create(config);
  if (!cache) return tl::unexpected(cache.error());
  Replayer replayer(std::move(*cache),
                    {.groups = std::move(config.groups),
                     .dcp = options.dcp,
                     .usable_blocks = *usable,
                     .max_num_batched_tokens = options.max_num_batched_tokens});
  for (std::size_t i = 0; i < trace.size(); ++i) {
    replayer.Run(i, trace[i]);
    const bool report =
        (i + 1) % kProgressInterval == 0 || i + 1 == trace.size();
    if (options.progress && report) options.progress(i + 1, trace.size());
  }
  return replayer.Finish();
}

}  // namespace hkv
