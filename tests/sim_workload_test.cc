// Simulator workloads and the cost model: generators reproducible from
// their seed, traces converted token for token, the preset's published
// figures.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "hkv/azure_trace.h"
#include "hkv/cost_model.h"
#include "hkv/mooncake_trace.h"
#include "hkv/workload.h"

namespace hkv {
namespace {

using ::testing::HasSubstr;

TEST(WorkloadTest, GeneratorsAreReproducibleFromTheSeed) {
  EXPECT_EQ(GenerateFanOut({.seed = 7}), GenerateFanOut({.seed = 7}));
  EXPECT_NE(GenerateFanOut({.seed = 7}), GenerateFanOut({.seed = 8}));
  EXPECT_EQ(GenerateAgentSessions({.seed = 3}),
            GenerateAgentSessions({.seed = 3}));
  EXPECT_EQ(GenerateNeedle({.seed = 3}), GenerateNeedle({.seed = 3}));
  EXPECT_EQ(GenerateRepeats({.seed = 3}), GenerateRepeats({.seed = 3}));
  EXPECT_NE(PromptTokens(GenerateRepeats({.seed = 3})[0]),
            PromptTokens(GenerateRepeats({.seed = 4})[0]));
}

TEST(WorkloadTest, GeneratedWorkloadsAreValid) {
  for (const std::vector<SimRequest>& w :
       {GenerateFanOut({}), GenerateAgentSessions({}), GenerateNeedle({}),
        GenerateRepeats({})}) {
    Result<void> ok = ValidateWorkload(w);
    EXPECT_TRUE(ok.has_value()) << ok.error().message;
  }
}

TEST(WorkloadTest, FanOutSharesExactlyThePrefix) {
  const std::vector<SimRequest> w = GenerateFanOut(
      {.num_requests = 2, .prefix_tokens = 1000, .suffix_tokens = 50});
  const std::vector<TokenId> a = PromptTokens(w[0]);
  const std::vector<TokenId> b = PromptTokens(w[1]);
  ASSERT_EQ(a.size(), 1050u);
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + 1000, b.begin()));
  EXPECT_NE(std::vector<TokenId>(a.begin() + 1000, a.end()),
            std::vector<TokenId>(b.begin() + 1000, b.end()));
}

TEST(WorkloadTest, AgentTurnQuotesThePreviousPromptAndOutput) {
  const std::vector<SimRequest> w = GenerateAgentSessions({.num_sessions = 2,
                                                           .turns = 2,
                                                           .system_tokens = 100,
                                                           .message_tokens = 10,
                                                           .output_tokens = 5});
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[2].after, 0u);
  std::vector<TokenId> expected = PromptTokens(w[0]);
  const std::vector<TokenId> out = OutputTokens(w[0], 0, 5);
  expected.insert(expected.end(), out.begin(), out.end());
  const std::vector<TokenId> next = PromptTokens(w[2]);
  ASSERT_EQ(next.size(), 125u);
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), next.begin()));
}

TEST(WorkloadTest, MooncakeRequestsKeepTheirTokens) {
  const std::vector<TraceRequest> trace = {{.timestamp_ms = 1500,
                                            .input_length = 1100,
                                            .output_length = 0,
                                            .hash_ids = {4, 5, 6}}};
  const std::vector<SimRequest> w = FromMooncake(trace);
  EXPECT_EQ(PromptTokens(w[0]), MooncakeTokens(trace[0]));
  EXPECT_DOUBLE_EQ(w[0].arrival_s, 1.5);
  EXPECT_EQ(w[0].output_length, 1u);
}

TEST(WorkloadTest, CutLimitsScalesAndDropsOrphans) {
  std::vector<SimRequest> w = GenerateAgentSessions(
      {.num_sessions = 2, .turns = 3, .interval_s = 10.0});
  // Arrivals 0, 10 (turn 1), then 20 for later turns.
  const std::vector<SimRequest> cut =
      CutWorkload(w, {.time_scale = 2.0, .duration_s = 6.0});
  ASSERT_EQ(cut.size(),
            2u);  // session 0's turn 1 (at 0) and session 1's (at 5)
  EXPECT_DOUBLE_EQ(cut[1].arrival_s, 5.0);
  EXPECT_EQ(CutWorkload(w, {.limit = 4}).size(), 4u);
  EXPECT_EQ(CutWorkload(w, {.limit = 4})[3].after, 1u);
  EXPECT_FALSE(WorkloadCut{.time_scale = 0.0}.Validate().has_value());
}

