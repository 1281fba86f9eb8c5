// The engine simulator: exact expectations for reuse, latency and
// accounting, and the errors that end a run instead of hanging it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/group_list.h"
#include "hkv/simulator.h"
#include "hkv/workload.h"

namespace hkv {
namespace {

using ::testing::HasSubstr;

// Every coefficient non-zero, so that each feature shows in the times.
CostModel TestCost() {
  return {.step_s = 0.01,
          .prefill_token_s = 1e-4,
          .prefill_attention_s = 1e-9,
          .decode_token_s = 2e-4,
          .decode_context_s = 1e-7};
}

SimulationOptions Options(std::string_view groups, std::uint32_t hash_unit,
                          std::uint32_t num_blocks) {
  Result<std::vector<GroupSpec>> parsed = ParseGroupList(groups);
  EXPECT_TRUE(parsed.has_value()) << parsed.error().message;
  return {.cache = {.groups = parsed.value_or(std::vector<GroupSpec>{}),
                    .num_blocks = num_blocks,
                    .keys = {.function = KeyFunction::kXxh3_128Cbor,
                             .hash_unit = hash_unit}},
          .cost = TestCost()};
}

SimulationResult Simulated(const std::vector<SimRequest>& workload,
                           const SimulationOptions& options) {
  Result<SimulationResult> result = Simulate(workload, options);
  EXPECT_TRUE(result.has_value()) << result.error().message;
  return result.value_or(SimulationResult{});
}

// Each request finished once, with all its outputs, and the prompt
// tokens split into reused and computed.
void ExpectAccounted(const std::vector<SimRequest>& workload,
                     const SimulationResult& r) {
  EXPECT_EQ(r.requests, workload.size());
  EXPECT_EQ(r.finished, workload.size());
  std::uint64_t prompt = 0;
  std::uint64_t outputs = 0;
  for (std::size_t i = 0; i < workload.size(); ++i) {
    prompt += PromptLength(workload[i]);
    outputs += workload[i].output_length;
    EXPECT_EQ(r.per_request[i].output_tokens, workload[i].output_length) << i;
    EXPECT_GE(r.per_request[i].finish_s, r.per_request[i].first_token_s) << i;
  }
  EXPECT_EQ(r.prompt_tokens, prompt);
  EXPECT_EQ(r.output_tokens, outputs);
  EXPECT_EQ(r.reused_tokens + r.computed_tokens, r.prompt_tokens);
}

struct RepeatCase {
  std::string_view groups;
  std::uint32_t hash_unit;
  std::uint32_t expected_hit;
};

class IdenticalRepeatTest : public ::testing::TestWithParam<RepeatCase> {};

// A repeat of a 52,445-token prompt resumes from the last hash-unit
// checkpoint before its last token (spec §5.6): 204 x 256 = 52,224 tokens
// at 256-token units, 25 x 2048 = 51,200 at 2048; an EAGLE draft model
// rewinds one more unit (the 51,968 of spec §5.6).
TEST_P(IdenticalRepeatTest, ReusesWhatTheLookupRulesSay) {
  const RepeatCase& c = GetParam();
  const std::vector<SimRequest> workload =
      GenerateRepeats({.num_requests = 2, .prompt_tokens = 52445});
  const SimulationResult r =
      Simulated(workload, Options(c.groups, c.hash_unit, 8192));
  ExpectAccounted(workload, r);
  EXPECT_EQ(r.per_request[0].reused_tokens, 0u);
  EXPECT_EQ(r.per_request[1].reused_tokens, c.expected_hit);
  EXPECT_EQ(r.preemptions, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, IdenticalRepeatTest,
    ::testing::Values(RepeatCase{"full:256,recurrent:256", 256, 52224},
                      RepeatCase{"full:2048,recurrent:2048", 2048, 51200},
                      RepeatCase{"full:2048,recurrent:256", 256, 52224},
                      RepeatCase{"full:2048:eagle,recurrent:256", 256, 51968},
                      RepeatCase{"full:16", 16, 52432}));

// A fan-out resumes where full attention proves the prefix: at a 2048-token
// page boundary (14,336 of 16,000), or, when the prefix was sent alone
// first and hash units are finer, at its tail checkpoint (15,872).
TEST(SimulatorTest, FanOutReusesFinerAfterAWarmUpWithFineUnits) {
  const auto reuse = [](std::string_view groups, std::uint32_t unit,
                        FanOutWarmup warmup) {
    const std::vector<SimRequest> w = GenerateFanOut({.num_requests = 4,
                                                      .prefix_tokens = 16000,
                                                      .suffix_tokens = 512,
                                                      .output_tokens = 4,
                                                      .warmup = warmup});
    SimulationOptions options = Options(groups, unit, 4096);
    options.arrivals = ArrivalMode::kClosedLoop;
    options.concurrency = 1;
    const SimulationResult r = Simulated(w, options);
    ExpectAccounted(w, r);
    return r.per_request.back().reused_tokens;
  };
  EXPECT_EQ(reuse("full:2048,recurrent:2048", 2048, FanOutWarmup::kNone),
            14336u);
  EXPECT_EQ(reuse("full:2048,recurrent:256", 256, FanOutWarmup::kNone), 14336u);
  EXPECT_EQ(reuse("full:2048,recurrent:2048", 2048, FanOutWarmup::kPrefixFirst),
            14336u);
  EXPECT_EQ(reuse("full:2048,recurrent:256", 256, FanOutWarmup::kPrefixFirst),
            15872u);
}

// At a fixed concurrency of long requests and about as many blocks (a
// recurrent state sets the stride of both pools), 256-token pages hold an
// eighth of the tokens 2048-token pages do: fewer requests run at once.
TEST(SimulatorTest, SmallPagesHoldFewerLongRequests) {
  const std::vector<SimRequest> w = GenerateNeedle({.num_documents = 8,
                                                    .document_tokens = 30000,
                                                    .questions_per_document = 1,
                                                    .output_tokens = 64});
  const auto run = [&w](std::string_view groups, std::uint32_t blocks) {
    SimulationOptions options = Options(groups, 256, blocks);
    options.arrivals = ArrivalMode::kClosedLoop;
    options.concurrency = 8;
    return Simulated(w, options);
  };
  const SimulationResult small = run("full:256,recurrent:256", 400);
  const SimulationResult large = run("full:2048,recurrent:256", 340);
  ExpectAccounted(w, small);
  ExpectAccounted(w, large);
  EXPECT_EQ(large.peak_running, 8u);
  EXPECT_EQ(large.preemptions, 0u);
  EXPECT_LT(small.peak_running, 8u);
  EXPECT_GT(small.makespan_s, large.makespan_s);
}

TEST(SimulatorTest, OneRequestWithoutReuseTakesThePrefillTimeToFirstToken) {
  const std::vector<SimRequest> workload =
      GenerateRepeats({.num_requests = 1, .prompt_tokens = 20000});
  const SimulationResult r = Simulated(workload, Options("full:16", 16, 4096));
  ExpectAccounted(workload, r);
  // Chunks of the 8192-token budget: 8192, 8192, 3616.
  const CostModel cost = TestCost();
  double expected = 0.0;
  for (auto [start, end] : {std::pair<std::uint64_t, std::uint64_t>{0, 8192},
                            {8192, 16384},
                            {16384, 20000}}) {
    expected += StepSeconds(
        cost, {.prefill_tokens = end - start,
               .prefill_attention_pairs = PrefillAttentionPairs(start, end)});
  }
  EXPECT_DOUBLE_EQ(r.ttft.p50_s, expected);
  EXPECT_DOUBLE_EQ(r.per_request[0].first_token_s, expected);
}

TEST(SimulatorTest, APromptsLastTokenIsPrefillEvenWithDrafts) {
  // The repeat hits 32 of 33 tokens; its last token is a prefill of one
  // token, not a decode with drafts.
  const std::vector<SimRequest> workload = GenerateRepeats(
      {.num_requests = 2, .prompt_tokens = 33, .output_tokens = 1});
  SimulationOptions options = Options("full:16", 16, 64);
  options.speculation = {.num_drafts = 3, .acceptance_rate = 1.0};
  const SimulationResult r = Simulated(workload, options);
  ExpectAccounted(workload, r);
  EXPECT_EQ(r.per_request[1].reused_tokens, 32u);
  EXPECT_EQ(r.drafts_proposed, 0u);
  EXPECT_DOUBLE_EQ(
      r.per_request[1].first_token_s - r.per_request[1].arrival_s,
      StepSeconds(TestCost(),
                  {.prefill_tokens = 1,
                   .prefill_attention_pairs = PrefillAttentionPairs(32, 33)}));
}

TEST(SimulatorTest, DecodeStepsCostTheirContext) {
  const std::vector<SimRequest> workload = GenerateRepeats(
      {.num_requests = 1, .prompt_tokens = 1000, .output_tokens = 3});
  const SimulationResult r = Simulated(workload, Options("full:16", 16, 4096));
  // Two decodes of one token at 1001 and 1002 tokens of context.
  const CostModel cost = TestCost();
  const double decodes =
      StepSeconds(cost, {.decode_tokens = 1, .decode_context_tokens = 1001}) +
      StepSeconds(cost, {.decode_tokens = 1, .decode_context_tokens = 1002});
  EXPECT_DOUBLE_EQ(r.per_request[0].finish_s - r.per_request[0].first_token_s,
                   decodes);
  EXPECT_DOUBLE_EQ(r.tpot.p50_s, decodes / 2);
}

TEST(SimulatorTest, APoolTooSmallForOneRequestEndsWithAnError) {
  const std::vector<SimRequest> workload =
      GenerateRepeats({.num_requests = 3, .prompt_tokens = 5000});
  const Result<SimulationResult> r =
      Simulate(workload, Options("full:256", 256, 8));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInfeasible);
  EXPECT_THAT(r.error().message, HasSubstr("request 0 (5000 prompt tokens)"));
  EXPECT_THAT(r.error().message, HasSubstr("7 usable blocks"));
}

TEST(SimulatorTest, ARequestOutgrowingThePoolEndsWithAnError) {
  // The prompt fits in 3 blocks; its outputs need a fourth.
  const std::vector<SimRequest> workload = GenerateRepeats(
      {.num_requests = 1, .prompt_tokens = 700, .output_tokens = 200});
  const Result<SimulationResult> r =
      Simulate(workload, Options("full:256", 256, 4));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInfeasible);
  EXPECT_THAT(r.error().message, HasSubstr("cannot grow to 769 tokens"));
}

TEST(SimulatorTest, PreemptedRequestsFinishExactlyOnce) {
  const std::vector<SimRequest> workload =
      GenerateFanOut({.num_requests = 24,
                      .prefix_tokens = 3000,
                      .suffix_tokens = 700,
                      .output_tokens = 300});
  SimulationOptions options = Options("full:256,recurrent:256", 256, 64);
  options.speculation = {
      .num_drafts = 3, .acceptance_rate = 0.6, .lookahead_slots = 3};
  const SimulationResult r = Simulated(workload, options);
  ExpectAccounted(workload, r);
  EXPECT_GT(r.preemptions, 0u);
  EXPECT_GT(r.recomputed_tokens, 0u);
  EXPECT_GT(r.drafts_accepted, 0u);
  EXPECT_LT(r.drafts_accepted, r.drafts_proposed);
}

TEST(SimulatorTest, ClosedLoopKeepsTheConcurrency) {
  const std::vector<SimRequest> workload = GenerateFanOut(
      {.num_requests = 40, .prefix_tokens = 2048, .output_tokens = 20});
  SimulationOptions options = Options("full:256,recurrent:256", 256, 2048);
  options.arrivals = ArrivalMode::kClosedLoop;
  options.concurrency = 4;
  const SimulationResult r = Simulated(workload, options);
  ExpectAccounted(workload, r);
  EXPECT_EQ(r.peak_running, 4u);
  // All but the first four see the shared prefix committed.
  EXPECT_EQ(r.per_request[39].reused_tokens, 2048u);
}

TEST(SimulatorTest, AgentTurnsReuseThePreviousTurn) {
  const std::vector<SimRequest> workload =
      GenerateAgentSessions({.num_sessions = 3,
                             .turns = 3,
                             .system_tokens = 1024,
                             .message_tokens = 300,
                             .output_tokens = 100});
  const SimulationResult r =
      Simulated(workload, Options("full:256,recurrent:256", 256, 1024));
  ExpectAccounted(workload, r);
  // Turn 2 of session 0 (index 3) carries turn 1's 1424 tokens and output:
  // reuse up to the last 256-token checkpoint of that prefix or beyond.
  EXPECT_GE(r.per_request[3].reused_tokens, 1280u);
  EXPECT_GE(r.per_request[3].arrival_s, r.per_request[0].finish_s + 2.0);
}

TEST(SimulatorTest, SameSeedSameRun) {
  const std::vector<SimRequest> workload = GenerateFanOut({.num_requests = 8});
  SimulationOptions options = Options("full:256,recurrent:256", 256, 1024);
  options.speculation = {.num_drafts = 2, .acceptance_rate = 0.5};
  const SimulationResult a = Simulated(workload, options);
  const SimulationResult b = Simulated(workload, options);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.drafts_accepted, b.drafts_accepted);
  EXPECT_DOUBLE_EQ(a.makespan_s, b.makespan_s);
}

