// Trace replay: feeds a Mooncake trace through one CacheManager, request by
// request, and reports how many prompt tokens the prefix cache would have
// saved.
//
// Each request in trace order, with RequestId = its index and the prompt
// MooncakeTokens(request) of N tokens, runs alone through a cache of one
// full-attention group:
//   hit = Lookup(r)                                  // timed
//   Allocate(r, {.num_new_tokens = N - hit.num_tokens, .hit = &hit})
//   Commit(r, N); TakeCopies(); FinishStep(); Free(r.id())
// so it sees every block cached by earlier requests and not yet evicted.
// Hits are multiples of the hash unit and at most N - 1 tokens (Lookup's
// rules).
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

#include "hkv/keys.h"
#include "hkv/mooncake_trace.h"
#include "hkv/result.h"

namespace hkv {

struct ReplayOptions {
  std::uint32_t block_size = 16;  // tokens per KV-cache block
  std::uint32_t hash_unit = 0;    // tokens per prefix key; 0: the block size
  KeyFunction key_function = KeyFunction::kSha256Cbor;
  // Pool size in tokens, rounded down to whole blocks. Unset: one block per
  // block of every request in the trace, so nothing is ever evicted.
  std::optional<std::uint64_t> capacity_tokens = std::nullopt;
  // Called with (requests done, total) after every 1000 requests and once at
  // the end. Empty: no calls.
  std::function<void(std::size_t done, std::size_t total)> progress = {};
};

struct ReplayResult {
  std::uint64_t requests = 0;        // every request of the trace
  std::uint64_t prompt_tokens = 0;   // sum of input lengths, rejected included
  std::uint64_t hit_tokens = 0;      // prompt tokens served from the cache
  std::uint64_t evicted_blocks = 0;  // cached blocks reused for new data
  // Requests needing more blocks than the whole pool; never looked up or
  // allocated, and counted as all-miss.
  std::uint64_t rejected_requests = 0;
  // Nearest-rank percentiles of the wall time of each Lookup (rejected
  // requests have none); 0 when there were no lookups.
  std::uint64_t lookup_ns_median = 0;
  std::uint64_t lookup_ns_p99 = 0;
};

// Replays `trace` as described above.
// Returns kInvalidArgument, naming the numbers, for a block size of 0, a hash
// unit that does not divide the block size, a capacity below one block, or a
// request failing ValidateTraceRequest; kInfeasible when the pool would need
// 2^32 blocks or more.
// O(total prompt tokens) time (keying dominates) and O(pool blocks) memory.
[[nodiscard]] Result<ReplayResult> Replay(std::span<const TraceRequest> trace,
                                          const ReplayOptions& options);

}  // namespace hkv
