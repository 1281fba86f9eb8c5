// Spec §8.2 vectors V-26 ... V-33 (coarse hybrid coordinator) and V-70.
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
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

GroupSpec Full() { return {.block_size = 16}; }
GroupSpec Window(std::uint32_t w) {
  return {
      .kind = GroupKind::kSlidingWindow, .block_size = 16, .sliding_window = w};
}
GroupSpec Eagle(GroupSpec spec) {
  spec.speculation = Speculation::kEagle;
  return spec;
}

class HybridTest : public ::testing::Test {
 protected:
  void Build(std::vector<GroupSpec> groups, std::uint32_t num_blocks) {
    cache_ = std::make_unique<internal::CacheCore>(
        CacheConfig{.groups = std::move(groups),
                    .num_blocks = num_blocks,
                    .keys = {.hash_unit = 16}});
  }
  Request Make(std::uint64_t id, const std::vector<TokenId>& tokens) {
    return Request({.id = RequestId{id}}, tokens, cache_->key_scheme());
  }
  // Allocates and commits the whole prompt; returns the new blocks per group.
  std::vector<std::vector<BlockId>> Admit(const Request& r,
                                          const CacheHit& hit) {
    std::optional<NewBlocks> placed = cache_->Allocate(
        r, {.num_new_tokens = r.num_tokens() - hit.num_tokens, .hit = &hit});
    EXPECT_TRUE(placed.has_value());
    cache_->Commit(r, r.num_tokens());
    return placed ? placed->blocks : std::vector<std::vector<BlockId>>{};
  }
  std::vector<std::vector<BlockId>> Admit(const Request& r) {
    return Admit(r, cache_->Lookup(r));
  }

  std::unique_ptr<internal::CacheCore> cache_;
};

std::vector<TokenId> Prefix48() {
  return Concat(Concat(Repeat(0, 16), Repeat(1, 16)), Repeat(2, 16));
}

TEST_F(HybridTest, V26_V27_EveryGroupHasItsOwnBlocksAndKeys) {
  Build({Full(), Window(32), Window(32)}, 21);
  const Request r0 = Make(0, Concat(Prefix48(), Repeat(3, 7)));
  EXPECT_THAT(Admit(r0), ElementsAre(Ids({1, 2, 3, 4}), Ids({5, 6, 7, 8}),
                                     Ids({9, 10, 11, 12})));
  for (std::uint32_t g = 0; g < 3; ++g) {
    for (std::uint32_t i = 0; i < 3; ++i) {
      EXPECT_EQ(
          cache_->pool().primary_key(BlockId{4 * g + i + 1}),
          (internal::PrefixKey{.hash = r0.keys()[i], .group = GroupId{g}}));
    }
  }
  const Request r1 = Make(1, Concat(Prefix48(), Repeat(3, 5)));
  const CacheHit hit = cache_->Lookup(r1);
  EXPECT_EQ(hit.num_tokens, 48u);
  EXPECT_THAT(hit.blocks,
              ElementsAre(Ids({1, 2, 3}), Ids({0, 6, 7}), Ids({0, 10, 11})));
  EXPECT_THAT(Admit(r1, hit), ElementsAre(Ids({13}), Ids({14}), Ids({15})));
  EXPECT_TRUE(cache_->CheckInvariants());
}

struct EvictionCase {
  std::string name;
  std::vector<std::pair<std::vector<std::uint32_t>, std::uint32_t>> evictions;
  std::uint32_t expected_blocks;
};

class CoarseEvictionTest : public HybridTest,
                           public ::testing::WithParamInterface<EvictionCase> {
};

// V-28: [FA, SWA(32), SWA(32)], 55-token prompt cached, keys dropped, then
// the same prompt looked up.
TEST_P(CoarseEvictionTest, V28_HitAfterEvictions) {
  Build({Full(), Window(32), Window(32)}, 21);
  const Request r0 = Make(0, Concat(Prefix48(), Repeat(3, 7)));
  Admit(r0);
  for (const auto& [groups, index] : GetParam().evictions) {
    for (std::uint32_t g : groups) {
      cache_->pool().EvictKeys(cache_->block_table(r0.id(), GroupId{g})[index]);
    }
  }
  EXPECT_EQ(
      cache_->Lookup(Make(1, Concat(Prefix48(), Repeat(3, 7)))).num_tokens,
      16 * GetParam().expected_blocks);
}

