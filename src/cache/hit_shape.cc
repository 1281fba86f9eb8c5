#include "cache/hit_shape.h"

#include <algorithm>

#include "check.h"

namespace hkv::internal {

void CheckHitShape(const CacheHit& hit, const HitContext& context) {
  const CacheConfig& config = context.config;
  HKV_REQUIRE(hit.num_tokens < context.num_request_tokens,
              "a hit covers less than the request's tokens");
  HKV_REQUIRE(hit.blocks.size() == config.groups.size(),
              "the hit has one block list per group");
  for (std::size_t g = 0; g < config.groups.size(); ++g) {
    const std::uint32_t b = context.geometry.groups[g].block_size;
    const std::size_t covering = IsPrefixCacheable(config.groups[g])
                                     ? (std::size_t{hit.num_tokens} + b - 1) / b
                                     : 0;  // a group that caches nothing
    HKV_REQUIRE(hit.blocks[g].size() == covering,
                "each group's hit blocks cover the hit");
    // Four running maxima in registers: no branch per id, and they overlap.
    const std::vector<BlockId>& ids = hit.blocks[g];
    std::uint32_t m0 = 0, m1 = 0, m2 = 0, m3 = 0;
    std::size_t i = 0;
    for (; i + 4 <= ids.size(); i += 4) {
      m0 = std::max(m0, ToIndex(ids[i]));
      m1 = std::max(m1, ToIndex(ids[i + 1]));
      m2 = std::max(m2, ToIndex(ids[i + 2]));
      m3 = std::max(m3, ToIndex(ids[i + 3]));
    }
    for (; i < ids.size(); ++i) m0 = std::max(m0, ToIndex(ids[i]));
    HKV_REQUIRE(std::max({m0, m1, m2, m3}) < context.num_block_ids,
                "hit block id out of range");
  }
}

CacheHit TruncateHit(const CacheHit& hit, std::uint32_t num_tokens,
                     const CacheGeometry& geometry) {
  HKV_REQUIRE(num_tokens <= hit.num_tokens,
              "a hit can only be cut to fewer tokens");
  HKV_REQUIRE(num_tokens % geometry.facts.scheduler_block == 0,
              "a hit is cut to a multiple of the scheduler block");
  HKV_REQUIRE(hit.blocks.size() == geometry.groups.size(),
              "the hit has one block list per group");
  CacheHit cut = hit;
  cut.num_tokens = num_tokens;
  for (std::size_t g = 0; g < cut.blocks.size(); ++g) {
    const std::uint32_t b = geometry.groups[g].block_size;
    cut.blocks[g].resize(std::min<std::size_t>(
        cut.blocks[g].size(), (std::size_t{num_tokens} + b - 1) / b));
  }
  return cut;
}

}  // namespace hkv::internal
