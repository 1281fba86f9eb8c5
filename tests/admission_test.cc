// Whole-sequence admission and the per-request block bound it shares with
// pool sizing (spec §3.2.5, §3.3, §5.1, §9 item 13, vector V-45).
#include <gtest/gtest.h>

#include "test_util.h"

namespace hkv {
namespace {

using ::hkv::testing::Range;
using ::hkv::testing::Table;

constexpr RequestBounds kBounds{.max_model_len = 1000,
                                .max_in_flight_tokens = 4};

TEST(AdmissionTest, MaxBlocksPerRequestPerKind) {
  EXPECT_EQ(MaxBlocksPerRequest({.block_size = 16}, kBounds), 63u);
  EXPECT_EQ(MaxBlocksPerRequest({.block_size = 16},
                                {.max_model_len = 1000, .dcp = 4}),
            16u);  // sharded: 64 tokens per block
  // ceil(min(8 - 1 + 4, 1000) / 2) + 1
  EXPECT_EQ(MaxBlocksPerRequest({.kind = GroupKind::kSlidingWindow,
                                 .block_size = 2,
                                 .sliding_window = 8},
                                kBounds),
            7u);
  // The window is bounded by the model length: ceil(6 / 2) + 1.
  EXPECT_EQ(
      MaxBlocksPerRequest({.kind = GroupKind::kSlidingWindow,
                           .block_size = 2,
                           .sliding_window = 8},
                          {.max_model_len = 6, .max_in_flight_tokens = 4}),
      4u);
  // ceil(min(16 + 4, 1000) / 4)
  EXPECT_EQ(
      MaxBlocksPerRequest(
          {.kind = GroupKind::kChunkedLocal, .block_size = 4, .chunk_size = 16},
          kBounds),
      5u);
  EXPECT_EQ(MaxBlocksPerRequest({.kind = GroupKind::kRecurrent,
                                 .block_size = 256,
                                 .speculative_blocks = 3},
                                kBounds),
            5u);  // state, previous state, 3 speculative
  EXPECT_EQ(MaxBlocksPerRequest({.kind = GroupKind::kRecurrent,
                                 .block_size = 256,
                                 .recurrent_mode = RecurrentMode::kNone,
                                 .speculative_blocks = 3},
                                kBounds),
            4u);
  EXPECT_EQ(
      MaxBlocksPerRequest(
          {.kind = GroupKind::kScratch, .block_size = 64, .scratch_blocks = 2},
          kBounds),
      2u);
}

// W = 8, b = 2, caching off, at most 4 tokens in flight: one request holds
// at most 7 window blocks. A 16-token prompt in 4-token steps, each step
// gated on the whole sequence: every step takes what was predicted, and
// the window releases its oldest blocks on the way.
TEST(AdmissionTest, V45_WindowAdmissionCapMatchesWhatIsAllocated) {
  const CacheConfig config{.groups = {{.kind = GroupKind::kSlidingWindow,
                                       .block_size = 2,
                                       .sliding_window = 8}},
                           .num_blocks = 8,  // 7 usable: the cap
                           .keys = {.hash_unit = 2},
                           .caching = PrefixCaching::kDisabled,
                           .max_model_len = 1000,
                           .max_in_flight_tokens = 4};
  ASSERT_EQ(MaxBlocksPerRequest(config.groups[0], kBounds), 7u);
  internal::CacheCore cache(config);
  const Request r({.id = RequestId{1}}, Range(0, 16), cache.key_scheme());
  const std::uint32_t free_after[] = {5, 3, 1, 1};
  for (std::uint32_t step = 0; step < 4; ++step) {
    std::optional<NewBlocks> placed =
        cache.Allocate(r, {.num_computed_tokens = 4 * step,
                           .num_new_tokens = 4,
                           .gate = AdmissionGate::kWholeSequence});
    ASSERT_TRUE(placed.has_value()) << step;
    EXPECT_EQ(placed->blocks[0].size(), 2u) << step;
    EXPECT_EQ(cache.pool().num_free_blocks(), free_after[step]) << step;
  }
  // At 12 processed tokens the first 5 are out of the window: 2 blocks.
  const std::vector<BlockId> table = Table(cache, r.id());
  ASSERT_EQ(table.size(), 8u);
  EXPECT_EQ(table[0], kNullBlock);
  EXPECT_EQ(table[1], kNullBlock);
  EXPECT_NE(table[2], kNullBlock);
  EXPECT_TRUE(cache.CheckInvariants());
}

TEST(AdmissionTest, WholeSequenceGateRefusesWithoutChangingAnything) {
  const CacheConfig config{.groups = {{.kind = GroupKind::kSlidingWindow,
                                       .block_size = 2,
                                       .sliding_window = 8}},
                           .num_blocks = 7,  // 6 usable, below the cap
                           .keys = {.hash_unit = 2},
                           .max_model_len = 1000,
                           .max_in_flight_tokens = 4};
  internal::CacheCore cache(config);
  const Request r({.id = RequestId{1}}, Range(0, 16), cache.key_scheme());
  EXPECT_FALSE(cache.Allocate(
      r, {.num_new_tokens = 4, .gate = AdmissionGate::kWholeSequence}));
  EXPECT_FALSE(cache.HoldsBlocks(r.id()));
  EXPECT_EQ(cache.pool().num_free_blocks(), 6u);
  // The next chunk alone fits.
  EXPECT_TRUE(cache.Allocate(r, {.num_new_tokens = 4}));
}

TEST(AdmissionTest, WholeSequenceGateCountsFullAttentionWhole) {
  internal::CacheCore cache({.groups = {{.block_size = 4}},
                             .num_blocks = 4,
                             .keys = {.hash_unit = 4}});
  const Request r({.id = RequestId{1}}, Range(0, 16), cache.key_scheme());
  EXPECT_FALSE(cache.Allocate(
      r, {.num_new_tokens = 4, .gate = AdmissionGate::kWholeSequence}));
  const Request short_one({.id = RequestId{2}}, Range(0, 12),
                          cache.key_scheme());
  EXPECT_TRUE(cache.Allocate(
      short_one, {.num_new_tokens = 4, .gate = AdmissionGate::kWholeSequence}));
}

}  // namespace
}  // namespace hkv
