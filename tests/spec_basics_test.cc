// Spec §8.1 vectors V-01 ... V-19, V-23 ... V-25: single-group basics.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace hkv {
namespace {

using ::hkv::testing::AllocateAndCommit;
using ::hkv::testing::Concat;
using ::hkv::testing::Ids;
using ::hkv::testing::Range;
using ::hkv::testing::Repeat;
using ::hkv::testing::Table;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

class SpecBasicsTest : public ::testing::Test {
 protected:
  void Build(std::uint32_t num_blocks, std::uint32_t block_size = 16,
             Speculation speculation = Speculation::kNone,
             PrefixCaching caching = PrefixCaching::kEnabled) {
    cache_ = std::make_unique<internal::CacheCore>(CacheConfig{
        .groups = {{.block_size = block_size, .speculation = speculation}},
        .num_blocks = num_blocks,
        .keys = {.hash_unit = block_size},
        .caching = caching});
  }

  Request Make(std::uint64_t id, const std::vector<TokenId>& tokens,
               CacheRead read = CacheRead::kAllowed) {
    return Request({.id = RequestId{id}, .cache_read = read}, tokens,
                   cache_->key_scheme());
  }

  // Looks the request up and allocates all its uncomputed tokens.
  std::optional<std::vector<BlockId>> Admit(const Request& r,
                                            CacheHit* hit_out = nullptr) {
    CacheHit hit = cache_->Lookup(r);
    if (hit_out) *hit_out = hit;
    return AllocateAndCommit(*cache_, r, r.num_tokens() - hit.num_tokens, &hit);
  }

  internal::BlockPool& pool() { return cache_->pool(); }

  internal::PrefixKey Key(const Request& r, std::size_t unit) {
    return {.hash = r.keys()[unit], .group = GroupId{0}};
  }

  std::vector<TokenId> Prefix48() {
    return Concat(Concat(Repeat(0, 16), Repeat(1, 16)), Repeat(2, 16));
  }

