// The shape a CacheHit must have to be adopted, and cutting one short.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "cache/cache_geometry.h"
#include "hkv/cache_config.h"
#include "hkv/cache_hit.h"

namespace hkv::internal {

struct HitContext {
  std::uint32_t num_request_tokens = 0;
  std::uint32_t num_block_ids = 0;  // the pool's, parked ones included
  const CacheConfig& config;
  const CacheGeometry& geometry;
};

// REQUIRES (else UsageError): the hit is shorter than the request, has one
// block list per group, each covering the hit (none for groups that cache
// nothing), and names blocks of the pool.
void CheckHitShape(const CacheHit& hit, const HitContext& context);

// The hit cut to `num_tokens`, each group keeping the blocks that cover
// them. REQUIRES: num_tokens <= hit.num_tokens, a multiple of the scheduler
// block; one block list per group.
CacheHit TruncateHit(const CacheHit& hit, std::uint32_t num_tokens,
                     const CacheGeometry& geometry);

}  // namespace hkv::internal
