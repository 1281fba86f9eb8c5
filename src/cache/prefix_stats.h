// Prefix-cache counters recorded when a request is admitted: tokens asked,
// tokens reused, and what each cause of a short hit cost.
//
// Thread-safety: pure function over the caller's counters.
#pragma once

#include <cstdint>

#include "hkv/cache_hit.h"
#include "hkv/cache_stats.h"

namespace hkv::internal {

// Counts an admitted request of `num_tokens` tokens and its hit (nullable:
// none).
void RecordAdmission(std::uint32_t num_tokens, const CacheHit* hit,
                     PrefixCacheStats& stats);

}  // namespace hkv::internal