  std::unique_ptr<internal::CacheCore> cache_;
};

TEST_F(SpecBasicsTest, V01_AllocationHashesFullBlocksOnly) {
  Build(11);
  const Request r0 = Make(0, Concat(Prefix48(), Repeat(3, 7)));
  EXPECT_THAT(*Admit(r0), ElementsAreArray(Ids({1, 2, 3, 4})));
  EXPECT_EQ(r0.keys().size(), 3u);
  for (std::uint32_t i = 1; i <= 3; ++i) {
    EXPECT_EQ(pool().primary_key(BlockId{i}), Key(r0, i - 1));
    EXPECT_EQ(pool().ref_count(BlockId{i}), 1u);
  }
  EXPECT_EQ(pool().primary_num_tokens(BlockId{4}), 0u);
  EXPECT_TRUE(cache_->CheckInvariants());
}

TEST_F(SpecBasicsTest, V02_to_V05_HitsAndFreeQueueOrder) {
  Build(11);
  const Request r0 = Make(0, Concat(Prefix48(), Repeat(3, 7)));
  Admit(r0);
  const Request r1 = Make(1, Concat(Prefix48(), Repeat(3, 5)));
  CacheHit hit;
  EXPECT_THAT(*Admit(r1, &hit), ElementsAreArray(Ids({5})));  // V-02
  EXPECT_EQ(hit.num_tokens, 48u);
  EXPECT_THAT(hit.blocks[0], ElementsAreArray(Ids({1, 2, 3})));
  for (std::uint32_t i = 1; i <= 3; ++i)
    EXPECT_EQ(pool().ref_count(BlockId{i}), 2u);
  EXPECT_EQ(pool().num_free_blocks(), 5u);

  cache_->Free(r0.id());  // V-03
  cache_->Free(r1.id());
  EXPECT_THAT(pool().FreeQueueSnapshot(),
              ElementsAreArray(Ids({5, 4, 6, 7, 8, 9, 10, 3, 2, 1})));

  const Request r2 = Make(2, Concat(Prefix48(), Repeat(3, 6)));  // V-04
  EXPECT_THAT(*Admit(r2, &hit), ElementsAreArray(Ids({5})));
  EXPECT_THAT(hit.blocks[0], ElementsAreArray(Ids({1, 2, 3})));
  EXPECT_EQ(pool().num_free_blocks(), 6u);

  cache_->Free(r2.id());  // V-05
  const Request r3 = Make(3, Repeat(99, 160));
  EXPECT_THAT(*Admit(r3, &hit),
              ElementsAreArray(Ids({5, 4, 6, 7, 8, 9, 10, 3, 2, 1})));
  EXPECT_EQ(hit.num_tokens, 0u);
  EXPECT_EQ(pool().num_free_blocks(), 0u);
  EXPECT_TRUE(cache_->CheckInvariants());
}

TEST_F(SpecBasicsTest, V06_V07_DecodeHashesBlocksAsTheyFill) {
  Build(11);
  Request r = Make(0, Concat(Prefix48(), Repeat(3, 7)));
  EXPECT_THAT(*Admit(r), ElementsAreArray(Ids({1, 2, 3, 4})));
  r.AppendTokens(Repeat(4, 4));  // 59 tokens
  EXPECT_THAT(*AllocateAndCommit(*cache_, r, 4, nullptr, 55), IsEmpty());
  EXPECT_EQ(pool().primary_num_tokens(BlockId{4}), 0u);
  r.AppendTokens(Repeat(5, 19));  // 78 tokens
  EXPECT_EQ(AllocateAndCommit(*cache_, r, 19, nullptr, 59)->size(), 1u);
  EXPECT_EQ(pool().primary_num_tokens(BlockId{4}), 64u);
  EXPECT_EQ(pool().primary_num_tokens(Table(*cache_, r.id()).back()), 0u);
}

TEST_F(SpecBasicsTest, V08_EvictionFollowsTheFreeQueue) {
  Build(11);
  const Request r0 = Make(0, Range(0, 87));
  const Request r1 = Make(1, Range(87, 135));
  EXPECT_EQ(Admit(r0)->size(), 6u);
  EXPECT_EQ(Admit(r1)->size(), 3u);
  EXPECT_EQ(pool().num_free_blocks(), 1u);
  cache_->Free(r0.id());
  EXPECT_THAT(pool().FreeQueueSnapshot(),
              ElementsAreArray(Ids({6, 10, 5, 4, 3, 2, 1})));
  cache_->Free(r1.id());
  EXPECT_THAT(pool().FreeQueueSnapshot(),
              ElementsAreArray(Ids({6, 10, 5, 4, 3, 2, 1, 9, 8, 7})));
  CacheHit hit;
  const Request r2 = Make(2, Range(0, 35));
  EXPECT_THAT(*Admit(r2, &hit), ElementsAreArray(Ids({6})));
  EXPECT_EQ(hit.num_tokens, 32u);
  EXPECT_THAT(hit.blocks[0], ElementsAreArray(Ids({1, 2})));
  EXPECT_EQ(pool().num_free_blocks(), 7u);
}

TEST_F(SpecBasicsTest, V09_ReusedBlockLosesItsKey) {
  Build(2);
  const Request r0 = Make(0, Range(0, 16));
  EXPECT_THAT(*Admit(r0), ElementsAreArray(Ids({1})));
  EXPECT_EQ(pool().primary_num_tokens(BlockId{1}), 16u);
  cache_->Free(r0.id());
  EXPECT_THAT(*Admit(Make(1, Range(0, 15))), ElementsAreArray(Ids({1})));
  EXPECT_EQ(pool().primary_num_tokens(BlockId{1}), 0u);
  EXPECT_EQ(pool().num_keys(), 0u);
}

TEST_F(SpecBasicsTest, V10_HitBlockIsProtectedFromItsOwnAllocation) {
  Build(3);
  const Request r0 = Make(0, Range(0, 16));
  const Request r1 = Make(1, Range(16, 32));
  EXPECT_THAT(*Admit(r0), ElementsAreArray(Ids({1})));
  EXPECT_THAT(*Admit(r1), ElementsAreArray(Ids({2})));
  cache_->Free(r0.id());
  cache_->Free(r1.id());
  CacheHit hit;
  EXPECT_THAT(*Admit(Make(2, Range(0, 32)), &hit), ElementsAreArray(Ids({2})));
  EXPECT_EQ(hit.num_tokens, 16u);
  EXPECT_THAT(hit.blocks[0], ElementsAreArray(Ids({1})));
}

TEST_F(SpecBasicsTest, V11_CachingDisabledNeverHitsAndRunsOut) {
  Build(5, 4, Speculation::kNone, PrefixCaching::kDisabled);
  const Request r0 = Make(0, Range(0, 10));
  EXPECT_EQ(Admit(r0)->size(), 3u);
  cache_->Free(r0.id());
  CacheHit hit;
  EXPECT_EQ(Admit(Make(1, Range(0, 16)), &hit)->size(), 4u);
  EXPECT_EQ(hit.num_tokens, 0u);
  EXPECT_FALSE(Admit(Make(2, Range(0, 4))).has_value());
  EXPECT_TRUE(cache_->CheckInvariants());
}

TEST_F(SpecBasicsTest, V12_SkipReadingStillWritesDuplicates) {
  Build(11);
  const Request r0 = Make(0, Concat(Prefix48(), Repeat(3, 7)));
  Admit(r0);
  const Request r1 =
      Make(1, Concat(Prefix48(), Repeat(3, 7)), CacheRead::kSkipped);
  CacheHit hit;
  const std::vector<BlockId> blocks = *Admit(r1, &hit);
  EXPECT_EQ(hit.num_tokens, 0u);
  EXPECT_THAT(blocks, ElementsAreArray(Ids({5, 6, 7, 8})));
  for (std::uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(pool().primary_key(blocks[i]),
              pool().primary_key(BlockId{i + 1}));
    EXPECT_EQ(pool().ref_count(blocks[i]), 1u);
    // First-inserted wins.
    EXPECT_EQ(pool().FindCached(Key(r1, i)), BlockId{i + 1});
  }
}

TEST_F(SpecBasicsTest, V13_ShortPoolChangesNothing) {
  Build(11);
  const std::vector<TokenId> p0 = Range(0, 48);
  const Request r0 = Make(0, p0);
  Admit(r0);
  const Request r1 = Make(1, Concat(p0, p0));
  CacheHit hit;
  EXPECT_EQ(Admit(r1, &hit)->size(), 3u);
  EXPECT_EQ(hit.num_tokens, 48u);
  cache_->Free(r1.id());
  Admit(Make(2, Repeat(7, 32)));
  EXPECT_EQ(pool().num_free_blocks(), 5u);
  const Request r3 = Make(3, Concat(Concat(p0, p0), p0));
  hit = cache_->Lookup(r3);
  EXPECT_EQ(hit.num_tokens, 96u);
  ASSERT_EQ(hit.blocks[0].size(), 6u);
  EXPECT_FALSE(AllocateAndCommit(*cache_, r3, 48, &hit).has_value());
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(pool().ref_count(hit.blocks[0][i]), i < 3 ? 1u : 0u);
  }
  EXPECT_EQ(pool().num_free_blocks(), 5u);
  EXPECT_FALSE(cache_->HoldsBlocks(r3.id()));
  EXPECT_TRUE(cache_->CheckInvariants());
}

