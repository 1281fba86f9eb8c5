// The recommendation rule (hkv/recommend.h) on constructed cases.
#include "hkv/recommend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "hkv/result.h"

namespace hkv {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Candidate Make(const char* label, double capacity, double ttft_p50) {
  return {.label = label,
          .capacity = capacity,
          .ttft_p50_s = ttft_p50,
          .ttft_p99_s = 10 * ttft_p50,
          .reused_tokens = 1000,
          .decode_tokens_per_s = 100,
          .cold_prefill_s = 2.0,
          .hash_unit = 256};
}

TEST(RecommendTest, LowestTtftAmongThoseNearTheBestCapacityWins) {
  // b has the lowest TTFT but 6 % less capacity than c: out. Of a and c
  // (within 5 %: 96 >= 0.95 x 100), a is faster.
  const std::vector<Candidate> c = {Make("a", 96, 1.0), Make("b", 94, 0.5),
                                    Make("c", 100, 1.25)};
  const Recommendation r = Recommend(c, Objective::kTtftP50);
  EXPECT_EQ(r.winner, 0u);
  ASSERT_TRUE(r.runner_up.has_value());
  EXPECT_EQ(*r.runner_up, 2u);
  EXPECT_DOUBLE_EQ(r.margin, (1.25 - 1.0) / 1.25);  // 20 % faster
  EXPECT_EQ(r.eligible, 2u);
  EXPECT_THAT(r.ranking, ElementsAre(0u, 2u, 1u));
  EXPECT_THAT(r.why, HasSubstr("a: best TTFT p50 on the trace, 20.0 % ahead "
                               "of c"));
}

TEST(RecommendTest, TiesGoToTheHigherCapacityThenTheEarlierOne) {
  const std::vector<Candidate> c = {Make("a", 98, 1.0), Make("b", 100, 1.0),
                                    Make("c", 100, 1.0)};
  const Recommendation r = Recommend(c, Objective::kTtftP50);
  EXPECT_EQ(r.winner, 1u);
  EXPECT_EQ(*r.runner_up, 2u);
  EXPECT_DOUBLE_EQ(r.margin, 0.0);
  EXPECT_THAT(r.ranking, ElementsAre(1u, 2u, 0u));
}

TEST(RecommendTest, NobodyElseWithinToleranceLeavesTheBestCapacity) {
  // Only the best capacity is within 5 % of itself, however slow it is.
  const std::vector<Candidate> c = {Make("small", 10, 0.1),
                                    Make("big", 31, 9.0), Make("mid", 20, 1)};
  const Recommendation r = Recommend(c, Objective::kTtftP50);
  EXPECT_EQ(r.winner, 1u);
  EXPECT_FALSE(r.runner_up.has_value());
  EXPECT_EQ(r.margin, 0.0);
  EXPECT_EQ(r.eligible, 1u);
  // The others follow by capacity.
  EXPECT_THAT(r.ranking, ElementsAre(1u, 2u, 0u));
  EXPECT_THAT(r.why, HasSubstr("only configuration within 5 %"));
  EXPECT_THAT(r.why, HasSubstr("3.1x the capacity of small"));
}

TEST(RecommendTest, OneConfigurationWinsAlone) {
  const std::vector<Candidate> c = {Make("only", 5, 1.0)};
  const Recommendation r = Recommend(c, Objective::kReuse);
  EXPECT_EQ(r.winner, 0u);
  EXPECT_FALSE(r.runner_up.has_value());
  EXPECT_THAT(r.ranking, ElementsAre(0u));
  EXPECT_EQ(r.why.rfind("only: ", 0), 0u);
}

TEST(RecommendTest, ObjectivesPickTheirOwnFigure) {
  std::vector<Candidate> c = {Make("a", 100, 1.0), Make("b", 99, 2.0)};
  c[0].ttft_p99_s = 30;  // b wins on p99
  c[1].ttft_p99_s = 20;
  c[1].reused_tokens = 3000;       // b wins on reuse
  c[0].decode_tokens_per_s = 150;  // a wins on decode
  EXPECT_EQ(Recommend(c, Objective::kTtftP50).winner, 0u);
  EXPECT_EQ(Recommend(c, Objective::kTtftP99).winner, 1u);
  const Recommendation reuse = Recommend(c, Objective::kReuse);
  EXPECT_EQ(reuse.winner, 1u);
  EXPECT_DOUBLE_EQ(reuse.margin, 2.0);  // 3000 against 1000: +200 %
  EXPECT_EQ(Recommend(c, Objective::kDecode).winner, 0u);
  EXPECT_EQ(Recommend(c, Objective::kCapacity).winner, 0u);
}

TEST(RecommendTest, WhyStatesCapacityReuseUnitAndColdPrefillCost) {
  std::vector<Candidate> c = {Make("256/256/256", 10, 1.0),
                              Make("2048/256/256", 31, 0.9)};
  c[0].cold_prefill_s = 2.0;
  c[1].cold_prefill_s = 2.4;
  const Recommendation r = Recommend(c, Objective::kTtftP50);
  EXPECT_EQ(r.winner, 1u);
  EXPECT_THAT(r.why, HasSubstr("3.1x the capacity of 256/256/256 with "
                               "256-token reuse; pays 20.0 % on cold "
                               "prefill against 256/256/256"));
}

TEST(RecommendTest, ObjectiveNamesRoundTripAndUnknownOnesFail) {
  for (Objective o :
       {Objective::kTtftP50, Objective::kTtftP99, Objective::kReuse,
        Objective::kCapacity, Objective::kDecode}) {
    Result<Objective> parsed = ParseObjective(ObjectiveName(o));
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, o);
  }
  Result<Objective> bad = ParseObjective("latency");
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message, HasSubstr("\"latency\""));
  EXPECT_THAT(bad.error().message, HasSubstr("ttft-p50"));
}

TEST(RecommendTest, NoCandidatesIsAUsageError) {
  EXPECT_THROW(Recommend({}, Objective::kTtftP50), UsageError);
  const std::vector<Candidate> c = {Make("a", 1, 1)};
  EXPECT_THROW(Recommend(c, Objective::kTtftP50, 1.0), UsageError);
}

}  // namespace
}  // namespace hkv
