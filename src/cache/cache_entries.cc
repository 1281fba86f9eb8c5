// What the cache's blocks hold: entries along a request's prefix, for an
// offload connector (hkv/tier_connector.h), and single blocks, for an
// engine's views of its block pool.
#include <string>

#include "cache/cache_core.h"
#include "check.h"
#include "groups/kind_traits.h"

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

std::optional<std::pair<GroupId, BlockHash>> CacheCore::BlockKey(
    BlockId id) const {
  HKV_REQUIRE(ToIndex(id) < pool_.num_blocks(), "block id out of range");
  if (pool_.primary_num_tokens(id) == 0) return std::nullopt;
  const PrefixKey& key = pool_.primary_key(id);
  return std::pair{key.group, key.hash};
}

std::optional<BlockId> CacheCore::FindCached(GroupId group,
                                             const BlockHash& key) const {
  HKV_REQUIRE(ToIndex(group) < groups_.size(), "group id out of range");
  return pool_.FindCached({.hash = key, .group = group});
}

void CacheCore::EvictBlocks(std::span<const BlockId> ids) {
  for (BlockId id : ids) {
    HKV_REQUIRE(ToIndex(id) < pool_.num_blocks(),
                "block id " + std::to_string(ToIndex(id)) +
                    " out of range: the pool has " +
                    std::to_string(pool_.num_blocks()) + " blocks");
  }
  for (BlockId id : ids) {
    if (id != kNullBlock) pool_.EvictKeys(id);
  }
}

std::uint32_t CacheCore::NumCommonPrefixBlocks(RequestId id,
                                               GroupId group) const {
  HKV_REQUIRE(ToIndex(group) < groups_.size(), "group id out of range");
  const auto it = requests_.find(id);
  HKV_REQUIRE(it != requests_.end(), "the request holds no blocks");
  if (!TraitsOf(config_.groups[ToIndex(group)].kind).reads_whole_prefix) {
    return 0;  // a window or a state: its leading slots are null
  }
  return pool_.NumLeadingHeldBy(it->second.tables[ToIndex(group)].blocks,
                                static_cast<std::uint32_t>(requests_.size()));
}

void CacheCore::RemoveSkippedBlocks(RequestId id,
                                    std::uint32_t num_computed_tokens) {
  const auto it = requests_.find(id);
  if (it == requests_.end()) return;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    groups_[g]->RemoveSkippedBlocks(it->second.tables[g], num_computed_tokens);
  }
}

}  // namespace hkv::internal
