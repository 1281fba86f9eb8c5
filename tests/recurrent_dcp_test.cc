// Spec vectors with recurrent-state groups beside scratch groups (V-68,
// V-69) and under decode-context parallelism (V-76 ... V-79, §8.4).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

GroupSpec Scratch(std::uint32_t block) {
  return {
      .kind = GroupKind::kScratch, .block_size = block, .scratch_blocks = 1};
}

TEST_F(RecurrentTest, V68_ScratchGroupKeepsPartialHitsOn) {
  Build({Full(2), State(4), Scratch(2)}, 2, 30);
  EXPECT_EQ(cache_->facts().alignment, 2u);
  ASSERT_TRUE(Schedule(Make(0, {0, 0, 1, 1, 2, 2, 3}), 0, 6));
  NextStep();
  const Request r1 = Make(1, {0, 0, 1, 1, 2, 2, 3, 3});
  const CacheHit hit = cache_->Lookup(r1);
  EXPECT_EQ(hit.num_tokens, 6u);
  EXPECT_TRUE(hit.blocks[2].empty());
  EXPECT_TRUE(Schedule(r1, 0, 2, &hit));
}

TEST_F(RecurrentTest, V69_ScratchBlockBelowTheHashUnit) {
  Build({Full(1152), State(1152), Scratch(64)}, 128, 40);
  EXPECT_EQ(cache_->facts().scheduler_block, 1152u);
  EXPECT_EQ(cache_->facts().alignment, 128u);
  ASSERT_TRUE(Schedule(Make(0, Range(0, 1537)), 0, 1536));
  NextStep();
  const CacheHit hit =
      cache_->Lookup(Make(1, Concat(Range(0, 1536), Repeat(12, 64))));
  EXPECT_EQ(hit.num_tokens, 1536u);
}

class DcpTest : public RecurrentTest,
                public ::testing::WithParamInterface<std::uint32_t> {};

TEST_P(DcpTest, V76_PartialHitCopiesBothGroups) {
  const std::uint32_t d = GetParam();
  Build({Full(4), State(4)}, 2, 40, d);
  const Request owner = Make(0, Range(0, 7));
  ASSERT_TRUE(Schedule(owner, 0, 6));
  NextStep();
  const Request replay = Make(1, Range(0, 8));
  const CacheHit hit = cache_->Lookup(replay);
  EXPECT_EQ(hit.num_tokens, 6u);
  EXPECT_THAT(hit.blocks[0], SizeIs((6 + 4 * d - 1) / (4 * d)));
  EXPECT_THAT(hit.blocks[1], SizeIs(2));
  ASSERT_TRUE(Schedule(replay, 0, 2, &hit));
  const std::vector<BlockCopy> copies = cache_->TakeCopies();
  ASSERT_THAT(copies, SizeIs(2));
  EXPECT_EQ(copies[0].group, GroupId{0});
  EXPECT_EQ(copies[1].group, GroupId{1});
}

INSTANTIATE_TEST_SUITE_P(Widths, DcpTest, ::testing::Values(1u, 2u, 4u));

class DcpCoarseTest : public RecurrentTest,
                      public ::testing::WithParamInterface<std::uint32_t> {};

TEST_P(DcpCoarseTest, V77_UnitEqualsBlock) {
  const std::uint32_t d = GetParam();
  Build({Full(4), State(4)}, 4, 40, d);
  const Request owner = Make(0, Range(0, 13));
  ASSERT_TRUE(Schedule(owner, 0, 12));
  NextStep();
  const Request replay = Make(1, Range(0, 16));
  const CacheHit hit = cache_->Lookup(replay);
  EXPECT_EQ(hit.num_tokens, 12u);
  EXPECT_THAT(hit.blocks[0], SizeIs((12 + 4 * d - 1) / (4 * d)));
  EXPECT_THAT(hit.blocks[1], SizeIs(3));
  ASSERT_TRUE(Schedule(replay, 0, 4, &hit));
  const std::vector<BlockCopy> copies = cache_->TakeCopies();
  ASSERT_THAT(copies, SizeIs(1));  // the attention tail; 12 is a state boundary
  EXPECT_EQ(copies[0].group, GroupId{0});
}

INSTANTIATE_TEST_SUITE_P(Widths, DcpCoarseTest, ::testing::Values(2u, 4u));

TEST_F(RecurrentTest, V78_HitFollowsTheRunningOwner) {
  Build({Full(4), State(4)}, 4, 40, 2);
  const Request owner = Make(0, Range(0, 13));
  ASSERT_TRUE(Schedule(owner, 0, 8));
  NextStep();
  const Request replay = Make(1, Range(0, 16));
  CacheHit hit = cache_->Lookup(replay);
  EXPECT_EQ(hit.num_tokens, 8u);
  EXPECT_THAT(hit.blocks[0], SizeIs(1));
  EXPECT_THAT(hit.blocks[1], SizeIs(2));
  ASSERT_TRUE(Schedule(owner, 8, 4));
  NextStep();
  hit = cache_->Lookup(replay);
  EXPECT_EQ(hit.num_tokens, 12u);
  EXPECT_THAT(hit.blocks[0], SizeIs(2));
  EXPECT_THAT(hit.blocks[1], SizeIs(3));
}

TEST_F(RecurrentTest, V79_EagleWithDcp) {
  Build(Eagle({Full(4), State(4)}), 2, 40, 2);
  const Request owner = Make(0, Repeat(7, 6));
  ASSERT_TRUE(Schedule(owner, 0, 4));
  NextStep();
  ASSERT_TRUE(Schedule(owner, 4, 2));
  NextStep();
  const CacheHit hit =
      cache_->Lookup(Make(1, Concat(Repeat(7, 6), Repeat(9, 2))));
  EXPECT_EQ(hit.num_tokens, 4u);
  EXPECT_THAT(hit.blocks[0], SizeIs(1));
  EXPECT_THAT(hit.blocks[1], SizeIs(1));
}

}  // namespace
}  // namespace hkv
