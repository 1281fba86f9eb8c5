// EvictedKeys: the bounded record behind the "evicted" miss cause. Its
// accuracy is checked against the figures its header states, derived there
// from the set size (16 ways) and the number of sets (2 x num_blocks / 16).
#include "core/evicted_keys.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace hkv::internal {
namespace {

// Distinct keys: the counter in the first word, the rest zero (as short
// digests leave them), so the record must hash the whole key.
PrefixKey KeyNumber(std::uint64_t n, std::uint32_t group = 0) {
  PrefixKey key;
  std::memcpy(key.hash.bytes.data(), &n, sizeof n);
  key.group = GroupId{group};
  return key;
}

TEST(EvictedKeysTest, RemembersAKeyUntilItIsRegisteredAgain) {
  EvictedKeys evicted(64);
  EXPECT_FALSE(evicted.Contains(KeyNumber(1)));
  evicted.Remember(KeyNumber(1));
  EXPECT_TRUE(evicted.Contains(KeyNumber(1)));
  EXPECT_FALSE(evicted.Contains(KeyNumber(2)));
  EXPECT_FALSE(evicted.Contains(KeyNumber(1, 1)));  // same hash, other group
  evicted.Forget(KeyNumber(1));
  EXPECT_FALSE(evicted.Contains(KeyNumber(1)));
  evicted.Forget(KeyNumber(1));  // forgetting twice is a no-op
  evicted.Remember(KeyNumber(1));
  evicted.Clear();
  EXPECT_FALSE(evicted.Contains(KeyNumber(1)));
}

TEST(EvictedKeysTest, IsEmptyUntilAKeyIsRememberedAndOnceAllAreForgotten) {
  EvictedKeys evicted(8);  // one set of 16 ways
  EXPECT_TRUE(evicted.empty());
  evicted.Forget(KeyNumber(1));  // nothing to forget
  EXPECT_TRUE(evicted.empty());
  for (std::uint64_t n = 0; n < 20; ++n) evicted.Remember(KeyNumber(n));
  EXPECT_FALSE(evicted.empty());
  // 20 evictions into 16 ways: 4 to 19 remain; forgetting them empties it.
  for (std::uint64_t n = 0; n < 4; ++n) evicted.Forget(KeyNumber(n));
  EXPECT_FALSE(evicted.empty());
  for (std::uint64_t n = 4; n < 19; ++n) evicted.Forget(KeyNumber(n));
  EXPECT_FALSE(evicted.empty());
  EXPECT_TRUE(evicted.Contains(KeyNumber(19)));
  evicted.Forget(KeyNumber(19));
  EXPECT_TRUE(evicted.empty());
  EXPECT_FALSE(evicted.Contains(KeyNumber(19)));
  evicted.Remember(KeyNumber(3));
  evicted.Clear();
  EXPECT_TRUE(evicted.empty());
  evicted.Remember(KeyNumber(3));
  EXPECT_TRUE(evicted.Contains(KeyNumber(3)));
}

// 8 blocks: one set of 16 ways, so the 17th eviction drops the first.
TEST(EvictedKeysTest, AFullSetDropsItsOldestKey) {
  EvictedKeys evicted(8);
  for (std::uint64_t n = 0; n < 16; ++n) evicted.Remember(KeyNumber(n));
  for (std::uint64_t n = 0; n < 16; ++n)
    EXPECT_TRUE(evicted.Contains(KeyNumber(n)));
  evicted.Remember(KeyNumber(16));
  EXPECT_FALSE(evicted.Contains(KeyNumber(0)));
  for (std::uint64_t n = 1; n <= 16; ++n)
    EXPECT_TRUE(evicted.Contains(KeyNumber(n)));
  // A key registered again frees its way: the next eviction drops nobody.
  evicted.Forget(KeyNumber(5));
  evicted.Remember(KeyNumber(17));
  for (std::uint64_t n = 1; n <= 17; ++n) {
    EXPECT_EQ(evicted.Contains(KeyNumber(n)), n != 5) << n;
  }
}

// After 3 x num_blocks evictions, the header's bounds: a key evicted within
// the last num_blocks / 2 evictions is remembered with probability above
// 99.99 %, one evicted num_blocks ago 99.2 %, 2 num_blocks ago 47 %, and
// never-evicted keys almost never read as evicted (16 / 2^32 each).
TEST(EvictedKeysTest, RemembersRecentEvictionsAtTheStatedRates) {
  constexpr std::uint64_t kBlocks = 1 << 14;
  EvictedKeys evicted(kBlocks);
  const std::uint64_t total = 3 * kBlocks;
  for (std::uint64_t n = 0; n < total; ++n) evicted.Remember(KeyNumber(n));
  // Share remembered among the keys evicted `age` evictions ago, over a
  // window of kBlocks / 8 ages.
  const auto remembered = [&](std::uint64_t age) {
    std::uint64_t hits = 0;
    for (std::uint64_t a = age; a < age + kBlocks / 8; ++a)
      hits += evicted.Contains(KeyNumber(total - 1 - a));
    return static_cast<double>(hits) / (kBlocks / 8);
  };
  EXPECT_GE(remembered(0), 0.9999);
  EXPECT_GE(remembered(kBlocks / 2 - kBlocks / 8), 0.999);
  EXPECT_GE(remembered(kBlocks - kBlocks / 8), 0.98);
  const double old = remembered(2 * kBlocks - kBlocks / 16);
  EXPECT_GT(old, 0.35);
  EXPECT_LT(old, 0.6);
  std::uint64_t false_positives = 0;
  for (std::uint64_t n = total; n < total + 1'000'000; ++n)
    false_positives += evicted.Contains(KeyNumber(n));
  EXPECT_LE(false_positives, 1u);
}

}  // namespace
}  // namespace hkv::internal