TEST_F(SpecBasicsTest, V14_ResetOnlyWhenNothingIsHeld) {
  Build(11);
  const Request r0 = Make(0, Concat(Prefix48(), Repeat(3, 7)));
  Admit(r0);
  const Request r1 = Make(1, Concat(Prefix48(), Repeat(4, 7)));
  CacheHit hit;
  EXPECT_THAT(*Admit(r1, &hit), ElementsAreArray(Ids({5})));
  EXPECT_EQ(hit.num_tokens, 48u);
  EXPECT_FALSE(cache_->ResetPrefixCache());
  EXPECT_GT(pool().num_keys(), 0u);
  cache_->Free(r0.id());
  cache_->Free(r1.id());
  EXPECT_TRUE(cache_->ResetPrefixCache());
  EXPECT_EQ(pool().num_keys(), 0u);
  for (std::uint32_t i = 1; i < 11; ++i)
    EXPECT_EQ(pool().primary_num_tokens(BlockId{i}), 0u);
  EXPECT_TRUE(cache_->TakeStats().reset);
}

// The vector's blocks 0..3 are ids 1..4 here: id 0 is the null block, which
// is never cached.
TEST(PrefixIndexTest, V15_DuplicateKeysFirstInsertedWins) {
  internal::PrefixIndex index(5);
  const auto key = [](std::uint8_t n) {
    internal::PrefixKey k;
    k.hash.bytes[0] = n;
    return k;
  };
  const internal::PrefixKey h0 = key(0), h1 = key(1), h2 = key(2);
  index.Insert(h0, BlockId{1});
  index.Insert(h1, BlockId{2});
  index.Insert(h2, BlockId{3});
  index.Insert(h0, BlockId{4});
  EXPECT_EQ(index.size(), 3u);
  EXPECT_EQ(index.Find(h0), BlockId{1});
  EXPECT_TRUE(index.Erase(h1, BlockId{2}));
  EXPECT_FALSE(index.Find(h1).has_value());
  EXPECT_TRUE(index.Erase(h0, BlockId{1}));
  EXPECT_EQ(index.Find(h0), BlockId{4});
  EXPECT_FALSE(index.Erase(h0, BlockId{1}));  // non-matching block: no-op
  EXPECT_TRUE(index.Erase(h2, BlockId{3}));
  EXPECT_TRUE(index.Erase(h0, BlockId{4}));
  EXPECT_EQ(index.size(), 0u);
}