INSTANTIATE_TEST_SUITE_P(
    Vectors, CoarseEvictionTest,
    ::testing::Values(
        EvictionCase{"WindowBlock0", {{{1, 2}, 0}}, 3},
        EvictionCase{"FullBlock0", {{{0}, 0}}, 0},
        EvictionCase{"LastInAll", {{{0, 1, 2}, 2}}, 2},
        EvictionCase{"FullLast", {{{0}, 2}}, 2},
        EvictionCase{"Window1Last", {{{1}, 2}}, 2},
        EvictionCase{"Window2Last", {{{2}, 2}}, 2},
        EvictionCase{"FullLastAndWindowBlock0", {{{0}, 2}, {{1, 2}, 0}}, 0}),
    [](const ::testing::TestParamInfo<EvictionCase>& test) {
      return test.param.name;
    });

TEST_F(HybridTest, V29_V30_EagleHybridRewindsOneBlock) {
  Build({Eagle(Full()), Eagle(Window(48)), Eagle(Window(48))}, 31);
  const std::vector<TokenId> prefix = Range(0, 96);
  const Request r0 = Make(0, Concat(prefix, Repeat(500, 7)));
  EXPECT_THAT(Admit(r0), ElementsAre(Ids({1, 2, 3, 4, 5, 6, 7}),
                                     Ids({8, 9, 10, 11, 12, 13, 14}),
                                     Ids({15, 16, 17, 18, 19, 20, 21})));
  const Request r1 = Make(1, Concat(prefix, Repeat(501, 5)));
  const CacheHit hit = cache_->Lookup(r1);
  EXPECT_EQ(hit.num_tokens, 80u);
  EXPECT_THAT(hit.blocks,
              ElementsAre(Ids({1, 2, 3, 4, 5}), Ids({0, 0, 10, 11, 12}),
                          Ids({0, 0, 17, 18, 19})));
  EXPECT_THAT(Admit(r1, hit),
              ElementsAre(Ids({22, 23}), Ids({24, 25}), Ids({26, 27})));
}

class EagleEvictionTest : public HybridTest,
                          public ::testing::WithParamInterface<EvictionCase> {};

// V-31: the V-29 state, keys dropped, then the 101-token request of V-30.
TEST_P(EagleEvictionTest, V31_HitAfterEvictions) {
  Build({Eagle(Full()), Eagle(Window(48)), Eagle(Window(48))}, 31);
  const std::vector<TokenId> prefix = Range(0, 96);
  const Request r0 = Make(0, Concat(prefix, Repeat(500, 7)));
  Admit(r0);
  for (const auto& [groups, index] : GetParam().evictions) {
    for (std::uint32_t g : groups) {
      cache_->pool().EvictKeys(cache_->block_table(r0.id(), GroupId{g})[index]);
    }
  }
  const CacheHit hit = cache_->Lookup(Make(1, Concat(prefix, Repeat(501, 5))));
  EXPECT_EQ(hit.num_tokens, 16 * GetParam().expected_blocks);
}

INSTANTIATE_TEST_SUITE_P(
    Vectors, EagleEvictionTest,
    ::testing::Values(
        EvictionCase{"WindowBlock0", {{{1, 2}, 0}}, 5},
        EvictionCase{"FullBlock0", {{{0}, 0}}, 0},
        EvictionCase{"LastInAll", {{{0, 1, 2}, 5}}, 4},
        EvictionCase{"FullLast", {{{0}, 5}}, 4},
        EvictionCase{"Window1SecondLast", {{{1}, 4}}, 3},
        EvictionCase{"Window2SecondLast", {{{2}, 4}}, 3},
        EvictionCase{"FullLastAndWindowBlock0", {{{0}, 5}, {{1, 2}, 0}}, 4}),
    [](const ::testing::TestParamInfo<EvictionCase>& test) {
      return test.param.name;
    });

