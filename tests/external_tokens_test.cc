// Tokens a connector loads into a request's blocks (spec §3.6
// allocate_external_computed_blocks, §9 item 12, vector V-47).
#include <gtest/gtest.h>

#include "test_util.h"

namespace hkv {
namespace {

using ::hkv::testing::Range;
using ::hkv::testing::Table;

TEST(ExternalTokensTest, V47_NoAllocationAfterSpeculativeOverAllocation) {
  internal::CacheCore cache({.groups = {{.block_size = 4}},
                             .num_blocks = 16,
                             .keys = {.hash_unit = 4}});
  const Request r({.id = RequestId{1}}, Range(0, 16), cache.key_scheme());
  // Four tokens and eight lookahead slots: three blocks held.
  ASSERT_TRUE(
      cache.Allocate(r, {.num_new_tokens = 4, .num_lookahead_tokens = 8}));
  ASSERT_EQ(Table(cache, r.id()).size(), 3u);
  const std::uint32_t free_before = cache.pool().num_free_blocks();
  std::optional<NewBlocks> placed = cache.Allocate(
      r, {.num_computed_tokens = 4, .num_external_computed_tokens = 4});
  ASSERT_TRUE(placed.has_value());
  EXPECT_TRUE(placed->blocks[0].empty());
  EXPECT_EQ(cache.pool().num_free_blocks(), free_before);
  EXPECT_EQ(Table(cache, r.id()).size(), 3u);
  EXPECT_TRUE(cache.CheckInvariants());
}

TEST(ExternalTokensTest, ExternalTokensAreCoveredAndCommittable) {
  internal::CacheCore cache({.groups = {{.block_size = 4}},
                             .num_blocks = 16,
                             .keys = {.hash_unit = 4}});
  const Request r({.id = RequestId{1}}, Range(0, 13), cache.key_scheme());
  std::optional<NewBlocks> placed = cache.Allocate(
      r, {.num_external_computed_tokens = 8, .num_new_tokens = 5});
  ASSERT_TRUE(placed.has_value());
  EXPECT_EQ(placed->blocks[0].size(), 4u);  // 13 tokens
  cache.Commit(r, 13);
  cache.Free(r.id());
  const Request again({.id = RequestId{2}}, Range(0, 13), cache.key_scheme());
  EXPECT_EQ(cache.Lookup(again).num_tokens, 12u);
  // External tokens are computed, not hits.
  EXPECT_EQ(cache.TakeStats().hits, 0u);
}

// A new request whose hit a connector extends past a window: the window
// group keeps null slots for what it no longer reads, the recurrent group
// holds only the state after the loaded tokens, and the predictors agree
// with the allocators (checked inside Allocate).
TEST(ExternalTokensTest, HybridNewRequestSkipsWhatTheWindowNoLongerReads) {
  internal::CacheCore cache(
      {.groups = {{.block_size = 4},
                  {.kind = GroupKind::kSlidingWindow,
                   .block_size = 4,
                   .sliding_window = 4},
                  {.kind = GroupKind::kRecurrent, .block_size = 4}},
       .num_blocks = 64,
       .keys = {.hash_unit = 4}});
  const Request owner({.id = RequestId{1}}, Range(0, 9), cache.key_scheme());
  ASSERT_TRUE(cache.Allocate(owner, {.num_new_tokens = 8}));
  cache.Commit(owner, 8);
  cache.Free(owner.id());
  cache.FinishStep();

  const Request r({.id = RequestId{2}}, Range(0, 30), cache.key_scheme());
  const CacheHit hit = cache.Lookup(r);
  ASSERT_EQ(hit.num_tokens, 8u);
  std::optional<NewBlocks> placed = cache.Allocate(
      r,
      {.num_external_computed_tokens = 16, .num_new_tokens = 6, .hit = &hit});
  ASSERT_TRUE(placed.has_value());
  // Full attention: 8 tokens hit (2 blocks), 22 more (6 blocks).
  EXPECT_EQ(Table(cache, r.id(), 0).size(), 8u);
  EXPECT_EQ(placed->blocks[0].size(), 6u);
  // Window of 4 after 24 computed tokens: blocks 0-4 are not read.
  const std::vector<BlockId> window = Table(cache, r.id(), 1);
  ASSERT_EQ(window.size(), 8u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(window[i], kNullBlock) << i;
  EXPECT_EQ(placed->blocks[1].size(), 3u);
  // Recurrent: one state block, at the end.
  const std::vector<BlockId> state = Table(cache, r.id(), 2);
  ASSERT_EQ(state.size(), 8u);
  EXPECT_NE(state.back(), kNullBlock);
  EXPECT_EQ(placed->blocks[2].size(), 1u);
  EXPECT_TRUE(cache.CheckInvariants());
}

}  // namespace
}  // namespace hkv