TEST_F(SpecBasicsTest, V16_CommitIsIncremental) {
  Build(5, 4);
  const Request r = Make(0, Range(0, 14));
  ASSERT_TRUE(cache_->Allocate(r, {.num_new_tokens = 14}).has_value());
  cache_->Commit(r, 8);
  EXPECT_EQ(pool().num_keys(), 2u);
  cache_->Commit(r, 12);
  EXPECT_EQ(pool().num_keys(), 3u);
}

TEST(BlockPoolTest, V17_EveryGroupCachesUnderItsOwnKey) {
  internal::BlockPool pool(10, internal::Caching::kEnabled);
  const KeyScheme scheme = *MakeKeyScheme({.hash_unit = 4});
  const Request r({.id = RequestId{0}}, testing::Range(0, 14), scheme);
  std::vector<BlockId> blocks;
  pool.Allocate(5, blocks);
  const auto key = [&](std::size_t unit, std::uint32_t group) {
    return internal::PrefixKey{.hash = r.keys()[unit], .group = GroupId{group}};
  };
  for (std::uint32_t i = 0; i < 2; ++i)
    pool.CacheFull(blocks[i], key(i, 0), 4 * (i + 1));
  for (std::uint32_t i = 0; i < 3; ++i)
    pool.CacheFull(blocks[2 + i], key(i, 1), 4 * (i + 1));
  EXPECT_EQ(pool.num_keys(), 5u);
  EXPECT_FALSE(pool.FindCached(key(2, 0)).has_value());
  EXPECT_TRUE(pool.FindCached(key(2, 1)).has_value());
  for (std::size_t unit : {0u, 1u}) {
    EXPECT_TRUE(pool.FindCached(key(unit, 0)) && pool.FindCached(key(unit, 1)));
  }
}

TEST_F(SpecBasicsTest, V18_MultimodalItemsEnterTheKeys) {
  Build(11);
  // The spec's placeholder token -1 is written here as 151935.
  constexpr TokenId kImage = 151935;
  std::vector<TokenId> tokens = Concat(Range(0, 10), Repeat(kImage, 6));
  tokens = Concat(tokens, Concat(Concat(Repeat(kImage, 4), Range(10, 20)),
                                 Repeat(kImage, 2)));
  tokens = Concat(tokens, Repeat(kImage, 16));
  tokens = Concat(tokens, Concat(Repeat(kImage, 7), Repeat(100, 4)));
  const KeyExtras extras = {
      .multimodal = {{"aaa", 11, 10}, {"bbb", 30, 18}, {"ccc", 48, 7}}};
  Request r({.id = RequestId{0}, .extras = extras}, tokens,
            cache_->key_scheme());
  const KeyScheme& s = cache_->key_scheme();
  const std::span<const TokenId> t(tokens);
  // (("mm", identifier, offset - unit start), ...) per unit.
  const auto mm = ExtraKey::Multimodal;
  const std::vector<ExtraKey> e0 = {mm("aaa", 11)},
                              e1 = {mm("aaa", -5), mm("bbb", 14)},
                              e2 = {mm("bbb", -2)}, e3 = {mm("ccc", 0)};
  const BlockHash h0 = HashUnit(s, s.seed_key, t.subspan(0, 16), e0);
  const BlockHash h1 = HashUnit(s, h0, t.subspan(16, 16), e1);
  const BlockHash h2 = HashUnit(s, h1, t.subspan(32, 16), e2);
  ASSERT_EQ(r.keys().size(), 3u);
  EXPECT_EQ(r.keys()[0], h0);
  EXPECT_EQ(r.keys()[1], h1);
  EXPECT_EQ(r.keys()[2], h2);
  r.AppendTokens(Repeat(8, 5));
  const std::vector<TokenId> unit3 = Concat(
      Range(0, 0),
      Concat(std::vector<TokenId>(t.begin() + 48, t.end()), Repeat(8, 5)));
  EXPECT_EQ(r.keys()[3], HashUnit(s, h2, unit3, e3));

  Admit(r);
  Request sibling(
      {.id = RequestId{1}, .extras = extras},
      Concat(std::vector<TokenId>(t.begin(), t.begin() + 48), Repeat(9, 3)),
      cache_->key_scheme());
  EXPECT_EQ(cache_->Lookup(sibling).num_tokens, 48u);
}