TEST(WorkloadTest, ValidationNamesTheRequest) {
  std::vector<SimRequest> w = GenerateFanOut({.num_requests = 3});
  w[2].output_length = 0;
  Result<void> ok = ValidateWorkload(w);
  ASSERT_FALSE(ok.has_value());
  EXPECT_THAT(ok.error().message, HasSubstr("workload request 2"));
}

TEST(AzureTraceTest, ReadsLengthsAndSynthesisesSharing) {
  const char* csv =
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
      "2023-11-16 18:15:46.5,374,44\n"
      "2023-11-16 18:15:50.0,396,0\r\n"
      "2023-11-17 00:00:00,2000,20\n";
  const Result<std::vector<SimRequest>> w = ParseAzureTrace(
      csv, {.num_prefixes = 1, .prefix_tokens = 100, .shared_fraction = 1.0});
  ASSERT_TRUE(w.has_value()) << w.error().message;
  ASSERT_EQ(w->size(), 3u);
  EXPECT_DOUBLE_EQ((*w)[1].arrival_s, 3.5);
  // 18:15:46.5 to midnight: 5 h 44 min 13.5 s.
  EXPECT_DOUBLE_EQ((*w)[2].arrival_s, 5 * 3600 + 44 * 60 + 13.5);
  EXPECT_EQ(PromptLength((*w)[0]), 374u);
  EXPECT_EQ((*w)[1].output_length, 1u);
  // Every request opens with the one shared prefix.
  EXPECT_EQ((*w)[0].prompt[0], (*w)[2].prompt[0]);
  EXPECT_EQ((*w)[0].prompt[0].length, 100u);
  EXPECT_EQ(ParseAzureTrace(csv, {.seed = 5}).value(),
            ParseAzureTrace(csv, {.seed = 5}).value());
}

// The published files end every line, the header's too, with CRLF.
TEST(AzureTraceTest, ReadsCrlfFiles) {
  const Result<std::vector<SimRequest>> w = ParseAzureTrace(
      "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
      "2023-11-16 18:15:46.5,374,44\r\n",
      {});
  ASSERT_TRUE(w.has_value()) << w.error().message;
  EXPECT_EQ(w->size(), 1u);
}

TEST(AzureTraceTest, BadLinesAreNamed) {
  const Result<std::vector<SimRequest>> w = ParseAzureTrace(
      "TIMESTAMP,ContextTokens,GeneratedTokens\n1.0,5,5\n2.0,x,5\n", {});
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().code, ErrorCode::kCorruption);
  EXPECT_THAT(w.error().message, HasSubstr("line 3"));
  EXPECT_FALSE(ParseAzureTrace("a,b\n", {}).has_value());
}

TEST(CostModelTest, CoefficientsCanBeOverridden) {
  CostModel cost = *CostModelPreset("glm53-flash-gb10x4");
  ASSERT_TRUE(SetCostCoefficient(cost, "step_s", 0.5).has_value());
  EXPECT_DOUBLE_EQ(cost.step_s, 0.5);
  EXPECT_FALSE(SetCostCoefficient(cost, "bogus", 1.0).has_value());
  EXPECT_FALSE(SetCostCoefficient(cost, "step_s", -1.0).has_value());
  Result<CostModel> from_json =
      ApplyCostJson(cost, R"({"name": "mine", "decode_token_s": 0.001})");
  ASSERT_TRUE(from_json.has_value()) << from_json.error().message;
  EXPECT_EQ(from_json->name, "mine");
  EXPECT_DOUBLE_EQ(from_json->decode_token_s, 0.001);
  EXPECT_DOUBLE_EQ(from_json->step_s, 0.5);
  EXPECT_FALSE(ApplyCostJson(cost, "[1]").has_value());
  EXPECT_FALSE(ApplyCostJson(cost, R"({"step_s": "x"})").has_value());
  EXPECT_THAT(CostModelPreset("nope").error().message,
              HasSubstr("glm53-flash-gb10x4"));
}

TEST(CostModelTest, AttentionPairsSumThePositions) {
  EXPECT_DOUBLE_EQ(PrefillAttentionPairs(0, 3), 1 + 2 + 3);
  EXPECT_DOUBLE_EQ(PrefillAttentionPairs(2, 4), 3 + 4);
  EXPECT_DOUBLE_EQ(StepSeconds(CostModel{.step_s = 1.0}, {}), 0.0);
}

}  // namespace
}  // namespace hkv
