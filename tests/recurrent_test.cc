// Spec vectors with recurrent-state groups: V-34, V-35 (§8.2), V-48, V-49
// (§8.3), V-56 ... V-67 and V-71 (§8.4); the scratch and DCP ones are in
// recurrent_dcp_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "groups/recurrent_state.h"
#include "recurrent_fixture.h"
#include "test_util.h"

namespace hkv {
namespace {

using ::hkv::testing::Concat;
using ::hkv::testing::Eagle;
using ::hkv::testing::Full;
using ::hkv::testing::Ids;
using ::hkv::testing::Prefix48;
using ::hkv::testing::Range;
using ::hkv::testing::RecurrentTest;
using ::hkv::testing::Repeat;
using ::hkv::testing::State;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

TEST_F(RecurrentTest, V34_StateAtTheFullPrefix) {
  Build({Full(16), State(16)}, 16, 30);
  ASSERT_TRUE(Schedule(Make(0, Prefix48()), 0, 48));
  NextStep();
  const CacheHit hit =
      cache_->Lookup(Make(1, Concat(Prefix48(), Repeat(100, 7))));
  EXPECT_EQ(hit.num_tokens, 48u);
  EXPECT_EQ(hit.shared_prefix_boundary, 0u);
}

TEST_F(RecurrentTest, V35_NoStateAtTheSharedPrefix) {
  Build({Full(16), State(16)}, 16, 30);
  ASSERT_TRUE(Schedule(Make(0, Prefix48()), 0, 48));
  NextStep();
  std::vector<TokenId> tokens = Prefix48();
  tokens.back() = 101;
  const CacheHit hit = cache_->Lookup(Make(2, tokens));
  EXPECT_EQ(hit.num_tokens, 0u);  // no state at 32
  EXPECT_EQ(hit.shared_prefix_boundary, 32u);
}

TEST(RecurrentManagerTest, V48_RetirementFreesOldStatesOnce) {
  internal::BlockPool pool(8, internal::Caching::kEnabled);
  const internal::CacheFacts facts{
      .hash_unit = 4, .alignment = 4, .scheduler_block = 4};
  internal::RecurrentStateManager manager(pool, facts, {.block_size = 4},
                                          {.kind = GroupKind::kRecurrent});
  const BlockId old = pool.AllocateOne();
  const BlockId committed = pool.AllocateOne();
  const BlockId in_flight = pool.AllocateOne();
  internal::GroupTable table{.blocks = {old, kNullBlock, committed, in_flight}};
  manager.RemoveSkippedBlocks(table, 12);
  manager.RemoveSkippedBlocks(table, 12);
  EXPECT_THAT(table.blocks,
              ElementsAre(kNullBlock, kNullBlock, committed, in_flight));
  EXPECT_EQ(pool.num_free_blocks(), 5u);
  EXPECT_EQ(pool.ref_count(old), 0u);
}

struct RetirementCase {
  std::uint32_t block;
  std::uint32_t lag;  // chunks scheduled but not yet processed
};

class RetirementTest : public ::testing::TestWithParam<RetirementCase> {};

// V-49: chunks of floor(8192 / b) blocks up to 480,031 tokens with 5
// speculative blocks: the predictor matches the allocator at every step and
// at most 7 + lag blocks are held.
TEST_P(RetirementTest, V49_PeakBlocksHeld) {
  const auto [b, lag] = GetParam();
  internal::BlockPool pool(64, internal::Caching::kEnabled);
  const internal::CacheFacts facts{
      .hash_unit = b, .alignment = b, .scheduler_block = b};
  internal::RecurrentStateManager manager(
      pool, facts, {.block_size = b},
      {.kind = GroupKind::kRecurrent, .speculative_blocks = 5});
  internal::GroupTable table;
  const std::uint32_t chunk = 8192 / b * b;
  constexpr std::uint32_t kPrompt = 480031;
  std::uint32_t peak = 0;
  for (std::uint32_t done = 0, steps = 0; done < kPrompt; ++steps) {
    const std::uint32_t n = std::min(chunk, kPrompt - done);
    const std::uint32_t in_flight = std::min(steps, lag) * chunk;
    manager.RemoveSkippedBlocks(table, done > in_flight ? done - in_flight : 0);
    const internal::AllocationDemand demand{.num_slots = done + n,
                                            .num_main = done + n,
                                            .num_local_computed = done,
                                            .num_computed = done};
    const std::uint32_t predicted = manager.NumBlocksToAllocate(table, demand);
    const std::uint32_t free_before = pool.num_free_blocks();
    std::vector<BlockId> placed;
    internal::CopyLog log;
    manager.AllocateNew(table, demand, placed, log);
    ASSERT_EQ(free_before - pool.num_free_blocks(), predicted) << done;
    done += n;
    peak = std::max(peak, 63 - pool.num_free_blocks());
  }
  EXPECT_EQ(peak, 7 + lag);
}

INSTANTIATE_TEST_SUITE_P(
    Vectors, RetirementTest,
    ::testing::Values(RetirementCase{3584, 0}, RetirementCase{3584, 1},
                      RetirementCase{3584, 2}, RetirementCase{4608, 0},
                      RetirementCase{4608, 1}, RetirementCase{4608, 2}),
    [](const ::testing::TestParamInfo<RetirementCase>& test) {
      return "block" + std::to_string(test.param.block) + "_lag" +
             std::to_string(test.param.lag);
    });

// [FA b=2, M b=4], h=2: the owner's prompt of 7 computes 6 and registers its
// state at 6 inside a block.
class PartialStateTest : public RecurrentTest {
 protected:
  void SetUp() override {
    Build({Full(2), State(4)}, 2, 20);
    owner_ = std::make_unique<Request>(Make(0, {0, 0, 1, 1, 2, 2, 3}));
    ASSERT_TRUE(Schedule(*owner_, 0, 6));
    state_ = cache_->block_table(owner_->id(), GroupId{1})[1];
  }
  std::unique_ptr<Request> owner_;
  BlockId state_;
};

TEST_F(PartialStateTest, V56_NewRequestCopiesTheSharedState) {
  EXPECT_EQ(Tokens(state_), 6u);
  cache_->Free(owner_->id());
  NextStep();
  const Request r1 = Make(1, {0, 0, 1, 1, 2, 2, 3, 3});
  const CacheHit hit = cache_->Lookup(r1);
  EXPECT_EQ(hit.num_tokens, 6u);
  EXPECT_THAT(hit.blocks[0], SizeIs(3));
  EXPECT_THAT(hit.blocks[1], ElementsAre(kNullBlock, state_));
  const auto placed = Schedule(r1, 0, 2, &hit);
  ASSERT_TRUE(placed);
  ASSERT_THAT((*placed)[1], SizeIs(1));
  const BlockId copy = (*placed)[1][0];
  EXPECT_EQ(cache_->block_table(r1.id(), GroupId{1})[1], copy);
  EXPECT_THAT(cache_->TakeCopies(),
              ::testing::Contains(BlockCopy{state_, copy, GroupId{1}}));
  EXPECT_EQ(Tokens(state_), 6u);  // the source keeps its key
  EXPECT_TRUE(cache_->CheckInvariants());
}

TEST_F(PartialStateTest, V57_V58_OwnerHandsItsStateToACopy) {
  NextStep();
  Request& owner = *owner_;
  owner.AppendTokens(std::vector<TokenId>{3});
  const auto placed = Schedule(owner, 6, 1);
  ASSERT_TRUE(placed);
  EXPECT_THAT((*placed)[1], IsEmpty());
  EXPECT_EQ(cache_->block_table(owner.id(), GroupId{1})[1], state_);
  const std::vector<BlockCopy> copies = cache_->TakeCopies();
  ASSERT_THAT(copies, SizeIs(1));
  const BlockId moved = copies[0].destination;
  EXPECT_EQ(copies[0].source, state_);
  EXPECT_EQ(Tokens(state_), 0u);
  EXPECT_EQ(Tokens(moved), 6u);
  cache_->FinishStep();

  const Request r1 = Make(1, {0, 0, 1, 1, 2, 2, 4, 4});
  const CacheHit hit = cache_->Lookup(r1);
  EXPECT_EQ(hit.num_tokens, 6u);
  EXPECT_THAT(hit.blocks[1], ElementsAre(kNullBlock, moved));
  const auto second = Schedule(r1, 0, 2, &hit);
  ASSERT_TRUE(second);
  ASSERT_THAT((*second)[1], SizeIs(1));
  EXPECT_THAT(cache_->TakeCopies(), ::testing::Contains(BlockCopy{
                                        moved, (*second)[1][0], GroupId{1}}));
  EXPECT_TRUE(cache_->CheckInvariants());
}

TEST_F(PartialStateTest, V59_StateMovedThisStepWaitsAStep) {
  NextStep();
  owner_->AppendTokens(std::vector<TokenId>{3});
  ASSERT_TRUE(Schedule(*owner_, 6, 1));
  const Request r1 = Make(1, {0, 0, 1, 1, 2, 2, 4, 4});
  CacheHit hit = cache_->Lookup(r1);
  EXPECT_EQ(hit.num_tokens, 6u);
  EXPECT_FALSE(Schedule(r1, 0, 2, &hit));
  NextStep();
  hit = cache_->Lookup(r1);
  EXPECT_TRUE(Schedule(r1, 0, 2, &hit));
}

TEST_F(RecurrentTest, V60_V61_BothGroupsCopyTheirPartialBlocks) {
  Build({Full(4), State(4)}, 2, 20);
  const Request r0 = Make(0, {0, 0, 1, 1, 2, 2, 3});
  ASSERT_TRUE(Schedule(r0, 0, 6));
  const BlockId partial = cache_->block_table(r0.id(), GroupId{0})[1];
  cache_->Free(r0.id());
  NextStep();
  const Request r1 = Make(1, {0, 0, 1, 1, 2, 2, 3, 3});
  const CacheHit hit = cache_->Lookup(r1);
  EXPECT_EQ(hit.num_tokens, 6u);
  EXPECT_THAT(hit.blocks[0], SizeIs(2));
  EXPECT_THAT(hit.blocks[1], SizeIs(2));
  // V-61: allocated but not yet committed, the copies are unkeyed.
  const std::optional<NewBlocks> placed =
      cache_->Allocate(r1, {.num_new_tokens = 2, .hit = &hit});
  ASSERT_TRUE(placed);
  ASSERT_THAT(placed->blocks[0], SizeIs(1));
  const BlockId copy = placed->blocks[0][0];
  EXPECT_NE(copy, partial);
  EXPECT_EQ(Tokens(copy), 0u);
  EXPECT_EQ(Tokens(placed->blocks[1][0]), 0u);
  EXPECT_EQ(Tokens(partial), 6u);
  EXPECT_THAT(cache_->TakeCopies(), SizeIs(2));
  EXPECT_EQ(cache_->pool().ref_count(partial), 1u);  // retained for the copy
  cache_->FinishStep();
  EXPECT_EQ(cache_->pool().ref_count(partial), 0u);
}

TEST_F(RecurrentTest, V62_FullAttentionIsTruncatedToTheReconciledHit) {
  Build({Full(4), State(4)}, 2, 20);
  const Request r = Make(0, Range(0, 12));
  std::vector<BlockId> blocks;
  cache_->pool().Allocate(4, blocks);
  const auto key = [&](std::uint32_t tokens, std::uint32_t group) {
    return internal::PrefixKey{.hash = r.keys()[tokens / 2 - 1],
                               .group = GroupId{group}};
  };
  cache_->pool().CacheFull(blocks[0], key(4, 0), 4);
  cache_->pool().CacheFull(blocks[1], key(8, 0), 8);
  cache_->pool().CachePartial(blocks[2], key(10, 0), 10);
  cache_->pool().CachePartial(blocks[3], key(6, 1), 6);
  const CacheHit hit = cache_->Lookup(r);
  EXPECT_EQ(hit.num_tokens, 6u);
  EXPECT_THAT(hit.blocks[0], SizeIs(2));
  EXPECT_THAT(hit.blocks[1], ElementsAre(kNullBlock, blocks[3]));
}

TEST_F(RecurrentTest, V63_RewindingGroupRegistersEverything) {
  Build({{.block_size = 2, .speculation = Speculation::kEagle}, State(8)}, 2,
        40);
  const Request r = Make(0, Range(0, 22));
  ASSERT_TRUE(Schedule(r, 0, 22));
  const auto table = cache_->block_table(r.id(), GroupId{0});
  for (std::uint32_t i = 0; i < 11; ++i)
    EXPECT_EQ(Tokens(table[i]), 2 * (i + 1));
}

TEST_F(RecurrentTest, V64_NoRewindMarginForTheRecurrentGroup) {
  Build(Eagle({Full(4), State(4)}), 2, 20);
  const Request owner = Make(0, Repeat(7, 6));
  ASSERT_TRUE(Schedule(owner, 0, 4));
  NextStep();
  ASSERT_TRUE(Schedule(owner, 4, 2));
  NextStep();
  const Request r1 = Make(1, Concat(Repeat(7, 6), Repeat(9, 2)));
  const CacheHit hit = cache_->Lookup(r1);
  EXPECT_EQ(hit.num_tokens, 4u);
  EXPECT_THAT(hit.blocks[0], SizeIs(1));
  EXPECT_THAT(hit.blocks[1], SizeIs(1));
  EXPECT_TRUE(Schedule(r1, 0, 4, &hit));
}

TEST_F(RecurrentTest, V65_PromptCheckpointSitsBelowTheRewind) {
  Build(Eagle({Full(2), State(4)}), 2, 30);
  const Request owner = Make(0, Repeat(7, 9));
  ASSERT_TRUE(Schedule(owner, 0, 6));
  NextStep();
  ASSERT_TRUE(Schedule(owner, 6, 3));
  NextStep();
  const CacheHit hit =
      cache_->Lookup(Make(1, Concat(Repeat(7, 9), Repeat(9, 4))));
  EXPECT_EQ(hit.num_tokens, 6u);
  EXPECT_EQ(Tokens(hit.blocks[1].back()), 6u);
}

TEST_F(RecurrentTest, V66_CoarseRewindLandsOnAKeptState) {
  Build(Eagle({Full(4), State(4)}), 4, 20);
  const Request owner = Make(0, Repeat(7, 9));
  ASSERT_TRUE(Schedule(owner, 0, 4));
  NextStep();
  ASSERT_TRUE(Schedule(owner, 4, 5));
  cache_->Free(owner.id());
  NextStep();
  EXPECT_EQ(
      cache_->Lookup(Make(1, Concat(Repeat(7, 9), Repeat(9, 4)))).num_tokens,
      4u);
}

TEST_F(RecurrentTest, V67_DraftWindowWithStatesAndAttention) {
  Build({Full(2),
         State(8),
         {.kind = GroupKind::kSlidingWindow,
          .block_size = 4,
          .speculation = Speculation::kEagle,
          .sliding_window = 4}},
        2, 60);
  EXPECT_EQ(cache_->facts().alignment, 2u);
  Request owner = Make(0, Range(0, 12));
  ASSERT_TRUE(Schedule(owner, 0, 8));
  NextStep();
  ASSERT_TRUE(Schedule(owner, 8, 4));
  NextStep();
  owner.AppendTokens(std::vector<TokenId>{500});
  ASSERT_TRUE(Schedule(owner, 12, 1));
  cache_->Free(owner.id());
  NextStep();
  const CacheHit hit =
      cache_->Lookup(Make(1, Concat(Range(0, 12), {600, 601})));
  EXPECT_EQ(hit.num_tokens, 8u);
  EXPECT_EQ(hit.blocks[0].size() * 2, 8u);
}

TEST_F(RecurrentTest, V71_DraftWindowProvesOneUnitPastTheHit) {
  Build({Full(16),
         State(2),
         {.kind = GroupKind::kSlidingWindow,
          .block_size = 16,
          .speculation = Speculation::kEagle,
          .sliding_window = 16}},
        2, 80);
  const Request base = Make(0, Range(0, 45));
  for (std::uint32_t done = 0; done < 45; done += 2) {
    ASSERT_TRUE(Schedule(base, done, std::min(2u, 45 - done)));
    NextStep();
  }
  EXPECT_EQ(cache_->Lookup(Make(1, Range(0, 45))).num_tokens, 42u);
}

// A chunk ending inside a state block leaves that block's end unproven: the
// next chunk's commit keys only the state it wrote.
TEST_F(RecurrentTest, BlocksSkippedByAChunkAreNotKeyed) {
  Build({Full(2), State(4)}, 2, 40);
  const Request r = Make(0, Range(0, 16));
  ASSERT_TRUE(Schedule(r, 0, 6));  // the state at 6 sits in block 1
  NextStep();
  ASSERT_TRUE(Schedule(r, 6, 6));  // block 2 holds the state at 12
  NextStep();
  const auto table = cache_->block_table(r.id(), GroupId{1});
  EXPECT_NE(Tokens(table[1]), 8u);  // never held the state at 8
  EXPECT_EQ(Tokens(table[2]), 12u);
  // No state at 8 (nor at 6, which is not the prompt's checkpoint): a
  // follower sharing 8 tokens has nothing to resume from.
  EXPECT_EQ(
      cache_->Lookup(Make(1, Concat(Range(0, 8), Repeat(99, 3)))).num_tokens,
      0u);
}

// Under resend-only retention the state at a shared-prefix junction, where
// the split stopped for the siblings, is kept.
TEST_F(RecurrentTest, JunctionStateIsKeptUnderResendOnlyRetention) {
  cache_ = std::make_unique<internal::CacheCore>(
      CacheConfig{.groups = {Full(16), State(16)},
                  .num_blocks = 60,
                  .keys = {.hash_unit = 16},
                  .retention_interval = 0});
  ASSERT_TRUE(Schedule(Make(0, Range(0, 48)), 0, 48));
  NextStep();
  const Request r1 = Make(1, Concat(Range(0, 32), Repeat(7, 64)));
  const CacheHit hit = cache_->Lookup(r1);
  ASSERT_EQ(hit.num_tokens, 0u);
  ASSERT_EQ(hit.shared_prefix_boundary, 32u);
  const std::uint32_t first = cache_->SplitPrefill(
      r1, {.num_new_tokens = 96, .shared_prefix_boundary = 32});
  ASSERT_EQ(first, 32u);
  ASSERT_TRUE(Schedule(r1, 0, 32, &hit));
  NextStep();
  ASSERT_TRUE(Schedule(r1, 32, 64));
  NextStep();
  EXPECT_EQ(
      cache_->Lookup(Make(2, Concat(Range(0, 32), Repeat(8, 5)))).num_tokens,
      32u);
}

}  // namespace
}  // namespace hkv