TEST(SimulatorTest, RejectsBadOptions) {
  SimulationOptions options = Options("full:16", 16, 64);
  options.speculation.acceptance_rate = 1.5;
  EXPECT_FALSE(options.Validate().has_value());
  options = Options("full:16", 16, 64);
  options.limits.max_num_batched_tokens = 0;
  EXPECT_FALSE(options.Validate().has_value());
}

// Per-group residency over the run: evenly spaced samples, at most 128, one
// count per group, ending at what the run left cached.
TEST(SimulatorTest, ResidencyIsSampledOverTheRun) {
  const std::vector<SimRequest> w =
      GenerateAgentSessions({.num_sessions = 6, .turns = 6});
  SimulationOptions options = Options("full:256,recurrent:256", 256, 4000);
  options.arrivals = ArrivalMode::kClosedLoop;
  const SimulationResult r = Simulated(w, options);
  ASSERT_GE(r.residency.size(), 2u);
  EXPECT_LE(r.residency.size(), 128u);
  for (std::size_t i = 1; i < r.residency.size(); ++i) {
    EXPECT_GT(r.residency[i].time_s, r.residency[i - 1].time_s);
    EXPECT_THAT(r.residency[i].cached_blocks, ::testing::SizeIs(2));
  }
  std::uint64_t most = 0;
  for (const ResidencySample& s : r.residency) {
    most = std::max(most, s.cached_blocks[0]);
  }
  EXPECT_GT(most, 0u);
  EXPECT_LE(r.residency.back().time_s, r.makespan_s);
}

}  // namespace
}  // namespace hkv
