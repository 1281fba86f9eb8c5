// Regression tests for the reference system's bugs of spec §9 that no
// vector covers by itself (the others are named in docs/design.md,
// "Testing").
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "cache/commit_rules.h"
#include "test_util.h"

namespace hkv {
namespace {

using ::hkv::testing::Concat;
using ::hkv::testing::Range;
using ::hkv::testing::Table;

// Computes and commits `r`'s first n tokens as a new request, then frees it.
void Cache(internal::CacheCore& cache, const Request& r, std::uint32_t n) {
  ASSERT_TRUE(cache.Allocate(r, {.num_new_tokens = n}));
  cache.Commit(r, n);
  cache.Free(r.id());
  cache.FinishStep();
}

// Item 1: every group adopts its hit before any group allocates. Here the
// second group's hit blocks sit at the front of the free queue, so the first
// group's allocation would take them if it ran before their adoption.
TEST(SpecPitfallsTest, Item01_HitBlocksAreAdoptedBeforeAnyAllocation) {
  internal::CacheCore cache({.groups = {{.block_size = 4}, {.block_size = 4}},
                             .num_blocks = 9,
                             .keys = {.hash_unit = 4}});
  const KeyScheme& scheme = cache.key_scheme();
  Cache(cache, Request({.id = RequestId{1}}, Range(0, 9), scheme), 8);
  Cache(cache, Request({.id = RequestId{2}}, Range(100, 109), scheme), 8);
  const Request r({.id = RequestId{3}}, Concat(Range(0, 8), Range(50, 58)),
                  scheme);
  const CacheHit hit = cache.Lookup(r);
  ASSERT_EQ(hit.num_tokens, 8u);
  ASSERT_TRUE(cache.Allocate(r, {.num_new_tokens = 8, .hit = &hit}));
  const std::vector<BlockId> first = Table(cache, r.id(), 0);
  const std::vector<BlockId> second = Table(cache, r.id(), 1);
  EXPECT_EQ(std::vector<BlockId>(second.begin(), second.begin() + 2),
            hit.blocks[1]);
  for (BlockId block : first) {
    EXPECT_EQ(std::count(second.begin(), second.end(), block), 0);
  }
  EXPECT_TRUE(cache.CheckInvariants());
}

// Item 7: sparse retention keeps, beside the hash-aligned resend position,
// the scheduler-aligned one: a fine boundary alone may never have been
// computed (chunks end on scheduler blocks).
TEST(SpecPitfallsTest, Item07_ResendKeepsTheSchedulerAlignedFallback) {
  const CacheConfig config{
      .groups = {{.block_size = 8},
                 {.kind = GroupKind::kRecurrent, .block_size = 8}},
      .num_blocks = 16,
      .keys = {.hash_unit = 2},
      .retention_interval = 0};
  const internal::CacheGeometry geometry = internal::ResolveGeometry(config);
  ASSERT_EQ(geometry.facts.alignment, 2u);
  ASSERT_EQ(geometry.facts.scheduler_block, 8u);
  const KeyScheme scheme = *MakeKeyScheme(config.keys);
  const Request r({.id = RequestId{1}}, Range(0, 27), scheme);
  EXPECT_THAT(internal::ResendBoundaries(geometry, r),
              ::testing::UnorderedElementsAre(26u, 24u));
}

// Item 11: after rejected drafts a request may need fewer blocks than it
// holds; nothing is allocated or released.
TEST(SpecPitfallsTest, Item11_FewerTokensThanTheTableCoversAllocatesNothing) {
  internal::CacheCore cache({.groups = {{.block_size = 4},
                                        {.kind = GroupKind::kRecurrent,
                                         .block_size = 4,
                                         .speculative_blocks = 2}},
                             .num_blocks = 32,
                             .keys = {.hash_unit = 4}});
  const Request r({.id = RequestId{1}}, Range(0, 16), cache.key_scheme());
  ASSERT_TRUE(
      cache.Allocate(r, {.num_new_tokens = 8, .num_lookahead_tokens = 4}));
  const std::uint32_t free_before = cache.pool().num_free_blocks();
  // Two of the drafts were rejected: 6 tokens computed, 1 new.
  std::optional<NewBlocks> placed =
      cache.Allocate(r, {.num_computed_tokens = 6, .num_new_tokens = 1});
  ASSERT_TRUE(placed.has_value());
  EXPECT_TRUE(placed->blocks[0].empty());
  EXPECT_TRUE(placed->blocks[1].empty());
  EXPECT_EQ(cache.pool().num_free_blocks(), free_before);
  EXPECT_TRUE(cache.CheckInvariants());
}

// Item 14: a recurrent kernel reads a state block before writing it, so the
// engine zeroes every new state block: the allocation lists them all.
TEST(SpecPitfallsTest, Item14_NewStateBlocksAreListedForZeroing) {
  internal::CacheCore cache({.groups = {{.block_size = 4},
                                        {.kind = GroupKind::kRecurrent,
                                         .block_size = 4,
                                         .speculative_blocks = 1}},
                             .num_blocks = 32,
                             .keys = {.hash_unit = 4}});
  const Request r({.id = RequestId{1}}, Range(0, 16), cache.key_scheme());
  std::optional<NewBlocks> placed = cache.Allocate(r, {.num_new_tokens = 8});
  ASSERT_TRUE(placed.has_value());
  std::vector<BlockId> held;
  for (BlockId b : Table(cache, r.id(), 1)) {
    if (b != kNullBlock) held.push_back(b);
  }
  EXPECT_EQ(placed->blocks[1], held);  // the state and its speculative block
  placed = cache.Allocate(r, {.num_computed_tokens = 8, .num_new_tokens = 8});
  ASSERT_TRUE(placed.has_value());
  EXPECT_EQ(placed->blocks[1].size(), 1u);  // one more block this time
}

// Item 15: a non-cryptographic key function gets an unpredictable seed
// unless one is given.
TEST(SpecPitfallsTest, Item15_Xxh3SeedIsRandomUnlessSet) {
  const KeySchemeOptions xxh3{.function = KeyFunction::kXxh3_128Cbor};
  EXPECT_NE(MakeKeyScheme(xxh3)->seed_key, MakeKeyScheme(xxh3)->seed_key);
  KeySchemeOptions fixed = xxh3;
  fixed.seed = "router-shared";
  EXPECT_EQ(MakeKeyScheme(fixed)->seed_key, MakeKeyScheme(fixed)->seed_key);
  EXPECT_EQ(MakeKeyScheme({})->seed_key, MakeKeyScheme({})->seed_key);
}

// Item 16 (spec §3.4.2, the same-step guard) in recurrent all mode: a state
// committed in this step is only written by this step's forward, so a
// lookup in the same step finds it but the allocation adopting it is
// refused; after FinishStep() it is adopted. (V-59 covers align mode.)
TEST(SpecPitfallsTest, Item16_AllModeStateOfThisStepIsNotAdopted) {
  internal::CacheCore cache(
      {.groups = {{.block_size = 4},
                  {.kind = GroupKind::kRecurrent,
                   .block_size = 4,
                   .recurrent_mode = RecurrentMode::kAll}},
       .num_blocks = 40,
       .keys = {.hash_unit = 4}});
  const KeyScheme& scheme = cache.key_scheme();
  const Request owner({.id = RequestId{1}}, Range(0, 12), scheme);
  ASSERT_TRUE(cache.Allocate(owner, {.num_new_tokens = 12}));
  cache.Commit(owner, 12);  // states at 4, 8 and 12, registered this step
  const Request r({.id = RequestId{2}}, Range(0, 16), scheme);
  CacheHit hit = cache.Lookup(r);
  ASSERT_EQ(hit.num_tokens, 12u);
  const std::uint32_t free_blocks = cache.pool().num_free_blocks();
  EXPECT_FALSE(cache.Allocate(r, {.num_new_tokens = 4, .hit = &hit}));
  EXPECT_FALSE(cache.HoldsBlocks(r.id()));
  EXPECT_EQ(cache.pool().num_free_blocks(), free_blocks);
  cache.FinishStep();
  hit = cache.Lookup(r);
  ASSERT_EQ(hit.num_tokens, 12u);
  EXPECT_TRUE(cache.Allocate(r, {.num_new_tokens = 4, .hit = &hit}));
  EXPECT_EQ(Table(cache, r.id(), 1)[2], hit.blocks[1][2]);
  EXPECT_TRUE(cache.CheckInvariants());
}

// Item 19: under async scheduling, window blocks that in-flight steps still
// read stay.
TEST(SpecPitfallsTest, Item19_InFlightTokensKeepTheirWindowBlocks) {
  const auto nulls_after = [](std::uint32_t in_flight) {
    internal::CacheCore cache({.groups = {{.kind = GroupKind::kSlidingWindow,
                                           .block_size = 2,
                                           .sliding_window = 4}},
                               .num_blocks = 32,
                               .keys = {.hash_unit = 2}});
    const Request r({.id = RequestId{1}}, Range(0, 20), cache.key_scheme());
    EXPECT_TRUE(cache.Allocate(r, {.num_new_tokens = 12}));
    EXPECT_TRUE(cache.Allocate(r, {.num_computed_tokens = 12,
                                   .num_new_tokens = 4,
                                   .num_in_flight_tokens = in_flight}));
    const std::vector<BlockId> table = Table(cache, r.id());
    return std::count(table.begin(), table.end(), kNullBlock);
  };
  EXPECT_EQ(nulls_after(0), 4);  // tokens 0-8 left the window of token 12
  EXPECT_EQ(nulls_after(8), 0);  // processed: 4 tokens, all still read
}

// Item 20: a hit whose tail is copied into a private block and a
// connector's load into that block must not both happen; cutting the hit to
// a block boundary resolves it.
TEST(SpecPitfallsTest, Item20_ConnectorTokensNeedABlockAlignedHit) {
  internal::CacheCore cache({.groups = {{.block_size = 4}},
                             .num_blocks = 32,
                             .keys = {.hash_unit = 2}});
  const KeyScheme& scheme = cache.key_scheme();
  Cache(cache, Request({.id = RequestId{1}}, Range(0, 7), scheme), 6);
  const Request r({.id = RequestId{2}}, Range(0, 16), scheme);
  const CacheHit hit = cache.Lookup(r);
  ASSERT_EQ(hit.num_tokens, 6u);
  const std::uint32_t free_before = cache.pool().num_free_blocks();
  EXPECT_THROW((void)cache.Allocate(r, {.num_external_computed_tokens = 4,
                                        .num_new_tokens = 6,
                                        .hit = &hit}),
               UsageError);
  EXPECT_FALSE(cache.HoldsBlocks(r.id()));
  EXPECT_EQ(cache.pool().num_free_blocks(), free_before);
  const CacheHit cut = cache.TruncateHit(hit, 4);
  EXPECT_EQ(cut.blocks[0].size(), 1u);
  EXPECT_TRUE(cache.Allocate(
      r,
      {.num_external_computed_tokens = 6, .num_new_tokens = 6, .hit = &cut}));
  EXPECT_TRUE(cache.TakeCopies().empty());
  EXPECT_THROW((void)cache.TruncateHit(hit, 3), UsageError);
}

}  // namespace
}  // namespace hkv
