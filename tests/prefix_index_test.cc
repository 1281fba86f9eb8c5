// PrefixIndex against a std::map model: random inserts (duplicates
// included), erases and finds over keys whose first words collide often, so
// linear probing, growth and backward-shift deletion are all exercised.
#include "core/prefix_index.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

namespace hkv::internal {
namespace {

PrefixKey MakeKey(std::uint8_t home, std::uint8_t tail, std::uint32_t group) {
  PrefixKey key;
  key.hash.bytes[0] = home;  // the home slot, in a table of 64 or more
  key.hash.bytes[31] = tail;
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
  PrefixIndex index;
  std::map<PrefixKey, std::vector<BlockId>, KeyOrder> model;
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
    const int op = *rc::gen::inRange(0, 3);
    if (op == 0) {
      index.Insert(key, block);
      model[key].push_back(block);
    } else if (op == 1) {
      auto it = model.find(key);
      bool expected = false;
      if (it != model.end()) {
        auto pos = std::find(it->second.begin(), it->second.end(), block);
        if (pos != it->second.end()) {
          it->second.erase(pos);
          expected = true;
          if (it->second.empty()) model.erase(it);
        }
      }
      RC_ASSERT(index.Erase(key, block) == expected);
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
  PrefixIndex index;
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
  PrefixIndex index;
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

}  // namespace
}  // namespace hkv::internal
