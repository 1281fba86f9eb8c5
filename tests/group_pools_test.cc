// Per-group pools (CacheConfig::group_pool_blocks): each group draws block
// ids from its own range and free queue, evicts only its own blocks, and an
// allocation that one pool cannot serve takes nothing from any pool.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/block_pool.h"
#include "hkv/cache_manager.h"
#include "test_util.h"

namespace hkv {
namespace {

using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Ids;
using testing::Range;

constexpr std::uint32_t kPools[] = {3, 2};

TEST(GroupPoolsTest, PoolsOwnIdRangesAndFreeQueues) {
  internal::BlockPool pool(6, internal::Caching::kEnabled,
                           internal::Events::kDisabled,
                           FreeOrder::kPrependUncached, kPools);
  EXPECT_EQ(pool.num_pools(), 2u);
  EXPECT_EQ(pool.num_free_blocks(0), 3u);
  EXPECT_EQ(pool.num_free_blocks(1), 2u);
  std::vector<BlockId> first;
  pool.Allocate(3, first, 0);
  EXPECT_EQ(first, Ids({1, 2, 3}));
  EXPECT_EQ(pool.num_free_blocks(0), 0u);
  EXPECT_EQ(pool.AllocateOne(1), BlockId{4});
  EXPECT_EQ(pool.PoolOf(BlockId{5}), 1u);
  EXPECT_EQ(pool.PoolOf(kNullBlock), 0u);
  pool.Free(first);
  EXPECT_EQ(pool.num_free_blocks(0), 3u);
  EXPECT_EQ(pool.num_free_blocks(1), 1u);
  EXPECT_TRUE(pool.CheckInvariants());
}

TEST(GroupPoolsTest, AllocationEvictsOnlyItsOwnPool) {
  internal::BlockPool pool(6, internal::Caching::kEnabled,
                           internal::Events::kDisabled,
                           FreeOrder::kPrependUncached, kPools);
  const BlockId cached = pool.AllocateOne(1);
  const internal::PrefixKey key{.hash = {}, .group = GroupId{1}};
  pool.CacheFull(cached, key, 16);
  pool.Free(std::vector<BlockId>{cached});
  std::vector<BlockId> all_of_pool0;
  pool.Allocate(3, all_of_pool0, 0);
  EXPECT_EQ(pool.FindCached(key), cached);  // pool 0 never reused it
  EXPECT_EQ(pool.stats().evicted_blocks, 0u);
}

TEST(GroupPoolsTest, PoolSizesMustAddUpToTheBlocks) {
  EXPECT_THROW(internal::BlockPool(7, internal::Caching::kEnabled,
                                   internal::Events::kDisabled,
                                   FreeOrder::kPrependUncached, kPools),
               UsageError);
  constexpr std::uint32_t kEmptyPool[] = {5, 0};
  EXPECT_THROW(internal::BlockPool(6, internal::Caching::kEnabled,
                                   internal::Events::kDisabled,
                                   FreeOrder::kPrependUncached, kEmptyPool),
               UsageError);
}

CacheConfig TwoPools(std::uint32_t attention, std::uint32_t states) {
  return {.groups = {{.block_size = 4},
                     {.kind = GroupKind::kRecurrent, .block_size = 4}},
          .num_blocks = 1 + attention + states,
          .group_pool_blocks = {attention, states},
          .keys = {.hash_unit = 4}};
}

TEST(GroupPoolsTest, ConfigsNameWhatIsWrong) {
  const auto error = [](const CacheConfig& c) {
    return c.Validate().error().message;
  };
  CacheConfig one_count = TwoPools(4, 4);
  one_count.group_pool_blocks = {8};
  EXPECT_EQ(error(one_count), "group_pool_blocks has 1 counts for 2 groups");
  CacheConfig empty = TwoPools(4, 4);
  empty.group_pool_blocks = {8, 0};
  EXPECT_EQ(error(empty), "group 1: its pool needs at least 1 block");
  CacheConfig short_total = TwoPools(4, 4);
  short_total.num_blocks = 12;
  EXPECT_EQ(error(short_total),
            "num_blocks 12 is not 1 + the per-group pools' blocks (8)");
  EXPECT_TRUE(TwoPools(4, 4).Validate().has_value());
}

TEST(GroupPoolsTest, EachGroupsBlocksComeFromItsPool) {
  Result<CacheManager> cache = CacheManager::Create(TwoPools(6, 4));
  ASSERT_TRUE(cache.has_value());
  const Request r({.id = RequestId{1}}, Range(0, 16), cache->key_scheme());
  ASSERT_TRUE(cache->Allocate(r, {.num_new_tokens = 16}));
  const std::span<const BlockId> attention =
      cache->block_table(RequestId{1}, GroupId{0});
  const std::span<const BlockId> states =
      cache->block_table(RequestId{1}, GroupId{1});
  EXPECT_THAT(std::vector<BlockId>(attention.begin(), attention.end()),
              ElementsAre(BlockId{1}, BlockId{2}, BlockId{3}, BlockId{4}));
  for (BlockId b : states) {  // pool 1: ids 7..10
    if (b != kNullBlock) {
      EXPECT_GE(ToIndex(b), 7u);
    }
  }
  cache->Commit(r, 16);
  cache->FinishStep();
  cache->Free(RequestId{1});
  // A resend hits in both pools.
  const Request again({.id = RequestId{2}}, Range(0, 17), cache->key_scheme());
  const CacheHit hit = cache->Lookup(again);
  EXPECT_EQ(hit.num_tokens, 16u);
  EXPECT_GE(ToIndex(hit.blocks[1].back()), 7u);
}

TEST(GroupPoolsTest, OneDryPoolRefusesTheWholeAllocation) {
  // 16 tokens need 4 attention blocks; the attention pool has 3, while the
  // state pool has room to spare.
  Result<CacheManager> cache = CacheManager::Create(TwoPools(3, 8));
  ASSERT_TRUE(cache.has_value());
  const Request r({.id = RequestId{1}}, Range(0, 16), cache->key_scheme());
  EXPECT_FALSE(cache->Allocate(r, {.num_new_tokens = 16}).has_value());
  EXPECT_EQ(cache->num_free_blocks(), 11u);  // nothing taken from either
  EXPECT_EQ(cache->usage(), 0.0);
  EXPECT_TRUE(cache->Allocate(r, {.num_new_tokens = 12}).has_value());
}

}  // namespace
}  // namespace hkv
