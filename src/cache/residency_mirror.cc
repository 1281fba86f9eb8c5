#include "cache/residency_mirror.h"

#include <algorithm>
#include <optional>

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

ResidencyMirror::Tables::Tables(const CacheConfig& config,
                                const CacheGeometry& geometry,
                                std::uint32_t keys)
    : pool(keys + 1, Caching::kEnabled), coordinator(managers, geometry) {
  for (std::size_t i = 0; i < config.groups.size(); ++i) {
    managers.push_back(
        TraitsOf(config.groups[i].kind)
            .make(pool, geometry.facts, geometry.groups[i], config.groups[i]));
  }
}

ResidencyMirror::ResidencyMirror(const CacheConfig& config,
                                 std::uint32_t capacity)
    : config_(config),
      geometry_(MirrorGeometry(config, capacity)),
      capacity_(capacity),
      table_keys_(std::min(capacity, kInitialKeys)),
      tables_(std::make_unique<Tables>(config_, geometry_, table_keys_)),
      keys_per_group_(config.groups.size(), 0) {}

void ResidencyMirror::Put(Tables& tables, const PrefixKey& key) {
  const BlockId block = tables.pool.AllocateOne();
  tables.pool.CacheFull(block, key, 1);
  tables.pool.Free(std::span<const BlockId>(&block, 1));
}

void ResidencyMirror::Grow() {
  const std::uint32_t keys = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(capacity_, std::uint64_t{2} * table_keys_));
  auto bigger = std::make_unique<Tables>(config_, geometry_, keys);
  // Every block is free; the keyed ones, oldest first, follow the keyless.
  const BlockPool& pool = tables_->pool;
  for (std::optional<BlockId> b = pool.NthFree(0, 0); b;
       b = pool.NextFree(*b)) {
    if (pool.primary_num_tokens(*b) > 0) Put(*bigger, pool.primary_key(*b));
  }
  evicted_before_ += pool.stats().evicted_blocks;
  tables_ = std::move(bigger);
  table_keys_ = keys;
}

void ResidencyMirror::Store(const PrefixKey& key) {
  HKV_DCHECK(ToIndex(key.group) < keys_per_group_.size());
  const BlockPool& pool = tables_->pool;
  const BlockId next = pool.NthFree(0, 0);
  if (pool.primary_num_tokens(next) > 0) {  // full
    if (table_keys_ < capacity_) {
      Grow();  // room before forgetting
    } else {
      --keys_per_group_[ToIndex(pool.primary_key(next).group)];  // Put's LRU
    }
  }
  Put(*tables_, key);
  ++keys_per_group_[ToIndex(key.group)];
}

bool ResidencyMirror::Remove(const PrefixKey& key) {
  BlockPool& pool = tables_->pool;
  const std::optional<BlockId> held = pool.FindCached(key);
  if (!held) return false;
  pool.Touch(*held);
  pool.EvictKeys(*held);
  pool.Free(std::span<const BlockId>(&*held, 1));  // keyless: to the front
  --keys_per_group_[ToIndex(key.group)];
  return true;
}

void ResidencyMirror::Clear() {
  evicted_before_ += tables_->pool.stats().evicted_blocks;
  table_keys_ = std::min(capacity_, kInitialKeys);
  tables_ = std::make_unique<Tables>(config_, geometry_, table_keys_);
  std::fill(keys_per_group_.begin(), keys_per_group_.end(), 0);
}

}  // namespace hkv::internal
