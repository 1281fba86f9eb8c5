// The prefix index: (key, group) -> the blocks registered under it, in
// insertion order. A key may be registered for several blocks (identical
// content cached twice stays registered twice, so running requests' block ids
// never change); lookups return the first-inserted block still registered.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "hkv/types.h"

namespace hkv::internal {

struct PrefixKey {
  BlockHash hash;
  GroupId group{0};

  friend bool operator==(const PrefixKey&, const PrefixKey&) = default;

  template <typename H>
  friend H AbslHashValue(H state, const PrefixKey& key) {
    // The digest is uniform: its first word is a good hash on its own.
    return H::combine(std::move(state), std::hash<BlockHash>()(key.hash),
                      ToIndex(key.group));
  }
};

class PrefixIndex {
 public:
  // The first-inserted block registered under `key`. O(1) expected.
  std::optional<BlockId> Find(const PrefixKey& key) const {
    auto it = map_.find(key);
    if (it == map_.end()) return std::nullopt;
    return it->second.front();
  }

  bool Contains(const PrefixKey& key, BlockId block) const;
  // Registers `block` under `key` after any blocks already there.
  void Insert(const PrefixKey& key, BlockId block);
  // Unregisters `block` from `key`; a no-op when it is not registered there.
  // Returns whether something was removed.
  bool Erase(const PrefixKey& key, BlockId block);
  void Clear() { map_.clear(); }

  // Number of distinct keys.
  std::size_t size() const { return map_.size(); }
  // Number of (key, block) registrations. O(size()).
  std::size_t NumEntries() const;

 private:
  absl::flat_hash_map<PrefixKey, absl::InlinedVector<BlockId, 1>> map_;
};

}  // namespace hkv::internal
