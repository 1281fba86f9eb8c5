// ResidencyMirror alone (src/cache/residency_mirror.h): one engine's keys as
// its events announce them, copies counted, LRU past its capacity, and the
// engine's own lookup over them.
#include "cache/residency_mirror.h"

#include <gtest/gtest.h>

#include <cstring>
#include <span>

#include "hkv/request.h"
#include "test_util.h"

namespace hkv::internal {
namespace {

class ResidencyMirrorTest : public ::testing::Test {
 protected:
  std::vector<BlockHash> Keys() const {
    const KeyScheme scheme = *MakeKeyScheme(testing::FullAndRecurrent16().keys);
    const Request r({}, prompt_, scheme);
    return {r.keys().begin(), r.keys().end()};
  }
  PrefixKey Attention(std::size_t unit) const {
    return {.hash = keys_[unit], .group = GroupId{0}};
  }
  PrefixKey State(std::size_t unit) const {
    return {.hash = keys_[unit], .group = GroupId{1}};
  }
  CacheHit Lookup(const ResidencyMirror& m) const {
    return m.FindLongestHit(keys_, prompt_size() - 1);
  }
  std::uint32_t prompt_size() const {
    return static_cast<std::uint32_t>(prompt_.size());
  }

  std::vector<TokenId> prompt_ = testing::Range(0, 81);  // 5 units and 1
  std::vector<BlockHash> keys_ = Keys();
};

TEST_F(ResidencyMirrorTest, AnswersAsTheEngineLooksUp) {
  ResidencyMirror mirror(testing::FullAndRecurrent16(), 100);
  for (std::size_t u = 0; u < 4; ++u) mirror.Store(Attention(u));
  mirror.Store(State(2));
  const CacheHit hit = Lookup(mirror);
  EXPECT_EQ(hit.chain_tokens, 64u);  // full attention's four units
  EXPECT_EQ(hit.num_tokens, 48u);    // the state after unit 2
  EXPECT_EQ(mirror.num_keys(), 5u);
  EXPECT_EQ(mirror.keys_per_group(), (std::vector<std::uint64_t>{4, 1}));
}

TEST_F(ResidencyMirrorTest, AKeyStaysWhileACopyIsHeld) {
  ResidencyMirror mirror(testing::FullAndRecurrent16(), 100);
  mirror.Store(Attention(0));
  mirror.Store(Attention(0));  // two requests computed the same prefix
  EXPECT_TRUE(mirror.Remove(Attention(0)));
  EXPECT_EQ(Lookup(mirror).chain_tokens, 16u);
  EXPECT_TRUE(mirror.Remove(Attention(0)));
  EXPECT_EQ(Lookup(mirror).chain_tokens, 0u);
  EXPECT_FALSE(mirror.Remove(Attention(0)));  // never more than stored
  EXPECT_EQ(mirror.keys_per_group(), (std::vector<std::uint64_t>{0, 0}));
}

TEST_F(ResidencyMirrorTest, PastItsCapacityTheLeastRecentlyStoredGoes) {
  ResidencyMirror mirror(testing::FullAndRecurrent16(), 3);
  for (std::size_t u = 0; u < 4; ++u) mirror.Store(Attention(u));
  EXPECT_EQ(mirror.evicted_keys(), 1u);
  EXPECT_EQ(mirror.num_keys(), 3u);
  // Unit 0 was forgotten: the chain is broken at its start. Forgetting
  // only shortens an answer.
  EXPECT_EQ(Lookup(mirror).chain_tokens, 0u);
  mirror.Store(Attention(0));  // evicts unit 1, the oldest now
  EXPECT_EQ(Lookup(mirror).chain_tokens, 16u);
}

TEST_F(ResidencyMirrorTest, ClearForgetsEveryKey) {
  ResidencyMirror mirror(testing::FullAndRecurrent16(), 100);
  for (std::size_t u = 0; u < 5; ++u) {
    mirror.Store(Attention(u));
    mirror.Store(State(u));
  }
  mirror.Clear();
  EXPECT_EQ(mirror.num_keys(), 0u);
  EXPECT_EQ(Lookup(mirror).chain_tokens, 0u);
  EXPECT_EQ(mirror.keys_per_group(), (std::vector<std::uint64_t>{0, 0}));
  mirror.Store(Attention(0));  // and takes keys again
  EXPECT_EQ(Lookup(mirror).chain_tokens, 16u);
}

// Distinct keys, uniform as digests are (splitmix64 of i).
std::vector<BlockHash> ManyKeys(std::size_t n) {
  std::vector<BlockHash> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t z = (i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    for (int w = 0; w < 4; ++w) {
      std::memcpy(out[i].bytes.data() + 8 * w, &z, 8);
      z = z * 0x9e3779b97f4a7c15ull + 1;
    }
  }
  return out;
}

TEST(ResidencyMirrorGrowthTest, MemoryFollowsTheKeysHeld) {
  ResidencyMirror empty(testing::FullAndRecurrent16(), 1'000'000);
  EXPECT_EQ(empty.table_keys(), ResidencyMirror::kInitialKeys);
  EXPECT_LT(empty.MemoryBytes(), std::size_t{1} << 20);  // not 100 MB

  // 3000 keys: the tables grow (1024, 2048, 4096) and forget none; the
  // chain of every key from the first is found.
  ResidencyMirror mirror(testing::FullAndRecurrent16(), 1'000'000);
  const std::vector<BlockHash> keys = ManyKeys(3000);
  for (const BlockHash& k : keys)
    mirror.Store({.hash = k, .group = GroupId{0}});
  EXPECT_EQ(mirror.table_keys(), 4096u);
  EXPECT_EQ(mirror.evicted_keys(), 0u);
  EXPECT_EQ(mirror.num_keys(), 3000u);
  EXPECT_EQ(mirror.FindLongestHit(keys, 16 * 3000).chain_tokens, 16u * 3000);
  mirror.Clear();
  EXPECT_EQ(mirror.table_keys(), ResidencyMirror::kInitialKeys);
  EXPECT_EQ(mirror.num_keys(), 0u);
}

TEST(ResidencyMirrorGrowthTest, TheLeastRecentlyStoredGoesAcrossAGrowth) {
  ResidencyMirror mirror(testing::FullAndRecurrent16(), 1500);
  const std::vector<BlockHash> keys = ManyKeys(1600);
  for (const BlockHash& k : keys)
    mirror.Store({.hash = k, .group = GroupId{0}});
  EXPECT_EQ(mirror.table_keys(), 1500u);  // the capacity, not 2048
  EXPECT_EQ(mirror.evicted_keys(), 100u);
  // The first 100 stored went, oldest first: the rest is held.
  const std::span<const BlockHash> rest(keys.begin() + 100, keys.end());
  EXPECT_EQ(mirror.FindLongestHit(rest, 16 * 1500).chain_tokens, 16u * 1500);
  EXPECT_EQ(mirror.FindLongestHit(keys, 16 * 1600).chain_tokens, 0u);
  mirror.Clear();
  EXPECT_EQ(mirror.evicted_keys(), 100u);  // counted across tables
}

}  // namespace
}  // namespace hkv::internal
