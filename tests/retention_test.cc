// Sparse retention masks: V-55 and the block-aligned and recurrent rules.
#include "groups/retention.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hkv::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(RetentionTest, V55_FineWindowKeepsTheTailBeforeTheResend) {
  const std::uint32_t reachable[] = {27};
  RetentionQuery q{.start = 0,
                   .end = 4,
                   .alignment = 2,
                   .interval = 0,
                   .rewind = true,
                   .reachable = reachable};
  EXPECT_THAT(WindowRetention(q, 8, 8), ElementsAre(false, false, true, true));
  q.interval = std::nullopt;
  EXPECT_THAT(WindowRetention(q, 8, 8), IsEmpty());  // dense: all
}

TEST(RetentionTest, BlockAlignedWindowKeepsEachSegmentTail) {
  // b = 4, A = 16 (4 blocks a segment), W = 5 needs 1 block before a hit,
  // so only the last block of each segment can serve one.
  const RetentionQuery dense{.start = 0, .end = 8, .alignment = 16};
  EXPECT_THAT(
      WindowRetention(dense, 4, 5),
      ElementsAre(false, false, false, true, false, false, false, true));
  // R = 0 keeps only what the resend at 20 (aligned: 16) needs.
  const std::uint32_t reachable[] = {20};
  const RetentionQuery sparse{.start = 0,
                              .end = 8,
                              .alignment = 16,
                              .interval = 0,
                              .reachable = reachable};
  EXPECT_THAT(
      WindowRetention(sparse, 4, 5),
      ElementsAre(false, false, false, true, false, false, false, false));
}

TEST(RetentionTest, StatesAtSegmentEndsAndResendPositions) {
  const std::uint32_t reachable[] = {40};
  // b = 8, R = 32: the block ending on 32; the resend at 40 keeps the state
  // at 40 (block 4).
  const RetentionQuery q{.start = 0,
                         .end = 6,
                         .alignment = 8,
                         .interval = 32,
                         .reachable = reachable};
  EXPECT_THAT(StateRetention(q, 8),
              ElementsAre(false, false, false, true, true, false));
  const RetentionQuery dense{.start = 0, .end = 6, .alignment = 8};
  EXPECT_THAT(StateRetention(dense, 8), IsEmpty());
}

TEST(RetentionTest, ReachablePositionsIncludeTheRewoundOne) {
  EXPECT_THAT(ReachablePositions(27, 2, false), ElementsAre(26u));
  EXPECT_THAT(ReachablePositions(27, 2, true), ElementsAre(26u, 24u));
  EXPECT_THAT(ReachablePositions(1, 2, true), ElementsAre(0u, 0u));
}

}  // namespace
}  // namespace hkv::internal
