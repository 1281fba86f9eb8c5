// PrefixIndex against a std::map model: random inserts (duplicates
// included), erases of one key or of all a block's (an eviction's) and finds
// over keys whose first words collide often, so
// linear probing, tag collisions, growth past the planned size, backward-shift
// deletion and a block's several keys are all exercised.
#include "core/prefix_index.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

namespace hkv::internal {
namespace {

// An index this small starts at its minimum of 64 slots, and grows past 32
// keys.
constexpr std::uint32_t kSmallIndexBlocks = 20;

PrefixKey MakeKey(std::uint8_t home, std::uint8_t tail, std::uint32_t group) {
  PrefixKey key;
  key.hash.bytes[0] = home;   // the home slot, in a table of 64 or more
  key.hash.bytes[31] = tail;  // keys differing only here share their tag
  key.group = GroupId{group};
  return key;
}

struct KeyOrder {
  bool operator()(const PrefixKey& a, const PrefixKey& b) const {
    if (a.group != b.group) return a.group < b.group;
    return a.hash.bytes < b.hash.bytes;
  }
};

RC_GTEST_PROP(PrefixIndexTest, AgreesWithMapModel, ()) {
  PrefixIndex index(kSmallIndexBlocks);
  std::map<PrefixKey, std::vector<BlockId>, KeyOrder> model;
  // Each block's keys in registration order.
  std::map<BlockId, std::vector<PrefixKey>> keys_of;
  const auto steps = *rc::gen::inRange(1, 400);
  for (int step = 0; step < steps; ++step) {
    // Homes cluster near both ends of the smallest table (64 slots), so
    // probe runs collide and wrap around.
    const auto near = *rc::gen::inRange<std::uint8_t>(0, 6);
    const auto home = static_cast<std::uint8_t>(
        *rc::gen::arbitrary<bool>() ? near : 63 - near);
    const PrefixKey key = MakeKey(home, *rc::gen::inRange<std::uint8_t>(0, 40),
                                  *rc::gen::inRange(0u, 2u));
    const BlockId block{*rc::gen::inRange(1u, 6u)};
    const int op = *rc::gen::inRange(0, 4);
    if (op == 3) {
      // Every key of the block, as an eviction drops them: its keys in
      // registration order, then none left.
      std::vector<PrefixKey> seen;
      index.EraseBlock(block, [&](const PrefixKey& k) { seen.push_back(k); });
      RC_ASSERT(seen == keys_of[block]);
      for (const PrefixKey& k : keys_of[block]) {
        auto it = model.find(k);
        it->second.erase(
            std::find(it->second.begin(), it->second.end(), block));
        if (it->second.empty()) model.erase(it);
      }
      keys_of[block].clear();
    } else if (op == 0) {
      index.Insert(key, block);
      model[key].push_back(block);
      keys_of[block].push_back(key);
    } else if (op == 1) {
      auto it = model.find(key);
      bool expected = false;
      if (it != model.end()) {
        auto pos = std::find(it->second.begin(), it->second.end(), block);
        if (pos != it->second.end()) {
          it->second.erase(pos);
          expected = true;
          if (it->second.empty()) model.erase(it);
          std::vector<PrefixKey>& owned = keys_of[block];
          owned.erase(std::find(owned.begin(), owned.end(), key));
        }
      }
      RC_ASSERT(index.Erase(key, block) == expected);
    }
    RC_ASSERT(index.CheckInvariants());
    for (const auto& [b, keys] : keys_of) {
      RC_ASSERT(index.KeysOf(b) == keys);
      RC_ASSERT(index.HasKeys(b) == !keys.empty());
    }
    std::size_t entries = 0;
    for (const auto& [k, blocks] : model) {
      RC_ASSERT(index.Find(k) == std::optional(blocks.front()));
      RC_ASSERT(index.Find(k.hash, k.group) == std::optional(blocks.front()));
      for (BlockId b : blocks) RC_ASSERT(index.Contains(k, b));
      entries += blocks.size();
    }
    if (!model.contains(key)) RC_ASSERT(!index.Find(key).has_value());
    RC_ASSERT(index.size() == model.size());
    RC_ASSERT(index.NumEntries() == entries);
  }
}

// Erasing inside a run that wraps from the last slot to the first shifts
// back only the keys whose home allows it: a key sitting in its own home
// slot 0 stays there.
TEST(PrefixIndexTest, EraseInsideARunThatWraps) {
  PrefixIndex index(kSmallIndexBlocks);
  const PrefixKey at_home = MakeKey(0, 0, 0);
  index.Insert(at_home, BlockId{1});  // slot 0
  std::vector<PrefixKey> wrapped;
  for (std::uint8_t i = 1; i <= 3; ++i) {
    wrapped.push_back(MakeKey(62, i, 0));  // slots 62, 63, 1
    index.Insert(wrapped.back(), BlockId{i + 1u});
  }
  ASSERT_TRUE(index.Erase(wrapped[0], BlockId{2}));
  EXPECT_EQ(index.Find(at_home), BlockId{1});
  EXPECT_EQ(index.Find(wrapped[1]), BlockId{3});
  EXPECT_EQ(index.Find(wrapped[2]), BlockId{4});
  EXPECT_FALSE(index.Find(wrapped[0]).has_value());
}

TEST(PrefixIndexTest, FindRunStopsAtTheFirstMiss) {
  PrefixIndex index(kSmallIndexBlocks);
  std::vector<BlockHash> keys(8);
  for (std::uint8_t i = 0; i < 8; ++i)
    keys[i].bytes[0] = static_cast<std::uint8_t>(i + 1);
  // Stride 2 looks up keys 1, 3, 5, 7; key 5 is missing.
  index.Insert({.hash = keys[1]}, BlockId{11});
  index.Insert({.hash = keys[3]}, BlockId{13});
  index.Insert({.hash = keys[7]}, BlockId{17});
  BlockId out[4] = {};
  EXPECT_EQ(index.FindRun(keys, 2, 4, GroupId{0}, out), 2u);
  EXPECT_EQ(out[0], BlockId{11});
  EXPECT_EQ(out[1], BlockId{13});
  EXPECT_EQ(index.FindRun(keys, 2, 4, GroupId{1}, out), 0u);  // other group
}

// Slots hold a 32-bit tag, not the key: keys sharing their first word are
// told apart by the whole key in the block's record (or alias node).
TEST(PrefixIndexTest, KeysSharingATagAreToldApart) {
  PrefixIndex index(kSmallIndexBlocks);
  const PrefixKey a = MakeKey(7, 1, 0), b = MakeKey(7, 2, 0);
  const PrefixKey c = MakeKey(7, 3, 0), absent = MakeKey(7, 4, 0);
  index.Insert(a, BlockId{1});
  index.Insert(b, BlockId{2});
  index.Insert(c, BlockId{1});  // block 1's second key: an alias node
  EXPECT_EQ(index.Find(a), BlockId{1});
  EXPECT_EQ(index.Find(b), BlockId{2});
  EXPECT_EQ(index.Find(c), BlockId{1});
  EXPECT_FALSE(index.Find(absent).has_value());
  EXPECT_FALSE(index.Find(MakeKey(7, 1, 1)).has_value());  // other group
}

// Erasing a block's first key moves its next key into the block's record;
// the key's other blocks keep their order.
TEST(PrefixIndexTest, ErasingABlocksFirstKeyKeepsItsOtherKeys) {
  PrefixIndex index(kSmallIndexBlocks);
  const PrefixKey k1 = MakeKey(1, 0, 0), k2 = MakeKey(2, 0, 0);
  const PrefixKey k3 = MakeKey(3, 0, 0);
  index.Insert(k2, BlockId{2});
  index.Insert(k1, BlockId{1});
  index.Insert(k2, BlockId{1});  // after block 2
  index.Insert(k3, BlockId{1});
  ASSERT_TRUE(index.Erase(k1, BlockId{1}));
  EXPECT_TRUE(index.CheckInvariants());
  EXPECT_EQ(index.KeysOf(BlockId{1}), (std::vector<PrefixKey>{k2, k3}));
  EXPECT_EQ(index.Find(k2), BlockId{2});
  ASSERT_TRUE(index.Erase(k2, BlockId{2}));
  EXPECT_EQ(index.Find(k2), BlockId{1});
  EXPECT_EQ(index.Find(k3), BlockId{1});
  EXPECT_EQ(index.NumEntries(), 2u);
  EXPECT_TRUE(index.CheckInvariants());
}

// Sized from num_blocks: one key per block, registered and erased over and
// over, never grows the slots (no call rehashes in steady state).
TEST(PrefixIndexTest, OneKeyPerBlockNeverGrowsTheTable) {
  constexpr std::uint32_t kBlocks = 3000;
  PrefixIndex index(kBlocks);
  const std::size_t slots = index.num_slots();
  const std::size_t bytes = index.MemoryBytes();
  EXPECT_GE(slots * 3, std::size_t{kBlocks} * 8);
  const auto key = [](std::uint64_t n) {
    PrefixKey k;
    const std::uint64_t word = n * 0x9e3779b97f4a7c15ull;
    std::memcpy(k.hash.bytes.data(), &word, sizeof word);
    return k;
  };
  std::uint64_t n = 0;
  for (int round = 0; round < 4; ++round) {
    for (std::uint32_t b = 1; b < kBlocks; ++b) {
      if (round > 0) {
        const PrefixKey old = index.FirstKey(BlockId{b});
        ASSERT_TRUE(index.Erase(old, BlockId{b}));
      }
      index.Insert(key(n++), BlockId{b});
    }
  }
  EXPECT_EQ(index.size(), kBlocks - 1);
  EXPECT_EQ(index.num_slots(), slots);
  EXPECT_EQ(index.MemoryBytes(), bytes);
  EXPECT_TRUE(index.CheckInvariants());
}

}  // namespace
}  // namespace hkv::internal

