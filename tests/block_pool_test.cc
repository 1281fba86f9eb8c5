// BlockPool: the record of evicted keys the "evicted" miss cause reads, and
// moving a block's keys.
#include "core/block_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace hkv::internal {
namespace {

PrefixKey KeyNumber(std::uint64_t n) {
  PrefixKey key;
  // Spread like a digest's first word, so that homes are uniform.
  const std::uint64_t word = n * 0x9e3779b97f4a7c15ull;
  std::memcpy(key.hash.bytes.data(), &word, sizeof word);
  std::memcpy(key.hash.bytes.data() + 8, &n, sizeof n);
  return key;
}

TEST(BlockPoolTest, EvictionRemembersEveryKeyOfTheBlock) {
  BlockPool pool(2, Caching::kEnabled);  // one usable block
  const BlockId block = pool.AllocateOne();
  ASSERT_TRUE(pool.CachePartial(block, KeyNumber(1), 12));
  ASSERT_TRUE(pool.CachePartial(block, KeyNumber(2), 8));  // an alias
  EXPECT_EQ(pool.KeysOf(block),
            (std::vector<PrefixKey>{KeyNumber(1), KeyNumber(2)}));
  pool.Free(std::vector<BlockId>{block});
  EXPECT_FALSE(pool.WasEvicted(KeyNumber(1)));
  const BlockId reused = pool.AllocateOne();  // evicts both keys
  ASSERT_EQ(reused, block);
  EXPECT_EQ(pool.num_keys(), 0u);
  EXPECT_TRUE(pool.WasEvicted(KeyNumber(1)));
  EXPECT_TRUE(pool.WasEvicted(KeyNumber(2)));
  // Registered again: no longer evicted.
  pool.CacheFull(reused, KeyNumber(2), 16);
  EXPECT_FALSE(pool.WasEvicted(KeyNumber(2)));
  EXPECT_TRUE(pool.WasEvicted(KeyNumber(1)));
  // Keys dropped other than by reuse are not evictions.
  pool.EvictKeys(reused);
  EXPECT_FALSE(pool.WasEvicted(KeyNumber(2)));
  EXPECT_TRUE(pool.CheckInvariants());
}

TEST(BlockPoolTest, MovedKeysKeepTheirOrderAndTokenCount) {
  BlockPool pool(4, Caching::kEnabled);
  const BlockId source = pool.AllocateOne();
  const BlockId destination = pool.AllocateOne();
  pool.CachePartial(source, KeyNumber(1), 12);
  pool.CachePartial(source, KeyNumber(2), 4);
  pool.CachePartial(source, KeyNumber(3), 8);
  pool.MoveKeys(source, destination);
  EXPECT_TRUE(pool.KeysOf(source).empty());
  EXPECT_EQ(pool.primary_key(source), PrefixKey{});
  EXPECT_EQ(pool.KeysOf(destination),
            (std::vector<PrefixKey>{KeyNumber(1), KeyNumber(2), KeyNumber(3)}));
  EXPECT_EQ(pool.primary_num_tokens(destination), 12u);
  for (std::uint64_t n = 1; n <= 3; ++n)
    EXPECT_EQ(pool.FindCached(KeyNumber(n)), destination);
  EXPECT_TRUE(pool.CheckInvariants());
}

}  // namespace
}  // namespace hkv::internal
