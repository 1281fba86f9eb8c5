// Trace replay: feeds a Mooncake trace through one CacheManager, request by
// request, and reports how many prompt tokens the prefix cache would have
// saved.
//
// The cache has the groups of ReplayOptions (default: one full-attention
// group). Each request in trace order, with RequestId = its index and the
// prompt MooncakeTokens(request) of N tokens, runs alone, its prompt
// computed in chunks of at most max_num_batched_tokens as an engine would:
//   hit = Lookup(r)                                  // timed
//   done = hit.num_tokens
//   while done < N:
//     n = SplitPrefill(r, {done, min(budget, N - done), budget,
//                          hit.shared_prefix_boundary})
//     Allocate(r, first ? {.num_new_tokens = n, .hit = &hit}
//                       : {.num_computed_tokens = done, .num_new_tokens = n})
//     Commit(r, done + n); TakeCopies(); FinishStep(); done += n
//   Free(r.id())
// so it sees every block cached by earlier requests and not yet evicted.
// Hits follow Lookup's rules: multiples of the alignment, at most N - 1
// tokens, one alignment step lower when an attention group feeds a draft
// model (EAGLE rewind).
//
// Thread-compatible: Replay owns its cache; calls on different traces may run
// in parallel. The library never prints; progress goes to the callback.
//
// Example:
//   Result<ReplayResult> r = Replay(*trace, {.block_size = 16});
//   if (r) std::cout << r->hit_tokens << " of " << r->prompt_tokens << "\n";
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hkv/cache_manager.h"
#include "hkv/keys.h"
#include "hkv/mooncake_trace.h"
#include "hkv/result.h"

namespace hkv {

struct ReplayOptions {
  // Tokens per KV-cache block of the default group; unused with `groups`.
  std::uint32_t block_size = 16;
  // Tokens per prefix key; 0: the block size, or with `groups` the smallest
  // group block (DCP-scaled for sharded attention groups).
  std::uint32_t hash_unit = 0;
  KeyFunction key_function = KeyFunction::kSha256Cbor;
  // Pool size in tokens: each group gets capacity_tokens / its block blocks.
  // Unset: per group, one block per block of every request in the trace
  // (plus its speculative blocks), so nothing is ever evicted.
  std::optional<std::uint64_t> capacity_tokens = std::nullopt;
  // The cache groups; empty: one full-attention group of block_size.
  std::vector<GroupSpec> groups = {};
  std::uint32_t dcp = 1;  // decode-context-parallel width
  // The scheduler's token budget per step: the largest prefill chunk.
  std::uint32_t max_num_batched_tokens = 8192;
  // CacheConfig::retention_interval: unset dense, 0 resend positions only.
  std::optional<std::uint32_t> retention_interval = std::nullopt;
  Retention retention = Retention::kReference;  // CacheConfig::retention
  // CacheConfig::free_order.
  FreeOrder free_order = FreeOrder::kPrependUncached;
  // Called with (requests done, total) after every 1000 requests and once at
  // the end. Empty: no calls.
  std::function<void(std::size_t done, std::size_t total)> progress = {};
};

// What one group holds at the end of a replay.
struct GroupResidency {
  std::string kind;                 // as in the group-list syntax: "full", ...
  std::uint32_t block_size = 0;     // tokens per block, DCP-scaled
  std::uint64_t cached_blocks = 0;  // blocks holding a prefix key
};

struct ReplayResult {
  std::uint64_t requests = 0;        // every request of the trace
  std::uint64_t prompt_tokens = 0;   // sum of input lengths, rejected included
  std::uint64_t hit_tokens = 0;      // prompt tokens served from the cache
  std::uint64_t evicted_blocks = 0;  // cached blocks reused for new data
  // Requests the whole pool cannot hold, counted as all-miss: those whose
  // full-attention blocks alone exceed it are never looked up; the others
  // are rejected when a chunk fails to allocate in the otherwise idle pool,
  // and freed (the chunks they committed stay cached).
  std::uint64_t rejected_requests = 0;
  // Nearest-rank percentiles of the wall time of each Lookup (rejected
  // requests have none); 0 when there were no lookups.
  std::uint64_t lookup_ns_median = 0;
  std::uint64_t lookup_ns_p99 = 0;
  std::vector<GroupResidency> groups = {};  // by group id
  // Hits below the full-attention chain, by cause (requests, tokens lost).
  MissCounters speculative_rewind = {};
  MissCounters no_checkpoint = {};
  MissCounters window_not_covered = {};
  MissCounters evicted = {};
};

// The checks of Replay's options that need no trace (all but the
// kInfeasible one): a caller reading a large trace can refuse its flags
// first.
[[nodiscard]] Result<void> CheckReplayOptions(const ReplayOptions& options);

// Replays `trace` as described above.
// Returns kInvalidArgument, naming the numbers, for a block size of 0, a hash
// unit that does not divide the block size, a capacity below the largest
// block or making a pool (capacity_tokens per block) beyond kMaxPoolBlocks,
// a max_num_batched_tokens of 0, groups that make an invalid CacheConfig,
// or a request failing ValidateTraceRequest; kInfeasible when keeping every
// block of the trace (no capacity_tokens) would exceed kMaxPoolBlocks.
// Both before anything is allocated for the pool.
// O(total prompt tokens) time (keying dominates) and O(pool blocks) memory.
[[nodiscard]] Result<ReplayResult> Replay(std::span<const TraceRequest> trace,
                                          const ReplayOptions& options);

}  // namespace hkv