namespace hkv::internal {
namespace {

// A key registered for many blocks keeps them in insertion order whichever
// end goes, and a block's move into its record (its first key erased) keeps
// the key's link to its last registration.
TEST(PrefixIndexTest, AKeyOfManyBlocksKeepsItsOrderAtBothEnds) {
  constexpr std::uint32_t kBlocks = 2000;
  PrefixIndex index(kBlocks + 1);
  const PrefixKey popular = MakeKey(5, 1, 0);
  const PrefixKey alias = MakeKey(9, 2, 0);
  for (std::uint32_t b = 1; b <= kBlocks; ++b) {
    index.Insert(popular, BlockId{b});
  }
  // Block 7's second key; its first (popular) goes below, and alias moves
  // into the block's record.
  index.Insert(alias, BlockId{7});
  index.Insert(alias, BlockId{8});
  ASSERT_TRUE(index.CheckInvariants());
  EXPECT_EQ(index.Find(popular), BlockId{1});
  ASSERT_TRUE(index.Erase(popular, BlockId{1}));  // the first
  EXPECT_EQ(index.Find(popular), BlockId{2});
  ASSERT_TRUE(index.Erase(popular, BlockId{kBlocks}));  // the last
  ASSERT_TRUE(index.Erase(popular, BlockId{7}));        // alias moves
  ASSERT_TRUE(index.CheckInvariants());
  EXPECT_EQ(index.Find(alias), BlockId{7});
  index.Insert(popular, BlockId{1});  // after kBlocks - 1, the new last
  ASSERT_TRUE(index.CheckInvariants());
  for (std::uint32_t b = 2; b < kBlocks; ++b) {
    if (b == 7) continue;
    ASSERT_EQ(index.Find(popular), BlockId{b});
    ASSERT_TRUE(index.Erase(popular, BlockId{b}));
  }
  EXPECT_EQ(index.Find(popular), BlockId{1});
  EXPECT_TRUE(index.CheckInvariants());
  EXPECT_EQ(index.NumEntries(), 3u);  // popular at 1, alias at 7 and 8
}

}  // namespace
}  // namespace hkv::internal
