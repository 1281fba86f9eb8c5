#include "cache/residency_mirror.h"

#include "check.h"
#include "groups/kind_traits.h"
#include "hkv/limits.h"

namespace hkv::internal {
namespace {

CacheGeometry MirrorGeometry(const CacheConfig& config,
                             std::uint32_t capacity) {
  Result<void> valid = config.Validate();
  HKV_REQUIRE(valid.has_value(), valid ? "" : valid.error().message);
  HKV_REQUIRE(capacity >= 1 && capacity < kMaxPoolBlocks,
              "a residency mirror holds 1 to 2^24 - 1 keys");
  CacheConfig one_pool = config;  // every group's keys in one LRU
  one_pool.group_pool_blocks.clear();
  one_pool.pool_slot_bytes.clear();
  return ResolveGeometry(one_pool);
}

}  // namespace

ResidencyMirror::ResidencyMirror(const CacheConfig& config,
                                 std::uint32_t capacity)
    : geometry_(MirrorGeometry(config, capacity)),
      pool_(capacity + 1, Caching::kEnabled),
      keys_per_group_(config.groups.size(), 0) {
  for (std::size_t i = 0; i < config.groups.size(); ++i) {
    managers_.push_back(TraitsOf(config.groups[i].kind)
                            .make(pool_, geometry_.facts, geometry_.groups[i],
                                  config.groups[i]));
  }
}

void ResidencyMirror::Store(const PrefixKey& key) {
  HKV_DCHECK(ToIndex(key.group) < managers_.size());
  const BlockId next = pool_.NthFree(0, 0);
  if (pool_.primary_num_tokens(next) > 0) {
    --keys_per_group_[ToIndex(pool_.primary_key(next).group)];
  }
  const BlockId block = pool_.AllocateOne();
  pool_.CacheFull(block, key, 1);
  pool_.Free(std::span<const BlockId>(&block, 1));
  ++keys_per_group_[ToIndex(key.group)];
}

bool ResidencyMirror::Remove(const PrefixKey& key) {
  const std::optional<BlockId> held = pool_.FindCached(key);
  if (!held) return false;
  pool_.Touch(*held);
  pool_.EvictKeys(*held);
  pool_.Free(std::span<const BlockId>(&*held, 1));  // keyless: to the front
  --keys_per_group_[ToIndex(key.group)];
  return true;
}

void ResidencyMirror::Clear() {
  [[maybe_unused]] const bool cleared =
      pool_.Reset();  // the mirror holds no block
  HKV_DCHECK(cleared);
  std::fill(keys_per_group_.begin(), keys_per_group_.end(), 0);
}

}  // namespace hkv::internal