TEST_F(SpecBasicsTest, V19_CacheSaltIsolatesTheChain) {
  Build(11);
  const std::vector<TokenId> tokens = Concat(Range(0, 48), Repeat(5, 11));
  const auto salted = [&](std::uint64_t id, std::string salt) {
    return Request(
        {.id = RequestId{id}, .extras = {.cache_salt = std::move(salt)}},
        tokens, cache_->key_scheme());
  };
  const Request r0 = salted(0, "salt1");
  const KeyScheme& s = cache_->key_scheme();
  const std::vector<ExtraKey> salt = {ExtraKey::CacheSalt("salt1")};
  const BlockHash h0 =
      HashUnit(s, s.seed_key, std::span(tokens).first(16), salt);
  EXPECT_EQ(r0.keys()[0], h0);
  EXPECT_EQ(r0.keys()[1],
            HashUnit(s, h0, std::span(tokens).subspan(16, 16), {}));
  Admit(r0);
  EXPECT_EQ(cache_->Lookup(salted(1, "salt1")).num_tokens, 48u);
  EXPECT_EQ(cache_->Lookup(salted(2, "salt2")).num_tokens, 0u);
}

TEST_F(SpecBasicsTest, V23_EagleDropsOneBlock) {
  Build(10, 16, Speculation::kEagle);
  const Request r0 = Make(0, Repeat(0, 48));
  Admit(r0);
  const CacheHit hit = cache_->Lookup(Make(1, Repeat(0, 48)));
  EXPECT_EQ(hit.num_tokens, 16u);  // cap 47 -> 2 full blocks, drop one
  EXPECT_EQ(hit.blocks[0].size(), 1u);
}

TEST_F(SpecBasicsTest, V24_EagleDropsOneBlockOfAPartialPrompt) {
  Build(10, 16, Speculation::kEagle);
  Admit(Make(0, Repeat(0, 37)));
  const CacheHit hit = cache_->Lookup(Make(1, Repeat(0, 37)));
  EXPECT_EQ(hit.num_tokens, 16u);
  EXPECT_EQ(hit.blocks[0].size(), 1u);
}

TEST(SlidingWindowSpecTest, V25_EagleWindowLosesItsLastBlock) {
  internal::CacheCore cache(
      CacheConfig{.groups = {{.kind = GroupKind::kSlidingWindow,
                              .block_size = 16,
                              .speculation = Speculation::kEagle,
                              .sliding_window = 16}},
                  .num_blocks = 10,
                  .keys = {.hash_unit = 16}});
  const Request r0({.id = RequestId{0}}, testing::Repeat(0, 37),
                   cache.key_scheme());
  AllocateAndCommit(cache, r0, 37);
  const Request r1({.id = RequestId{1}}, testing::Repeat(0, 37),
                   cache.key_scheme());
  CacheHit hit = cache.Lookup(r1);
  EXPECT_EQ(hit.num_tokens, 16u);
  EXPECT_EQ(hit.blocks[0].size(), 1u);
  const BlockId block0 = Table(cache, r0.id())[0];
  cache.pool().EvictKeys(block0);
  hit = cache.Lookup(r1);
  EXPECT_EQ(hit.num_tokens, 0u);
  EXPECT_THAT(hit.blocks[0], IsEmpty());
}

}  // namespace
}  // namespace hkv
