// The public CacheManager: config validation, misuse, copy-on-write through
// the scheduler-facing calls, stats and usage.
#include "hkv/cache_manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace hkv {
namespace {

using ::hkv::testing::Range;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

CacheManager Make(std::uint32_t block, std::uint32_t unit,
                  std::uint32_t num_blocks) {
  Result<CacheManager> cache =
      CacheManager::Create({.groups = {{.block_size = block}},
                            .num_blocks = num_blocks,
                            .keys = {.hash_unit = unit}});
  EXPECT_TRUE(cache.has_value());
  return std::move(*cache);
}

TEST(CacheManagerTest, RejectsBadConfigsWithANamedReason) {
  const auto error = [](const CacheConfig& c) {
    return c.Validate().error().message;
  };
  EXPECT_THAT(error({.num_blocks = 8}), HasSubstr("at least one group"));
  EXPECT_THAT(error({.groups = {{.block_size = 16}}, .num_blocks = 1}),
              HasSubstr("num_blocks"));
  EXPECT_THAT(
      error({.groups = {{.block_size = 24}},
             .num_blocks = 8,
             .keys = {.hash_unit = 16}}),
      HasSubstr(
          "block size 24 is not a positive multiple of the hash unit 16"));
  EXPECT_THAT(
      error({.groups = {{.kind = GroupKind::kSlidingWindow, .block_size = 16}},
             .num_blocks = 8}),
      HasSubstr("sliding window"));
  EXPECT_FALSE(
      CacheManager::Create({.groups = {{.block_size = 0}}, .num_blocks = 8}));
}

TEST(CacheManagerTest, MisuseThrowsAndChangesNothing) {
  CacheManager cache = Make(16, 16, 8);
  const Request r({.id = RequestId{1}}, Range(0, 40), cache.key_scheme());
  EXPECT_THROW(cache.Free(r.id()), UsageError);
  EXPECT_THROW(cache.Commit(r, 16), UsageError);
  EXPECT_THROW((void)cache.Allocate(r, {}), UsageError);  // nothing to allocate
  const KeyScheme other = *MakeKeyScheme({.hash_unit = 8});
  const Request foreign({.id = RequestId{2}}, Range(0, 40), other);
  EXPECT_THROW((void)cache.Lookup(foreign), UsageError);
  EXPECT_EQ(cache.num_free_blocks(), 7u);

  ASSERT_TRUE(cache.Allocate(r, {.num_new_tokens = 20}));
  EXPECT_THROW(cache.Commit(r, 40), UsageError);  // beyond the 2 blocks held
  CacheHit hit{.num_tokens = 16, .blocks = {{BlockId{1}}}};
  EXPECT_THROW(
      (void)cache.Allocate(
          r, {.num_computed_tokens = 20, .num_new_tokens = 1, .hit = &hit}),
      UsageError);  // a running request cannot adopt a hit
  EXPECT_EQ(cache.num_free_blocks(), 5u);
  cache.Free(r.id());
  EXPECT_THROW(cache.Free(r.id()), UsageError);  // double free
}

TEST(CacheManagerTest, StaleHitIsRefused) {
  CacheManager cache = Make(16, 16, 3);
  const Request r0({.id = RequestId{0}}, Range(0, 33), cache.key_scheme());
  ASSERT_TRUE(cache.Allocate(r0, {.num_new_tokens = 32}));
  cache.Commit(r0, 32);
  cache.Free(r0.id());
  const Request r1({.id = RequestId{1}}, Range(0, 33), cache.key_scheme());
  const CacheHit hit = cache.Lookup(r1);
  ASSERT_EQ(hit.num_tokens, 32u);
  const Request other({.id = RequestId{2}}, Range(100, 132),
                      cache.key_scheme());
  ASSERT_TRUE(
      cache.Allocate(other, {.num_new_tokens = 32}));  // evicts both blocks
  EXPECT_THROW((void)cache.Allocate(r1, {.num_new_tokens = 1, .hit = &hit}),
               UsageError);
}

TEST(CacheManagerTest, MalformedHitsAreRefused) {
  CacheManager cache = Make(4, 4, 10);
  const Request r0({.id = RequestId{0}}, Range(0, 17), cache.key_scheme());
  ASSERT_TRUE(cache.Allocate(r0, {.num_new_tokens = 17}));
  cache.Commit(r0, 17);
  const Request r1({.id = RequestId{1}}, Range(0, 20), cache.key_scheme());
  const CacheHit hit = cache.Lookup(r1);
  ASSERT_EQ(hit.num_tokens, 16u);
  const std::uint32_t free_blocks = cache.num_free_blocks();
  // A hit is adopted before anything else is computed.
  EXPECT_THROW(
      (void)cache.Allocate(
          r1, {.num_computed_tokens = 2, .num_new_tokens = 2, .hit = &hit}),
      UsageError);
  // Its blocks must cover it.
  const CacheHit empty{.num_tokens = 16, .blocks = {{}}};
  EXPECT_THROW((void)cache.Allocate(r1, {.num_new_tokens = 4, .hit = &empty}),
               UsageError);
  EXPECT_EQ(cache.num_free_blocks(), free_blocks);
  EXPECT_TRUE(cache.Allocate(r1, {.num_new_tokens = 4, .hit = &hit}));
}

// A block evicted after the lookup and keyed again under another prefix is
// caught: the hit no longer matches a fresh lookup.
TEST(CacheManagerTest, HitReKeyedUnderAnotherPrefixIsRefused) {
  CacheManager cache = Make(4, 4, 4);
  const auto run = [&](std::uint64_t id, std::vector<TokenId> tokens) {
    const Request r({.id = RequestId{id}}, tokens, cache.key_scheme());
    const auto n = static_cast<std::uint32_t>(tokens.size());
    EXPECT_TRUE(cache.Allocate(r, {.num_new_tokens = n}));
    cache.Commit(r, n);
    cache.Free(r.id());
  };
  using testing::Concat;
  using testing::Repeat;
  run(0, Concat(Range(0, 4), {100}));
  const Request r1({.id = RequestId{1}}, Concat(Range(0, 4), {101}),
                   cache.key_scheme());
  const CacheHit hit = cache.Lookup(r1);
  ASSERT_EQ(hit.num_tokens, 4u);
  run(2, Concat(Repeat(7, 8), {8}));  // evicts the hit block
  run(3, Concat(Repeat(9, 4), {5}));  // and keys it again
  EXPECT_THROW((void)cache.Allocate(r1, {.num_new_tokens = 1, .hit = &hit}),
               UsageError);
}

TEST(CacheManagerTest, EmptyHitAdoptsNothing) {
  CacheManager cache = Make(4, 4, 10);
  const Request r({.id = RequestId{0}}, Range(0, 8), cache.key_scheme());
  const CacheHit none;
  const std::optional<NewBlocks> placed =
      cache.Allocate(r, {.num_new_tokens = 8, .hit = &none});
  ASSERT_TRUE(placed);
  EXPECT_EQ(placed->blocks[0].size(), 2u);
}

TEST(CacheManagerTest, ComputedTokensBeyondTheBlocksAreRefused) {
  CacheManager cache = Make(4, 4, 10);
  Request r({.id = RequestId{0}}, Range(0, 8), cache.key_scheme());
  ASSERT_TRUE(cache.Allocate(r, {.num_new_tokens = 4}));
  r.AppendTokens(Range(100, 140));
  EXPECT_THROW(
      (void)cache.Allocate(r, {.num_computed_tokens = 40, .num_new_tokens = 1}),
      UsageError);
  EXPECT_EQ(cache.num_free_blocks(), 8u);
}

TEST(CacheManagerTest, RecurrentBlocksAreNeverScaledByDcp) {
  const CacheConfig config{
      .groups = {{.block_size = 4},
                 {.kind = GroupKind::kRecurrent, .block_size = 2}},
      .num_blocks = 10,
      .keys = {.hash_unit = 4},
      .dcp = 2};
  EXPECT_THAT(
      config.Validate().error().message,
      HasSubstr("block size 2 is not a positive multiple of the hash unit 4"));
  EXPECT_EQ(TokensPerBlock(config.groups[0], 2), 8u);
  EXPECT_EQ(TokensPerBlock(config.groups[1], 2), 2u);
}

TEST(CacheManagerTest, RequestsThatSkipReadingAreNotCounted) {
  CacheManager cache = Make(16, 16, 5);
  const Request r({.id = RequestId{0}, .cache_read = CacheRead::kSkipped},
                  Range(0, 40), cache.key_scheme());
  ASSERT_TRUE(cache.Allocate(r, {.num_new_tokens = 40}));
  EXPECT_EQ(cache.TakeStats().requests, 0u);
}

TEST(CacheManagerTest, HitInsideAPageIsCopiedOnWrite) {
  CacheManager cache = Make(4, 2, 10);
  const Request producer({.id = RequestId{0}}, Range(0, 7), cache.key_scheme());
  ASSERT_TRUE(cache.Allocate(producer, {.num_new_tokens = 7}));
  cache.Commit(producer, 7);  // block 1 full, block 2 keyed at 6
  cache.Free(producer.id());

  const Request r({.id = RequestId{1}}, Range(0, 9), cache.key_scheme());
  const CacheHit hit = cache.Lookup(r);
  EXPECT_EQ(hit.num_tokens, 6u);
  EXPECT_THAT(hit.blocks[0], ElementsAre(BlockId{1}, BlockId{2}));
  const std::optional<NewBlocks> placed =
      cache.Allocate(r, {.num_new_tokens = 3, .hit = &hit});
  ASSERT_TRUE(placed);
  const BlockId copy = placed->blocks[0][0];
  EXPECT_THAT(cache.block_table(r.id(), GroupId{0}),
              ElementsAre(BlockId{1}, copy, placed->blocks[0][1]));
  EXPECT_THAT(cache.TakeCopies(),
              ElementsAre(BlockCopy{BlockId{2}, copy, GroupId{0}}));
  const std::uint32_t free_while_pinned = cache.num_free_blocks();
  cache.FinishStep();  // the source returns to the free queue, still cached
  EXPECT_EQ(cache.num_free_blocks(), free_while_pinned + 1);
  EXPECT_EQ(cache
                .Lookup(Request({.id = RequestId{2}}, Range(0, 9),
                                cache.key_scheme()))
                .num_tokens,
            6u);
}

TEST(CacheManagerTest, StatsAndUsage) {
  CacheManager cache = Make(16, 16, 5);
  const Request r0({.id = RequestId{0}}, Range(0, 40), cache.key_scheme());
  ASSERT_TRUE(cache.Allocate(r0, {.num_new_tokens = 40}));
  cache.Commit(r0, 40);
  EXPECT_DOUBLE_EQ(cache.usage(), 0.75);
  const Request r1({.id = RequestId{1}}, Range(0, 36), cache.key_scheme());
  const CacheHit hit = cache.Lookup(r1);
  ASSERT_TRUE(cache.Allocate(r1, {.num_new_tokens = 4, .hit = &hit}));
  const PrefixCacheStats stats = cache.TakeStats();
  EXPECT_EQ(stats.requests, 2u);
  EXPECT_EQ(stats.queries, 76u);
  EXPECT_EQ(stats.hits, 32u);
  EXPECT_EQ(cache.TakeStats().requests, 0u);
}

}  // namespace
}  // namespace hkv
