// The cache's counters: prefix-cache hits and misses by cause, recorded at
// admission, and the pool's evictions.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>

namespace hkv {

// Admitted requests whose hit one cause kept below the full-attention
// chain, and the tokens it cost them.
struct MissCounters {
  std::uint64_t requests = 0;
  std::uint64_t tokens = 0;
};

// Prefix-cache counters, recorded at admission (a request's first successful
// allocation after a lookup).
struct PrefixCacheStats {
  std::uint64_t requests = 0;
  std::uint64_t queries = 0;  // tokens of admitted requests
  std::uint64_t hits = 0;     // of which reused from the cache
  bool reset = false;         // a ResetPrefixCache succeeded since last taken
  MissCounters speculative_rewind = {};
  MissCounters no_checkpoint = {};
  MissCounters window_not_covered = {};
  MissCounters evicted = {};
};

struct PoolCounters {
  // Cached blocks reused for new data, or parked by a rebalancing pool.
  std::uint64_t evicted_blocks = 0;
  // Blocks rebalancing pools parked (gave to another pool).
  std::uint64_t parked_blocks = 0;
};

}  // namespace hkv
