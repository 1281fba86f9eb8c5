// The simulator's offload tiers (hkv/simulator.h, TierSpec), modelled: no
// bytes are written. Each tier holds object groups (one per boundary of a
// request's cached entries, hkv/object_group.h) by key, up to its capacity
// in bytes, least recently used out first. A chain writes a request's
// groups through to every tier at its completion and reads each group from
// the first tier holding it, copying it into the tiers above, as
// TierChain does. Its directory is exact: a group is known while a tier
// holds it (a real chain's may be stale, hkv/tier_chain.h).
//
// Thread-compatible. A tier may be shared by several chains (a cluster's
// redis tier): its owner outlives them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "hkv/cache_manager.h"
#include "hkv/simulator.h"
#include "hkv/tier_chain.h"

namespace hkv::internal {

// One tier: object groups by key, LRU by bytes.
class TierStoreModel {
 public:
  explicit TierStoreModel(TierSpec spec) : spec_(spec) {}
  TierStoreModel(const TierStoreModel&) = delete;
  TierStoreModel& operator=(const TierStoreModel&) = delete;

  // The group held at `key`; null when none. Valid until the next Put.
  const KnownGroup* Find(const BlockHash& key) const;
  // Holds `group` at `key` (replacing a copy), evicting the least recently
  // used; returns false, holding nothing new, when it exceeds the capacity.
  bool Put(const BlockHash& key, const KnownGroup& group);
  // Marks `key` used now. REQUIRES: held.
  void Touch(const BlockHash& key);

  const TierSpec& spec() const { return spec_; }
  std::uint64_t used_bytes() const { return used_; }
  std::uint64_t evicted_groups() const { return evicted_; }
  // REQUIRES (HKV_DCHECK): the LRU order and the bytes agree.
  void CheckInvariants() const;

 private:
  struct Held {
    KnownGroup group;
    std::uint64_t tick = 0;
  };
  void Erase(const BlockHash& key);

  TierSpec spec_;
  std::unordered_map<BlockHash, Held> held_;
  std::map<std::uint64_t, BlockHash> lru_;  // tick -> key, oldest first
  std::uint64_t used_ = 0;
  std::uint64_t tick_ = 0;
  std::uint64_t evicted_ = 0;
};

// A chain of modelled tiers for one engine.
class TierModel {
 public:
  // `page_bytes`: per cache group, one block's bytes on one rank. `shared`:
  // per spec, a tier another owner holds (outliving this), or null for one
  // of this chain's own; empty: all its own.
  TierModel(std::span<const TierSpec> specs,
            std::vector<std::uint64_t> page_bytes,
            std::span<TierStoreModel* const> shared);
  TierModel(const TierModel&) = delete;
  TierModel& operator=(const TierModel&) = delete;

  // The group some tier holds at `key` (the first), or null.
  const KnownGroup* Find(const BlockHash& key) const;

  // Writes the object groups of `entries` (CacheManager::CachedEntries of
  // `request`) to each tier not holding them whole.
  void Store(const Request& request, std::span<const CachedEntry> entries);

  // Reads the object groups at `keys` (distinct) for a load supplying
  // `external_tokens`: each whole, from the first tier holding it, copied
  // into the tiers above. Returns the modelled seconds (per tier read:
  // its latency plus its bytes over its bandwidth); none when a key is
  // held by no tier (nothing is read then).
  std::optional<double> Load(std::span<const BlockHash> keys,
                             std::uint32_t external_tokens);

  // By tier, in chain order.
  std::vector<TierFigures> Figures() const;

 private:
  std::vector<std::unique_ptr<TierStoreModel>> owned_;
  std::vector<TierStoreModel*> tiers_;  // chain order, not null
  std::vector<TierFigures> figures_;
  std::vector<std::uint64_t> page_bytes_;
};

}  // namespace hkv::internal
