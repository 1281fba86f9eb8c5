// Workloads at the documented limits: generators refuse options that would
// exceed them before generating, make only the first `limit` requests, and
// ValidateWorkload, SetCostCoefficient and ApplyCostJson name what is out of
// range.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "hkv/cost_model.h"
#include "hkv/limits.h"
#include "hkv/workload.h"

namespace hkv {
namespace {

using ::testing::HasSubstr;

// The message of a Validate() that must fail.
std::string Refusal(const Result<void>& valid) {
  EXPECT_FALSE(valid.has_value());
  return valid ? "" : valid.error().message;
}

TEST(GeneratorLimitsTest, RefuseMoreRequestsThanTheLimitPerWorkload) {
  EXPECT_EQ(Refusal(FanOutOptions{.num_requests = 100000000}.Validate()),
            "requests=100000000: 100000000 requests exceed the limit of "
            "1048576 requests per workload");
  EXPECT_EQ(
      Refusal(
          AgentSessionOptions{.num_sessions = 1024, .turns = 1025}.Validate()),
      "sessions x turns: 1049600 requests exceed the limit of 1048576 "
      "requests per workload");
  EXPECT_THAT(Refusal(NeedleOptions{.num_documents = 2048,
                                    .questions_per_document = 2048}
                          .Validate()),
              HasSubstr("documents x questions: 4194304 requests exceed"));
  EXPECT_THAT(Refusal(RepeatOptions{.num_requests = 1048577}.Validate()),
              HasSubstr("requests=1048577: 1048577 requests exceed"));
  // The warm-up request counts too.
  EXPECT_TRUE(FanOutOptions{.num_requests = 1048576}.Validate().has_value());
  const FanOutOptions warm{.num_requests = 1048576,
                           .warmup = FanOutWarmup::kPrefixFirst};
  EXPECT_FALSE(warm.Validate().has_value());
}

TEST(GeneratorLimitsTest, ALimitWithinItMakesAnyCountValid) {
  EXPECT_TRUE(FanOutOptions{.num_requests = 100000000}.Validate(5).has_value());
  const std::vector<SimRequest> w =
      GenerateFanOut({.num_requests = 100000000}, 5);
  EXPECT_EQ(w.size(), 5u);
  // A billion sessions of one turn: only five are made, nothing is kept for
  // the others.
  EXPECT_EQ(
      GenerateAgentSessions({.num_sessions = 1000000000, .turns = 1}, 5).size(),
      5u);
  EXPECT_EQ(GenerateNeedle(
                {.num_documents = 4000000000, .questions_per_document = 1}, 3)
                .size(),
            3u);
}

TEST(GeneratorLimitsTest, ALimitKeepsTheFirstRequestsOfTheWorkload) {
  const auto first = [](std::vector<SimRequest> w, std::size_t n) {
    w.resize(n);
    return w;
  };
  const AgentSessionOptions agent{.num_sessions = 3, .turns = 4};
  const NeedleOptions needle{
      .num_documents = 3, .document_tokens = 100, .questions_per_document = 4};
  for (std::size_t n : {0u, 1u, 2u, 4u, 7u, 12u}) {
    EXPECT_EQ(GenerateAgentSessions(agent, n),
              first(GenerateAgentSessions(agent), n));
    EXPECT_EQ(GenerateNeedle(needle, n), first(GenerateNeedle(needle), n));
    EXPECT_EQ(GenerateFanOut({.num_requests = 12}, n),
              first(GenerateFanOut({.num_requests = 12}), n));
    EXPECT_EQ(GenerateRepeats({.num_requests = 12}, n),
              first(GenerateRepeats({.num_requests = 12}), n));
  }
  EXPECT_EQ(GenerateRepeats({.num_requests = 2}, 100).size(), 2u);
}

TEST(GeneratorLimitsTest, RefuseRequestsBeyondTheTokenLimit) {
  EXPECT_EQ(
      Refusal(FanOutOptions{
          .prefix_tokens = 16777000, .suffix_tokens = 200, .output_tokens = 17}
                  .Validate()),
      "prefix + suffix + output = 16777217 tokens exceed the limit of "
      "16777216 tokens per request");
  // Turn 8 of an agent session: 4096 + 8 x 2,100,000 + 7 x 256 + 256.
  EXPECT_THAT(
      Refusal(AgentSessionOptions{.message_tokens = 2100000}.Validate()),
      HasSubstr("system + turns x (message + output) + output = "
                "16806144 tokens"));
  EXPECT_TRUE(
      AgentSessionOptions{.message_tokens = 2000000}.Validate().has_value());
  EXPECT_TRUE(AgentSessionOptions{.message_tokens = 2100000}
                  .Validate(16)
                  .has_value());  // turn 1 only
  EXPECT_THAT(Refusal(NeedleOptions{.document_tokens = 4294967295}.Validate()),
              HasSubstr("document + question + output = 4294967423 tokens"));
  EXPECT_THAT(Refusal(RepeatOptions{.prompt_tokens = 16777216}.Validate()),
              HasSubstr("prompt + output = 16777232 tokens"));
}

TEST(GeneratorLimitsTest, RefuseEmptyPromptsAndOutputs) {
  EXPECT_EQ(Refusal(RepeatOptions{.prompt_tokens = 0}.Validate()),
            "prompt must be at least 1 token, got 0");
  EXPECT_EQ(Refusal(FanOutOptions{.output_tokens = 0}.Validate()),
            "output must be at least 1 token, got 0");
  EXPECT_EQ(Refusal(FanOutOptions{.prefix_tokens = 0,
                                  .warmup = FanOutWarmup::kPrefixFirst}
                        .Validate()),
            "prefix must be at least 1 token with warmup=1, got 0");
}

TEST(GeneratorLimitsTest, RefuseTimesThatAreNotFiniteOrTooLarge) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(Refusal(FanOutOptions{.interval_s = nan}.Validate()),
            "interval must be in [0, 1e+12] s, got nan");
  EXPECT_EQ(Refusal(NeedleOptions{.interval_s = -1.0}.Validate()),
            "interval must be in [0, 1e+12] s, got -1");
  EXPECT_EQ(Refusal(AgentSessionOptions{.think_s = 1e300}.Validate()),
            "think must be in [0, 1e+12] s, got 1e+300");
  // Each interval is fine; the 64 of them add up past the limit.
  EXPECT_EQ(Refusal(FanOutOptions{.interval_s = 1e11}.Validate()),
            "interval 1e+11 s x 64 exceeds 1e+12 s");
}

TEST(GeneratorLimitsTest, GeneratingFromInvalidOptionsThrows) {
  EXPECT_THROW(GenerateFanOut({.num_requests = 2000000}), UsageError);
  EXPECT_THROW(GenerateRepeats({.output_tokens = 0}), UsageError);
}

TEST(WorkloadLimitsTest, ValidateNamesTokensAndTimesOutOfRange) {
  std::vector<SimRequest> w = GenerateRepeats({.num_requests = 2});
  w[1].prompt.push_back({.id = 9, .length = kMaxTokensPerRequest});
  EXPECT_EQ(Refusal(ValidateWorkload(w)),
            "workload request 1: 16810000 tokens exceed the limit of "
            "16777216 tokens per request");
  w = GenerateRepeats({.num_requests = 2});
  w[1].delay_s = std::numeric_limits<double>::infinity();
  EXPECT_EQ(Refusal(ValidateWorkload(w)),
            "workload request 1: arrival 0 s or delay inf s is not in [0, "
            "1e+12] s");
}

TEST(WorkloadLimitsTest, ValidateRefusesMoreRequestsThanTheLimit) {
  const std::vector<SimRequest> w(kMaxRequestsPerWorkload + 1);
  EXPECT_EQ(Refusal(ValidateWorkload(w)),
            "workload of 1048577 requests exceeds the limit of 1048576 "
            "requests");
}

TEST(CostLimitsTest, CoefficientsStayWithinTheTimeLimit) {
  CostModel model;
  EXPECT_EQ(Refusal(SetCostCoefficient(model, "step_s", 1e308)),
            "cost coefficient step_s must be in [0, 1e+12] s, got 1e+308");
  EXPECT_THAT(Refusal(SetCostCoefficient(model, "decode_token_s", -0.5)),
              HasSubstr("got -0.5"));
  EXPECT_TRUE(SetCostCoefficient(model, "step_s", 1e12).has_value());
  EXPECT_EQ(model.step_s, 1e12);
}

TEST(CostLimitsTest, JsonNumbersBeyondADoubleAreNamed) {
  const Result<CostModel> cost = ApplyCostJson({}, R"({"step_s": 1e400})");
  ASSERT_FALSE(cost.has_value());
  EXPECT_THAT(cost.error().message,
              HasSubstr("cost model file is not valid JSON"));
  EXPECT_THAT(cost.error().message, HasSubstr("1e400"));
}

}  // namespace
}  // namespace hkv