// V-32: every combination of two to four of [full, window 2b, window 4b,
// recurrent caching nothing] hits 48 of 48 + 5: a group that caches nothing
// never limits a hit.
TEST_F(HybridTest, V32_EveryComboHitsTheSharedPrefix) {
  const std::vector<GroupSpec> kinds = {
      Full(),
      Window(32),
      Window(64),
      {.kind = GroupKind::kRecurrent,
       .block_size = 16,
       .recurrent_mode = RecurrentMode::kNone}};
  for (unsigned mask = 0; mask < 16; ++mask) {
    std::vector<GroupSpec> groups;
    for (unsigned k = 0; k < 4; ++k) {
      if ((mask >> k & 1u) != 0) groups.push_back(kinds[k]);
    }
    if (groups.size() < 2) continue;
    Build(groups, 10 * static_cast<std::uint32_t>(groups.size()) + 1);
    Admit(Make(0, Concat(Prefix48(), Repeat(3, 7))));
    const Request r1 = Make(1, Concat(Prefix48(), Repeat(3, 5)));
    const CacheHit hit = cache_->Lookup(r1);
    EXPECT_EQ(hit.num_tokens, 48u) << "groups " << mask;
    EXPECT_TRUE(cache_->Allocate(r1, {.num_new_tokens = 5, .hit = &hit}))
        << "groups " << mask;
    EXPECT_TRUE(cache_->CheckInvariants());
  }
}

// V-36: DCP 8 with a sharded target, a draft group sharded or replicated,
// and a recurrent group that caches nothing.
TEST_F(HybridTest, V36_DcpGeometryWithAStatelessRecurrentGroup) {
  for (DcpLayout draft : {DcpLayout::kSharded, DcpLayout::kReplicated}) {
    cache_ = std::make_unique<internal::CacheCore>(
        CacheConfig{.groups = {{.block_size = 16},
                               {.block_size = 16, .dcp_layout = draft},
                               {.kind = GroupKind::kRecurrent,
                                .block_size = 16,
                                .recurrent_mode = RecurrentMode::kNone}},
                    .num_blocks = 80,
                    .keys = {.hash_unit = 16},
                    .dcp = 8});
    const std::uint32_t draft_block = draft == DcpLayout::kSharded ? 128 : 16;
    EXPECT_EQ(cache_->geometry(GroupId{0}).block_size, 128u);
    EXPECT_EQ(cache_->geometry(GroupId{1}).block_size, draft_block);
    EXPECT_EQ(cache_->geometry(GroupId{2}).block_size, 16u);
    Admit(Make(0, Concat(Range(0, 256), Repeat(99, 7))));
    const CacheHit hit =
        cache_->Lookup(Make(1, Concat(Range(0, 256), Repeat(100, 5))));
    EXPECT_EQ(hit.num_tokens, 256u);
    EXPECT_EQ(hit.blocks[0].size(), 2u);
    EXPECT_EQ(hit.blocks[1].size(), 256u / draft_block);
  }
}

TEST_F(HybridTest, V33_EagleFullAndWindow) {
  Build({Eagle(Full()), Eagle(Window(32))}, 21);
  const std::vector<TokenId> prefix = Range(0, 64);
  Admit(Make(0, Concat(prefix, Repeat(500, 7))));
  const CacheHit hit = cache_->Lookup(Make(1, Concat(prefix, Repeat(501, 5))));
  EXPECT_EQ(hit.num_tokens, 48u);
  EXPECT_EQ(hit.blocks[0].size(), 3u);
}

TEST(HybridGeometryTest, V70_AttentionOnlyHybridKeepsBlockAlignedHits) {
  const internal::CacheGeometry geometry =
      internal::ResolveGeometry({.groups = {{.block_size = 4},
                                            {.kind = GroupKind::kSlidingWindow,
                                             .block_size = 8,
                                             .sliding_window = 8}},
                                 .num_blocks = 10,
                                 .keys = {.hash_unit = 2}});
  EXPECT_FALSE(geometry.facts.partial_hits);
  EXPECT_EQ(geometry.facts.scheduler_block, 8u);
  EXPECT_EQ(geometry.facts.alignment, 8u);
}

}  // namespace
}  // namespace hkv
