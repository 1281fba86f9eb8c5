// The named scenarios: parsing, and each one's exact cache figures on the
// measured deployments, derived from the lookup rules (spec §3.4.6, §5.6):
// a prompt's reusable state is at its checkpoint, and a group holding draft
// layers proves one hash unit past a hit and drops it.
#include "hkv/scenarios.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hkv/calibration.h"

namespace hkv {
namespace {

using ::testing::HasSubstr;

TEST(ScenarioTest, ParsesEachKindWithItsArguments) {
  Result<Scenario> cell =
      ParseScenario("decode-cell:concurrency=16,context=32768,seconds=30");
  ASSERT_TRUE(cell) << cell.error().message;
  EXPECT_EQ(cell->kind, ScenarioKind::kDecodeCell);
  EXPECT_EQ(cell->concurrency, 16u);
  EXPECT_EQ(cell->context_tokens, 32768u);
  EXPECT_DOUBLE_EQ(cell->seconds, 30.0);
  EXPECT_EQ(ScenarioConcurrency(*cell), 16u);
  Result<Scenario> shared =
      ParseScenario("shared-prefix:streams=4,prefix=1000,suffix=10");
  ASSERT_TRUE(shared) << shared.error().message;
  const std::vector<SimRequest> w = GenerateScenario(*shared);
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[0].prompt[0], w[3].prompt[0]);  // the shared prefix
  EXPECT_NE(w[0].prompt[1], w[3].prompt[1]);
  EXPECT_EQ(PromptLength(w[2]), 1010u);
  EXPECT_TRUE(IsScenarioName("needle"));
  EXPECT_FALSE(IsScenarioName("fanout"));
}

TEST(ScenarioTest, BadArgumentsAreNamed) {
  const auto error = [](const char* spec) {
    Result<Scenario> s = ParseScenario(spec);
    return s ? std::string("parsed") : s.error().message;
  };
  EXPECT_THAT(error("cold-prefil:prompt=5"), HasSubstr("cold-prefil"));
  EXPECT_THAT(error("cold-prefill:promt=5"), HasSubstr("promt"));
  EXPECT_THAT(error("resend:prompt=0"), HasSubstr("prompt=0"));
  EXPECT_THAT(error("resend:prompt=99999999"), HasSubstr("prompt=99999999"));
  EXPECT_THAT(error("resend:prompt"), HasSubstr("key=value"));
  EXPECT_THAT(error("decode-cell:seconds=-1"), HasSubstr("seconds=-1"));
  EXPECT_THAT(error("shared-prefix:streams=2000000"), HasSubstr("streams"));
}

// The same seed gives the same content, another seed other content.
TEST(ScenarioTest, SeededAndDeterministic) {
  const Scenario a = *ParseScenario("resend:prompt=100,seed=7");
  const Scenario b = *ParseScenario("resend:prompt=100,seed=8");
  EXPECT_EQ(GenerateScenario(a), GenerateScenario(a));
  EXPECT_NE(PromptTokens(GenerateScenario(a)[0]),
            PromptTokens(GenerateScenario(b)[0]));
}

DeploymentPreset Preset(const char* name) {
  Result<DeploymentPreset> p = LoadDeploymentPreset(name);
  EXPECT_TRUE(p) << p.error().message;
  return p.value_or(DeploymentPreset{});
}

double Figure(const ScenarioRun& run, const std::string& name) {
  Result<std::vector<ScenarioFigure>> figures =
      ScenarioFigures(run.scenario, run.result, run.engine.cost);
  EXPECT_TRUE(figures) << figures.error().message;
  for (const ScenarioFigure& f :
       figures.value_or(std::vector<ScenarioFigure>{})) {
    if (f.name == name) return f.value;
  }
  ADD_FAILURE() << "no figure " << name;
  return -1;
}

ScenarioRun Simulated(const char* preset, const char* geometry,
                      const std::string& spec) {
  Result<ScenarioRun> run = RunScenario(Preset(preset), geometry, spec);
  EXPECT_TRUE(run) << run.error().message;
  return run ? std::move(*run) : ScenarioRun{};
}

// Acceptance: on the GB10 deployment (DFlash draft, one-unit rewind) a
// 52,445-token resend at 2048/256/256 reuses 52,445 // 256 * 256 - 256.
TEST(ScenarioTest, Gb10ResendReusesAllButTheRewoundUnit) {
  const ScenarioRun run =
      Simulated("glm53-flash-gb10x4", "2048/256/256", "resend:prompt=52445");
  EXPECT_EQ(Figure(run, "reused_tokens"), 51968);
  EXPECT_GT(Figure(run, "ttft_first_s"), 10 * Figure(run, "ttft_second_s"));
}

// The seed-2 grid of the DCP4 box (2048/256/256, an 8192-token attention
// block, no draft rewind): the last 256-token boundary below the prompt's
// last token, prefill_checkpoint_position(P, 256, eagle = false).
TEST(ScenarioTest, Dcp4ResendGrid) {
  const std::pair<int, int> grid[] = {{255, 0},     {256, 0},     {257, 256},
                                      {2047, 1792}, {2048, 1792}, {2049, 2048},
                                      {8191, 7936}, {8192, 7936}, {8193, 8192}};
  for (const auto& [prompt, reused] : grid) {
    const ScenarioRun run =
        Simulated("glm53-flash-rtx6000x4-dcp4-dflash", "2048/256/256",
                  "resend:prompt=" + std::to_string(prompt));
    EXPECT_EQ(Figure(run, "reused_tokens"), reused) << prompt;
  }
}

// A cold prompt reuses nothing and writes a state page per 256 tokens in
// each recurrent group: 32768 / 256 = 128 boundaries of 34 layers' states.
TEST(ScenarioTest, ColdPrefillWritesItsStates) {
  const ScenarioRun run = Simulated("glm53-flash-gb10x4", "2048/256/256",
                                    "cold-prefill:prompt=32768");
  EXPECT_EQ(run.result.reused_tokens, 0u);
  std::uint64_t state_bytes = 0;  // one state of every recurrent layer
  for (std::size_t g = 0; g < run.deployment.cache.groups.size(); ++g) {
    if (run.deployment.cache.groups[g].kind == GroupKind::kRecurrent) {
      state_bytes += run.deployment.page_bytes[g];
    }
  }
  EXPECT_EQ(state_bytes, 34u * 1'146'880u);  // TP4, 5 drafts' conv rows
  EXPECT_EQ(run.result.totals.state_bytes_written, 128u * state_bytes);
  EXPECT_DOUBLE_EQ(Figure(run, "prefill_tokens_per_s"),
                   32768 / Figure(run, "ttft_s"));
}

// The question rides the cached document: the document's checkpoint with
// the draft's rewind, 8192 - 256.
TEST(ScenarioTest, NeedleQuestionRidesTheCachedDocument) {
  const ScenarioRun run = Simulated("glm53-flash-gb10x4", "2048/256/256",
                                    "needle:document=8192,question=64");
  ASSERT_EQ(run.result.per_request.size(), 2u);
  EXPECT_EQ(run.result.per_request[1].reused_tokens, 7936u);
  EXPECT_EQ(Figure(run, "reused_tokens"), 7936);
}

// Sent together, the second stream finds only the first one's chunk-end
// state (8192, the end of its first chunk), and the draft group must prove
// a unit past any hit: nothing below 8192 has a state, so nothing is
// reused.
TEST(ScenarioTest, SharedPrefixSentTogetherFindsNoState) {
  const ScenarioRun run =
      Simulated("glm53-flash-gb10x4", "2048/256/256",
                "shared-prefix:streams=2,prefix=8192,suffix=512");
  EXPECT_EQ(Figure(run, "reused_tokens"), 0);
}

// The A/B's shared-prefix scenario (16 streams, a 16384-token prefix, a
// 512-token suffix each, sent together) on the GB10 deployment: the first
// follower is admitted while the leader is still prefilling and reuses at
// most the leader's first 8192-token chunk (at 2048/2048/2048 it is admitted
// a step earlier, beside the leader's second chunk, and reuses nothing);
// every later one reuses the shared prefix less the draft's one-unit rewind.
std::vector<std::uint32_t> ReusedPerStream(const char* geometry) {
  const ScenarioRun run =
      Simulated("glm53-flash-gb10x4", geometry, "shared-prefix");
  std::vector<std::uint32_t> reused;
  for (const RequestMetrics& m : run.result.per_request) {
    reused.push_back(m.reused_tokens);
  }
  return reused;
}

TEST(ScenarioTest, SharedPrefixFollowersReuseThePrefixLessTheRewind) {
  std::vector<std::uint32_t> fine = {0, 8192};
  fine.resize(16, 16384 - 256);
  EXPECT_EQ(ReusedPerStream("256/256/256"), fine);
  std::vector<std::uint32_t> coarse = {0, 0};
  coarse.resize(16, 16384 - 2048);
  EXPECT_EQ(ReusedPerStream("2048/2048/2048"), coarse);
  // The leader stops its chunks on its 2048-token pages, so 256-token
  // units find the same state.
  EXPECT_EQ(ReusedPerStream("2048/256/256"), coarse);
  const ScenarioRun run =
      Simulated("glm53-flash-gb10x4", "256/256/256", "shared-prefix");
  EXPECT_EQ(Figure(run, "reused_tokens"), 233984);  // 8192 + 14 * 16128
}

// Every turn of a decode cell re-sends its cached 8192-token context and
// reuses what the needle does; the cell counts its decoded tokens.
TEST(ScenarioTest, DecodeCellTurnsReuseTheirContext) {
  const ScenarioRun run = Simulated(
      "glm53-flash-gb10x4", "2048/256/256",
      "decode-cell:concurrency=2,context=8192,seconds=5,turns=3,output=32");
  const std::vector<RequestMetrics>& m = run.result.per_request;
  ASSERT_EQ(m.size(), 2u + 2u * 3u);
  for (std::size_t i = 2; i < m.size(); ++i) {
    EXPECT_EQ(m[i].reused_tokens, 7936u) << i;
  }
  EXPECT_GT(Figure(run, "decode_tokens_per_s"), 0.0);
  EXPECT_GT(Figure(run, "cell_s"), 0.0);
}

// The A/B's decode cell (one stream, a 32768-token context): after the
// first turn, each re-send reuses the context less the draft's one-unit
// rewind, whatever the number of turns the 30 modelled seconds hold.
TEST(ScenarioTest, DecodeCellReSendsReuseTheContextLessOneUnit) {
  for (const auto& [geometry, reused] :
       {std::pair{"256/256/256", 32768u - 256u},
        std::pair{"2048/2048/2048", 32768u - 2048u}}) {
    const ScenarioRun run =
        Simulated("glm53-flash-gb10x4", geometry, "decode-cell");
    const std::vector<RequestMetrics>& m = run.result.per_request;
    ASSERT_GT(m.size(), 2u) << geometry;
    EXPECT_EQ(m[0].reused_tokens, 0u);
    for (std::size_t i = 1; i < m.size(); ++i) {
      EXPECT_EQ(m[i].reused_tokens, reused) << geometry << " turn " << i;
    }
    EXPECT_EQ(run.result.reused_tokens, reused * (m.size() - 1));
  }
}

}  // namespace
}  // namespace hkv
