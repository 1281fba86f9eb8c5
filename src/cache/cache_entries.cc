// What a request's blocks hold in the prefix cache, for an offload
// connector (hkv/tier_connector.h).
#include "cache/cache_core.h"
#include "check.h"

namespace hkv::internal {

bool CacheCore::HoldsEntry(GroupId group, const BlockHash& key) const {
  HKV_REQUIRE(ToIndex(group) < groups_.size(), "group id out of range");
  return pool_.FindCached({.hash = key, .group = group}).has_value();
}

std::vector<CachedEntry> CacheCore::CachedEntries(
    const Request& request) const {
  HKV_REQUIRE(request.key_scheme() == scheme_,
              "the request is keyed with another scheme");
  const std::uint32_t unit = scheme_.hash_unit;
  const std::span<const BlockHash> keys = request.keys();
  std::vector<CachedEntry> entries;
  for (std::uint32_t g = 0; g < groups_.size(); ++g) {
    const GroupId group{g};
    for (std::size_t u = 0; u < keys.size(); ++u) {
      const std::optional<BlockId> block =
          pool_.FindCached({.hash = keys[u], .group = group});
      if (!block) continue;
      entries.push_back({.group = group,
                         .block = *block,
                         .end_tokens = static_cast<std::uint32_t>(
                             (u + 1) * std::size_t{unit})});
    }
  }
  return entries;
}

}  // namespace hkv::internal
