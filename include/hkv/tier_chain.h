// A chain of offload tiers (host memory, then a directory or a Redis
// server) holding object groups (hkv/object_group.h) for one namespace,
// and a directory of the groups it knows they hold.
//
// Writes go through to every tier (a host tier for this instance's fast
// reloads, a shared one for restarts and other instances). A read takes
// the first tier's valid copy and copies it into the tiers above. An object
// that fails its checks (wrong size, foreign namespace, another key, a
// flipped byte) is counted by defect, erased from that tier and never
// returned: a reader gets a whole, checked group or nothing.
//
// The directory is what a lookup consults, so that a lookup does no I/O:
// groups this chain stored, learned by Refresh (each tier's list for the
// namespace: a restart's objects, other instances'), and forgotten when a
// read finds them gone or refused. It may be stale (a tier evicted or lost
// an object); a load then misses and the caller recomputes.
//
// Thread-compatible.
//
// Example:
//   std::vector<std::unique_ptr<ObjectStore>> stores;
//   stores.push_back(MakeHostStore(1 << 30));
//   stores.push_back(*MakeRedisStore({.port = 6379}));
//   TierChain chain({.ns = {.model = "m", .geometry = "fa16"}},
//                   std::move(stores));
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "hkv/object_group.h"
#include "hkv/object_store.h"

namespace hkv {

struct TierChainOptions {
  TierNamespace ns = {};
  // Groups the directory remembers; past it, the least recently stored or
  // read are forgotten (a lookup then misses them).
  std::size_t max_directory_entries = std::size_t{1} << 20;
};

// What one tier of the chain did.
struct TierCounters {
  std::uint64_t groups_stored = 0;  // Put answered kOk
  std::uint64_t groups_loaded = 0;  // read whole and valid
  std::uint64_t bytes_loaded = 0;
  std::uint64_t absent = 0;        // asked for, not there
  std::uint64_t store_errors = 0;  // the store answered kError
  // Objects refused by defect (index: ObjectDefect), each erased.
  std::array<std::uint64_t, kNumObjectDefects> defects = {};
  StoreCounters store = {};
};

// What the directory knows of a group.
struct KnownGroup {
  std::uint32_t end_tokens = 0;
  std::vector<GroupId> groups = {};
  std::uint64_t bytes = 0;  // the encoding
};

class TierChain {
 public:
  // REQUIRES (else UsageError): at least one store, none null;
  // max_directory_entries >= 1.
  TierChain(TierChainOptions options,
            std::vector<std::unique_ptr<ObjectStore>> stores);
  TierChain(TierChain&&) noexcept;
  TierChain& operator=(TierChain&&) noexcept;
  ~TierChain();

  std::size_t num_tiers() const;
  const NamespaceDigest& namespace_digest() const;

  // Writes each group to every tier, one batch per tier; the directory
  // learns every group some tier took. Returns how many some tier took.
  // REQUIRES: each group encodable (hkv/object_group.h).
  std::size_t Store(std::span<const ObjectGroup> groups);

  // Each key's group from the first tier holding a valid copy, in order;
  // none where no tier has one (the directory forgets it).
  std::vector<std::optional<ObjectGroup>> Load(std::span<const BlockHash> keys);

  // Erases the group under `key` from every tier and forgets it (a group
  // its reader refused).
  void Drop(const BlockHash& key);

  // Relearns the directory from the tiers' lists (at most
  // max_directory_entries names), reading each new object's header.
  // Returns the groups it learned; kIoError when no tier could list.
  [[nodiscard]] Result<std::size_t> Refresh();

  // The directory's entry for `key`; none when unknown. Valid until the
  // next call that is not const.
  const KnownGroup* Find(const BlockHash& key) const;
  std::size_t num_known_groups() const;
  // Every key the directory knows, in no order (what a restart's Refresh
  // learned, to tell a scheduler). O(known groups).
  std::vector<BlockHash> KnownKeys() const;

  // By tier, in chain order.
  std::vector<TierCounters> counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hkv
