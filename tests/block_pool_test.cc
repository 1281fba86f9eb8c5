// BlockPool tables: sized once from num_blocks, so that a long run of
// registrations and evictions never grows them; and the record of evicted
// keys the "evicted" miss cause reads.
#include "core/block_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "key_number.h"

namespace hkv::internal {
namespace {

using testing::KeyNumber;

// Allocates every free block, keys each under a new key, frees them all:
// the second round onwards evicts every key of the round before.
void KeyEveryBlock(BlockPool& pool, std::uint64_t& next_key) {
  std::vector<BlockId> blocks;
  pool.Allocate(pool.num_free_blocks(), blocks);
  for (BlockId b : blocks) pool.CacheFull(b, KeyNumber(next_key++), 16);
  pool.Free(blocks);
}

TEST(BlockPoolTest, TablesAreSizedAtConstructionAndNeverGrow) {
  constexpr std::uint32_t kBlocks = 5000;
  BlockPool pool(kBlocks, Caching::kEnabled);
  const std::size_t bytes = pool.MemoryBytes();
  const std::size_t slots = pool.num_index_slots();
  EXPECT_GE(slots * 3, std::size_t{kBlocks} * 8);  // at most 3/8 full
  std::uint64_t next_key = 0;
  for (int round = 0; round < 6; ++round) KeyEveryBlock(pool, next_key);
  EXPECT_EQ(pool.stats().evicted_blocks, 5u * (kBlocks - 1));
  EXPECT_EQ(pool.num_keys(), kBlocks - 1);
  EXPECT_TRUE(pool.CheckInvariants());
  EXPECT_EQ(pool.num_index_slots(), slots);
  EXPECT_EQ(pool.MemoryBytes(), bytes);
  EXPECT_LE(bytes / kBlocks, 128u);
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

// A pool of 40 blocks each cached under its own key, freed in a shuffled
// order: the free queue holds every block, each to be evicted when taken.
void FillAndFreeShuffled(BlockPool& pool) {
  std::vector<BlockId> blocks;
  pool.Allocate(pool.num_free_blocks(), blocks);
  std::uint64_t key = 0;
  for (BlockId b : blocks) pool.CacheFull(b, KeyNumber(key++), 16);
  std::vector<BlockId> shuffled;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    shuffled.push_back(blocks[(i * 17) % blocks.size()]);  // 17, 40 coprime
  }
  pool.Free(shuffled);
}

// Allocate loads ahead along the free queue while it evicts; an allocation
// of any length, shorter or longer than how far it loads ahead, to the last
// free block, takes the same blocks in the same order as one at a time, and
// evicts each one's key.
TEST(BlockPoolTest, EvictingAllocationsOfAnyLengthTakeTheQueueInOrder) {
  constexpr std::uint32_t kBlocks = 41;  // 40 usable
  for (std::uint32_t n :
       {0u, 1u, 2u, 7u, 8u, 9u, 15u, 16u, 17u, 24u, 25u, 39u, 40u}) {
    BlockPool pool(kBlocks, Caching::kEnabled);
    BlockPool twin(kBlocks, Caching::kEnabled);
    FillAndFreeShuffled(pool);
    FillAndFreeShuffled(twin);
    std::vector<BlockId> taken;
    pool.Allocate(n, taken);
    std::vector<BlockId> one_by_one;
    for (std::uint32_t i = 0; i < n; ++i)
      one_by_one.push_back(twin.AllocateOne());
    EXPECT_EQ(taken, one_by_one) << n << " blocks";
    EXPECT_EQ(pool.num_free_blocks(), kBlocks - 1 - n);
    EXPECT_EQ(pool.num_keys(), kBlocks - 1 - n);
    EXPECT_EQ(pool.stats().evicted_blocks, n);
    for (BlockId b : taken) EXPECT_TRUE(pool.KeysOf(b).empty());
    EXPECT_TRUE(pool.CheckInvariants());
  }
}

// NumLeadingHeldBy checks sixteen consecutive ids at once where it can: a
// break anywhere, inside such a run or not, in ascending, descending or
// scattered ids, ends the count at the same block as one at a time.
TEST(BlockPoolTest, LeadingBlocksHeldByAllStopAtTheFirstThatIsNot) {
  BlockPool pool(100, Caching::kEnabled);
  std::vector<BlockId> held;
  pool.Allocate(40, held);  // ids 1..40, each referenced once
  pool.TouchAll(held);      // twice
  std::vector<BlockId> descending(held.rbegin(), held.rend());
  std::vector<BlockId> scattered;
  for (std::size_t i = 0; i < held.size(); ++i) {
    scattered.push_back(held[(i * 7) % held.size()]);  // 7, 40 coprime
  }
  for (const std::vector<BlockId>& ids : {held, descending, scattered}) {
    EXPECT_EQ(pool.NumLeadingHeldBy(ids, 2), 40u);
    EXPECT_EQ(pool.NumLeadingHeldBy(ids, 1), 0u);
    EXPECT_EQ(pool.NumLeadingHeldBy({}, 2), 0u);
    for (std::size_t at : {0u, 5u, 15u, 16u, 20u, 31u, 32u, 39u}) {
      std::vector<BlockId> broken = ids;
      broken[at] = kNullBlock;
      EXPECT_EQ(pool.NumLeadingHeldBy(broken, 2), at);
      const std::vector<BlockId> once{ids[at]};
      pool.Free(once);  // referenced once now
      EXPECT_EQ(pool.NumLeadingHeldBy(ids, 2), at);
      pool.Touch(ids[at]);
    }
  }
}

}  // namespace
}  // namespace hkv::internal
