// The cost model's terms: what each step feature counts (from the engine,
// by hand) and what each coefficient prices.
#include "hkv/cost_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hkv/group_list.h"
#include "hkv/simulator.h"
#include "hkv/workload.h"

namespace hkv {
namespace {

using ::testing::HasSubstr;

TEST(CostModelTest, EachCoefficientPricesItsFeature) {
  const StepShape shape{.prefill_tokens = 3,
                        .prefill_attention_pairs = 5.0,
                        .decode_tokens = 7,
                        .decode_context_tokens = 11,
                        .requests = 13,
                        .admissions = 17,
                        .state_bytes_written = 19,
                        .draft_tokens = 23,
                        .copies = 1,
                        .copy_bytes = 29};
  // serving_s is no step's: it prices nothing here; neither do the
  // physical scales without a physical part (the last four 0).
  const double features[] = {1, 3, 5, 7, 11, 13, 17, 19, 23, 29, 0, 0, 0, 0};
  static_assert(std::size(features) == kCostCoefficients.size());
  for (std::size_t i = 0; i < kCostCoefficients.size(); ++i) {
    CostModel one;
    ASSERT_TRUE(SetCostCoefficient(one, kCostCoefficients[i], 2.0));
    EXPECT_DOUBLE_EQ(StepSeconds(one, shape), 2.0 * features[i])
        << kCostCoefficients[i];
    EXPECT_DOUBLE_EQ(Feature(one, shape, i), features[i]);
    EXPECT_DOUBLE_EQ(Coefficient(one, i), 2.0);
  }
  EXPECT_DOUBLE_EQ(StepSeconds(CostModel{.step_s = 1.0}, {}), 0.0);
}

// The serving time is the client's, once per request: it is in every TTFT
// and finish time and in no step, so the schedule does not move.
TEST(CostModelTest, ServingTimeAddsToEachRequestAndToNoStep) {
  SimulationOptions o{.cache = {.groups = {{.kind = GroupKind::kFullAttention,
                                            .block_size = 16}},
                                .num_blocks = 64},
                      .cost = {.step_s = 0.01, .prefill_token_s = 1e-4},
                      .concurrency = 2};
  const std::vector<SimRequest> w = {
      {.prompt = {{.id = 1, .length = 100}}, .output_length = 4},
      {.prompt = {{.id = 2, .length = 60}}, .output_length = 2}};
  Result<SimulationResult> plain = Simulate(w, o);
  o.cost.serving_s = 0.25;
  Result<SimulationResult> served = Simulate(w, o);
  ASSERT_TRUE(plain && served);
  EXPECT_EQ(served->steps, plain->steps);
  EXPECT_DOUBLE_EQ(served->makespan_s, plain->makespan_s);
  for (std::size_t i = 0; i < w.size(); ++i) {
    const RequestMetrics& a = plain->per_request[i];
    const RequestMetrics& b = served->per_request[i];
    EXPECT_DOUBLE_EQ(b.first_token_s, a.first_token_s + 0.25) << i;
    EXPECT_DOUBLE_EQ(b.finish_s, a.finish_s + 0.25) << i;
  }
}

TEST(CostModelTest, BoundariesReachedCountsMultiplesOfTheBlockInTheChunk) {
  EXPECT_EQ(BoundariesReached(0, 8192, 256), 32u);  // P/R states
  EXPECT_EQ(BoundariesReached(0, 8192, 2048), 4u);
  EXPECT_EQ(BoundariesReached(0, 255, 256), 0u);
  EXPECT_EQ(BoundariesReached(255, 256, 256), 1u);
  EXPECT_EQ(BoundariesReached(256, 511, 256), 0u);
  EXPECT_EQ(BoundariesReached(100, 300, 256), 1u);
}

TEST(CostModelTest, CostJsonRoundTrips) {
  CostModel cost{.step_s = 0.5, .copy_byte_s = 1e-12};
  Result<CostModel> back = ApplyCostJson({}, CostJson(cost));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_DOUBLE_EQ(back->step_s, 0.5);
  EXPECT_DOUBLE_EQ(back->copy_byte_s, 1e-12);
  EXPECT_THAT(SetCostCoefficient(cost, "bogus", 1.0).error().message,
              HasSubstr("state_write_s"));
}

SimulationOptions Options(std::string_view groups, std::uint32_t unit,
                          std::vector<std::uint64_t> page_bytes) {
  Result<std::vector<GroupSpec>> parsed = ParseGroupList(groups);
  EXPECT_TRUE(parsed) << parsed.error().message;
  return {.cache = {.groups = parsed.value_or(std::vector<GroupSpec>{}),
                    .num_blocks = 4096,
                    .keys = {.function = KeyFunction::kXxh3_128Cbor,
                             .hash_unit = unit}},
          .cost = {.step_s = 1.0},
          .page_bytes = std::move(page_bytes),
          .record_steps = true};
}

StepShape Totals(const std::vector<SimRequest>& w, const SimulationOptions& o) {
  Result<SimulationResult> r = Simulate(w, o);
  EXPECT_TRUE(r) << r.error().message;
  return r ? r->totals : StepShape{};
}

// A cold 8192-token prompt in one chunk: 8192 / R state pages per recurrent
// group, each of the group's page bytes; one request, admitted once.
TEST(CostModelTest, PrefillWritesAStateAtEveryRecurrentBlockBoundary) {
  const std::vector<SimRequest> one = GenerateRepeats(
      {.num_requests = 1, .prompt_tokens = 8192, .output_tokens = 1});
  const StepShape fine =
      Totals(one, Options("full:2048,recurrent:256", 256, {1000, 7}));
  EXPECT_EQ(fine.state_bytes_written, 32u * 7u);
  EXPECT_EQ(fine.prefill_tokens, 8192u);
  EXPECT_DOUBLE_EQ(fine.prefill_attention_pairs, 8192.0 * 8193.0 / 2.0);
  EXPECT_EQ(fine.admissions, 1u);
  const StepShape coarse =
      Totals(one, Options("full:2048,recurrent:2048", 2048, {1000, 7}));
  EXPECT_EQ(coarse.state_bytes_written, 4u * 7u);
  // Without byte facts the feature counts no bytes.
  EXPECT_EQ(Totals(one, Options("full:2048,recurrent:256", 256, {}))
                .state_bytes_written,
            0u);
}

// Attention work is counted on one DCP rank.
TEST(CostModelTest, DcpDividesAttentionWork) {
  const std::vector<SimRequest> one = GenerateRepeats(
      {.num_requests = 1, .prompt_tokens = 4096, .output_tokens = 3});
  SimulationOptions o = Options("full:256", 1024, {});
  o.cache.dcp = 4;
  const StepShape t = Totals(one, o);
  EXPECT_DOUBLE_EQ(t.prefill_attention_pairs, 4096.0 * 4097.0 / 2.0 / 4.0);
  // Two decodes at 4097 and 4098 tokens: ceil(c / 4) context each.
  EXPECT_EQ(t.decode_context_tokens, 1025u + 1025u);
  EXPECT_EQ(t.decode_tokens, 2u);
  EXPECT_EQ(t.requests, 3u);  // one prefill step, two decode steps
}

// Drafts are decode tokens and draft tokens; the step's sampled tokens
// are 1 + the accepted drafts.
TEST(CostModelTest, DraftsAreCountedAndAllAcceptedAtRateOne) {
  const std::vector<SimRequest> one = GenerateRepeats(
      {.num_requests = 1, .prompt_tokens = 256, .output_tokens = 7});
  SimulationOptions o = Options("full:256", 256, {});
  o.speculation = {.num_drafts = 2, .acceptance_rate = 1.0};
  const StepShape t = Totals(one, o);
  // Prefill samples 1; decodes feed 1 + 2 drafts and keep all: 3, 3.
  EXPECT_EQ(t.sampled_tokens, 7u);
  EXPECT_EQ(t.draft_tokens, 4u);
  EXPECT_EQ(t.decode_tokens, 6u);
}

// A resend whose hit ends inside a page copies that page (copy-on-write):
// one copy of the attention group's page bytes.
TEST(CostModelTest, CopyOnWriteBytesAreThePagesCopied) {
  const std::vector<SimRequest> two = GenerateRepeats(
      {.num_requests = 2, .prompt_tokens = 3000, .output_tokens = 1});
  const StepShape t =
      Totals(two, Options("full:2048,recurrent:256", 256, {5000, 9}));
  EXPECT_EQ(t.copies, 1u);
  EXPECT_EQ(t.copy_bytes, 5000u);
}

}  // namespace
}  // namespace hkv
