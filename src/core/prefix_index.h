// The prefix index: (key, group) -> the blocks registered under it, in
// insertion order. A key may be registered for several blocks (identical
// content cached twice stays registered twice, so running requests' block ids
// never change); lookups return the first-inserted block still registered.
//
// A lookup walks one probe per block of a hit, so the table is built for it:
// open addressing with linear probing over slots that hold the whole key and
// the first-inserted block; later duplicates live in a side map that only
// inserts and erases consult. Keys are digests, uniform already, so a key's
// first word is its hash.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "hkv/types.h"

namespace hkv::internal {

struct PrefixKey {
  BlockHash hash;
  GroupId group{0};

  friend bool operator==(const PrefixKey& a, const PrefixKey& b) {
    // Word compares inline; memcmp of 32 bytes is an out-of-line call.
    std::uint64_t x[4], y[4];
    std::memcpy(x, a.hash.bytes.data(), sizeof x);
    std::memcpy(y, b.hash.bytes.data(), sizeof y);
    return ((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3] ^ y[3])) ==
               0 &&
           a.group == b.group;
  }
};

// Digests are uniform already: a key's first word, told apart by group, is
// its hash.
inline constexpr std::uint64_t kGroupMix = 0x9e3779b97f4a7c15ull;
struct PrefixKeyHash {
  std::size_t operator()(const PrefixKey& key) const {
    return std::hash<BlockHash>()(key.hash) ^
           (std::size_t{ToIndex(key.group)} * kGroupMix);
  }
};

class PrefixIndex {
 public:
  PrefixIndex();

  // The first-inserted block registered under `key`. O(1) expected.
  std::optional<BlockId> Find(const PrefixKey& key) const {
    return Find(key.hash, key.group);
  }
  // Same, without building a PrefixKey.
  std::optional<BlockId> Find(const BlockHash& hash, GroupId group) const {
    const BlockId block = FindIn(slots_.data(), mask_, hash, group);
    if (block == kNullBlock) return std::nullopt;
    return block;
  }

  // Looks up keys[stride - 1], keys[2 * stride - 1], ... (at most `count`)
  // until one misses, writing the first-inserted block of each to `out`.
  // Returns how many were found. The hot loop of every lookup: the table's
  // fields stay in registers.
  std::size_t FindRun(std::span<const BlockHash> keys, std::size_t stride,
                      std::size_t count, GroupId group, BlockId* out) const {
    const Slot* slots = slots_.data();
    const std::size_t mask = mask_;
    for (std::size_t j = 0; j < count; ++j) {
      const BlockId block =
          FindIn(slots, mask, keys[(j + 1) * stride - 1], group);
      if (block == kNullBlock) return j;
      out[j] = block;
    }
    return count;
  }

  bool Contains(const PrefixKey& key, BlockId block) const;
  // Registers `block` under `key` after any blocks already there.
  // REQUIRES: block is not the null block.
  void Insert(const PrefixKey& key, BlockId block);
  // Unregisters `block` from `key`; a no-op when it is not registered there.
  // Returns whether something was removed.
  bool Erase(const PrefixKey& key, BlockId block);
  void Clear();

  // Number of distinct keys.
  std::size_t size() const { return size_; }
  // Number of (key, block) registrations. O(keys with duplicates).
  std::size_t NumEntries() const;

 private:
  struct Slot {
    PrefixKey key;
    BlockId block = kNullBlock;  // the null block marks an empty slot
  };

  // The block in the slot holding (hash, group), or the null block.
  static BlockId FindIn(const Slot* slots, std::size_t mask,
                        const BlockHash& hash, GroupId group) {
    std::uint64_t w0, w1, w2, w3;
    std::memcpy(&w0, hash.bytes.data(), 8);
    std::memcpy(&w1, hash.bytes.data() + 8, 8);
    std::memcpy(&w2, hash.bytes.data() + 16, 8);
    std::memcpy(&w3, hash.bytes.data() + 24, 8);
    for (std::size_t i = HomeOf(w0, group, mask);; i = (i + 1) & mask) {
      const Slot& slot = slots[i];
      if (slot.block == kNullBlock) return kNullBlock;
      std::uint64_t h0, h1, h2, h3;
      std::memcpy(&h0, slot.key.hash.bytes.data(), 8);
      std::memcpy(&h1, slot.key.hash.bytes.data() + 8, 8);
      std::memcpy(&h2, slot.key.hash.bytes.data() + 16, 8);
      std::memcpy(&h3, slot.key.hash.bytes.data() + 24, 8);
      if (((h0 ^ w0) | (h1 ^ w1) | (h2 ^ w2) | (h3 ^ w3)) == 0 &&
          slot.key.group == group) {
        return slot.block;
      }
    }
  }
  static std::size_t HomeOf(std::uint64_t first_word, GroupId group,
                            std::size_t mask) {
    return (first_word ^ (std::uint64_t{ToIndex(group)} * kGroupMix)) & mask;
  }
  std::size_t Home(const PrefixKey& key) const {
    std::uint64_t first_word;
    std::memcpy(&first_word, key.hash.bytes.data(), sizeof first_word);
    return HomeOf(first_word, key.group, mask_);
  }
  // The slot holding `key`, or the empty slot where it would go.
  std::size_t SlotOf(const PrefixKey& key) const;
  void Grow();
  // Empties slot `hole`, shifting later members of its probe run back.
  void RemoveSlot(std::size_t hole);

  std::vector<Slot> slots_;  // size is a power of two
  std::size_t mask_;
  std::size_t size_ = 0;
  // Blocks registered under a key after the one in its slot, oldest first.
  absl::flat_hash_map<PrefixKey, std::vector<BlockId>, PrefixKeyHash>
      duplicates_;
};

}  // namespace hkv::internal
