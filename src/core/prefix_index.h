// The prefix index: (key, group) -> the blocks registered under it, in
// insertion order. A key may be registered for several blocks (identical
// content cached twice stays registered twice, so running requests' block ids
// never change); lookups return the first-inserted block still registered. A
// block may be registered under several keys (a partial entry's aliases);
// KeysOf lists them in registration order.
//
// Every table is sized from the number of blocks at construction, so that no
// call rehashes or reallocates while there is at most one key per block:
//  - slots: open addressing with linear probing, a power of two at least
//    8/3 x num_blocks (at most 3/8 full with one key per block). A slot is 8
//    bytes: the key's tag (its first word's low 32 bits, mixed with the
//    group; the home slot is the tag's low bits) and a reference to the
//    registration of the key's first-inserted block. The table doubles only
//    past 1/2 full, which takes more than 4/3 keys per block.
//  - records: one per block, 48 bytes: the block's first registered key,
//    the link to its next key, the link to the key's next block and, in a
//    key's first registration, the link to its last (so that registering
//    one more block under a popular key is O(1), not a walk). A slot
//    is verified against the whole key in the record it references, so the
//    slot need not hold the key.
//  - nodes: a block's further keys (aliases), from a free list; they grow
//    (as a vector) only past the most aliases ever held at once.
// Keys are digests, uniform already, so a key's first word is its hash.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

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
  // Blocks 1 .. num_blocks - 1 may be registered (0 is the null block).
  explicit PrefixIndex(std::uint32_t num_blocks);
  PrefixIndex(const PrefixIndex&) = delete;
  PrefixIndex& operator=(const PrefixIndex&) = delete;

  // The first-inserted block registered under `key`. O(1) expected.
  std::optional<BlockId> Find(const PrefixKey& key) const {
    return Find(key.hash, key.group);
  }
  // Same, without building a PrefixKey.
  std::optional<BlockId> Find(const BlockHash& hash, GroupId group) const {
    const BlockId block = Probe(hash, group);
    if (block == kNullBlock) return std::nullopt;
    return block;
  }

  // Looks up keys[stride - 1], keys[2 * stride - 1], ... (at most `count`)
  // until one misses, writing the first-inserted block of each to `out`.
  // Returns how many were found. The hot loop of every lookup: keys in
  // their home slot, registered first by a block's record, are resolved in
  // a loop that calls nothing, so the table's fields stay in registers;
  // Probe takes the rest (probing on, aliases, the miss).
  std::size_t FindRun(std::span<const BlockHash> keys, std::size_t stride,
                      std::size_t count, GroupId group, BlockId* out) const {
    const KeyRun run{
        .keys = keys, .stride = stride, .count = count, .group = group};
    for (std::size_t j = 0;;) {
      j = FindAtHome(run, j, out);
      if (j == count) return count;
      const BlockId block = Probe(run.key(j), group);
      if (block == kNullBlock) return j;
      out[j++] = block;
    }
  }

  // Where `block`'s record is (its first key, its links), to prefetch.
  const void* RecordOf(BlockId block) const {
    return &records_[ToIndex(block)];
  }
  // Where a probe for `key` begins, for a caller to prefetch (a function
  // that only prefetches can be dropped whole by GCC 12 as free of effects).
  const void* HomeSlot(const PrefixKey& key) const {
    return slots_.data() + (TagOf(key) & (slots_.size() - 1));
  }

  // O(keys of `block`): a popular key may be registered for thousands of
  // blocks, a block holds a few keys.
  bool Contains(const PrefixKey& key, BlockId block) const;
  // Registers `block` under `key` after any blocks already there, and after
  // the block's other keys; returns the key's first-inserted block (`block`
  // when the key was new). O(keys of `block`).
  // REQUIRES: block is neither the null block nor past num_blocks.
  BlockId Insert(const PrefixKey& key, BlockId block);
  // Unregisters `block` from `key`; a no-op when it is not registered there.
  // Returns whether something was removed. O(blocks under `key` + keys of
  // `block`).
  bool Erase(const PrefixKey& key, BlockId block);
  // Calls on_key(key) for each key of `block` in registration order, then
  // unregisters the block from all of them.
  template <typename F>
  void EraseBlock(BlockId block, F&& on_key) {
    if (!HasKeys(block)) return;
    for (std::uint32_t ref = ToIndex(block); ref != kNone; ref = next_key(ref))
      on_key(Reg(ref).key);
    EraseKeysOf(block);
  }
  // Drops every registration. O(num_blocks + slots).
  void Clear();

  bool HasKeys(BlockId block) const {
    return records_[ToIndex(block)].next_dup != kFreeRecord;
  }
  // The block's first registered key; a zero key when it has none.
  const PrefixKey& FirstKey(BlockId block) const {
    return records_[ToIndex(block)].key;
  }
  // Every key of `block`, in registration order.
  std::vector<PrefixKey> KeysOf(BlockId block) const;

  // Number of distinct keys.
  std::size_t size() const { return size_; }
  // Number of (key, block) registrations.
  std::size_t NumEntries() const { return num_entries_; }
  // Number of slots: constant unless keys outgrow 1/2 of them.
  std::size_t num_slots() const { return slots_.size(); }
  // Bytes of the index's tables (capacities times element sizes).
  std::size_t MemoryBytes() const;

  // Returns false on any broken link: every slot's registrations hold its
  // key, every block's registrations name it, the counts agree.
  // O(slots + registrations).
  bool CheckInvariants() const;

 private:
  // A registration is referenced by 0 (none), a block id (that block's
  // record) or kNodeBit + a node index.
  static constexpr std::uint32_t kNone = 0;
  static constexpr std::uint32_t kNodeBit = 0x80000000u;
  // next_dup of a record that holds no key.
  static constexpr std::uint32_t kFreeRecord = 0xffffffffu;

  struct Slot {
    std::uint32_t tag = 0;
    std::uint32_t ref = kNone;  // kNone marks an empty slot
  };
  struct Registration {
    PrefixKey key;
    std::uint32_t next_key = kNone;        // the block's next key
    std::uint32_t next_dup = kFreeRecord;  // the key's next block
    // In the key's first registration: its last one (kNone when it is the
    // only one). kNone in every other.
    std::uint32_t last_dup = kNone;
  };
  struct Node {
    Registration reg;
    BlockId block = kNullBlock;
  };
  static std::uint32_t TagOf(std::uint64_t first_word, GroupId group) {
    return static_cast<std::uint32_t>(
        first_word ^ (std::uint64_t{ToIndex(group)} * kGroupMix));
  }
  static std::uint64_t Word(const BlockHash& hash, std::size_t i) {
    std::uint64_t word;
    std::memcpy(&word, hash.bytes.data() + 8 * i, sizeof word);
    return word;
  }
  static std::uint32_t TagOf(const PrefixKey& key) {
    return TagOf(Word(key.hash, 0), key.group);
  }
  static bool SameKey(const PrefixKey& key, const BlockHash& hash,
                      GroupId group) {
    const BlockHash& held = key.hash;
    return ((Word(held, 0) ^ Word(hash, 0)) | (Word(held, 1) ^ Word(hash, 1)) |
            (Word(held, 2) ^ Word(hash, 2)) |
            (Word(held, 3) ^ Word(hash, 3))) == 0 &&
           key.group == group;
  }

  struct KeyRun {
    std::span<const BlockHash> keys;
    std::size_t stride;
    std::size_t count;
    GroupId group;
    const BlockHash& key(std::size_t j) const {
      return keys[(j + 1) * stride - 1];
    }
  };
  // Resolves run.key(j), run.key(j + 1), ... into `out` while each is in
  // its home slot as a block's first key (the common case); returns the
  // first j where that is not so. Calls nothing, so that the table's fields
  // stay in registers.
  std::size_t FindAtHome(const KeyRun& run, std::size_t j, BlockId* out) const {
    const Slot* slots = slots_.data();
    const std::size_t mask = slots_.size() - 1;
    const Registration* records = records_.data();
    for (; j < run.count; ++j) {
      const BlockHash& hash = run.key(j);
      const std::uint32_t tag = TagOf(Word(hash, 0), run.group);
      const Slot slot = slots[tag & mask];
      // 1 <= ref < kNodeBit: a block's record.
      if (slot.tag != tag || slot.ref - 1 >= kNodeBit - 1 ||
          !SameKey(records[slot.ref].key, hash, run.group)) {
        break;
      }
      out[j] = BlockId{slot.ref};
    }
    return j;
  }
  // The first-inserted block registered under (hash, group), or the null
  // block: the whole probe. O(1) expected.
  BlockId Probe(const BlockHash& hash, GroupId group) const;

  Registration& Reg(std::uint32_t ref) {
    return ref < kNodeBit ? records_[ref] : nodes_[ref - kNodeBit].reg;
  }
  const Registration& Reg(std::uint32_t ref) const {
    return ref < kNodeBit ? records_[ref] : nodes_[ref - kNodeBit].reg;
  }
  BlockId BlockOf(std::uint32_t ref) const {
    return ref < kNodeBit ? BlockId{ref} : nodes_[ref - kNodeBit].block;
  }
  std::uint32_t next_key(std::uint32_t ref) const { return Reg(ref).next_key; }

  // The slot holding `key`, or the empty slot where it would go.
  std::size_t SlotOf(const PrefixKey& key) const;
  // A registration of `key` for `block`, last among the block's keys.
  std::uint32_t NewRegistration(const PrefixKey& key, BlockId block);
  // Unlinks `ref` (a registration of `block`) from the block's keys.
  void ReleaseRegistration(std::uint32_t ref, BlockId block);
  void FreeNode(std::uint32_t ref);
  // Makes whatever referenced registration `from` of `key` reference `to`.
  void Repoint(const PrefixKey& key, std::uint32_t from, std::uint32_t to);
  void EraseKeysOf(BlockId block);
  // Erases the block's primary key when the block is its only registration
  // (no aliases left): the slot that references the block's record, found
  // by reference, no key compared. False, changing nothing, when no slot
  // does (another block registered the key first).
  bool EraseSoleKey(BlockId block);
  void Grow();
  // Every slot's chain holds its key; counts agree.
  bool ChainsHold() const;
  // Empties slot `hole`, shifting later members of its probe run back.
  void RemoveSlot(std::size_t hole);

  std::vector<Slot> slots_;            // size is a power of two
  std::vector<Registration> records_;  // by block id
  std::vector<Node> nodes_;
  std::uint32_t free_nodes_ = kNone;  // linked through reg.next_key
  std::size_t size_ = 0;
  std::size_t num_entries_ = 0;
};

}  // namespace hkv::internal
