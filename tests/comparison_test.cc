// The geometry comparison's cache figures (hkv/comparison.h) on the measured
// GB10 deployment, each derived from the geometry here: hash unit U, the
// draft's one-unit rewind, dense retention (a recurrent state at every
// block boundary). Also the lookup classes, the reuse split and the load.
#include "hkv/comparison.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hkv/experiment.h"

namespace hkv {
namespace {

constexpr std::size_t kLookup = static_cast<std::size_t>(ManagerCall::kLookup);

std::uint64_t Calls(const SimulationResult& r, HitClass h) {
  return r.manager_ns[kLookup][static_cast<std::size_t>(h)].calls;
}

// The GB10 deployment at `geometry` running `scenario` alone.
SimulationResult RunScenario(const std::string& geometry,
                             const std::string& scenario) {
  ExperimentOptions o{.workload = scenario,
                      .geometry = geometry,
                      .preset = "glm53-flash-gb10x4"};
  o.given.insert("geometry");
  Result<SimRuns> runs = RunSimulation(o, {});
  EXPECT_TRUE(runs.has_value()) << runs.error().message;
  return runs->runs.at(0).result;
}

// The prompt's whole units, less the one the draft recomputes. (The chain
// also stops before the prompt's last token, one token always being
// computed, but that cuts a unit only when the prompt ends on a unit
// boundary, where the draft's rewind has cut it already.)
std::uint64_t ResendHit(std::uint64_t prompt, std::uint64_t unit) {
  return (prompt / unit - 1) * unit;
}

TEST(ComparisonTest, ResendOfTheReviewersPromptReusesAllButTwoUnits) {
  // 52,445 tokens: 204 whole units of 256 (52,224), less the draft's
  // unit: 51,968.
  const SimulationResult r = RunScenario("2048/256/256", "resend:prompt=52445");
  EXPECT_EQ(ResendHit(52445, 256), 51968u);
  EXPECT_EQ(r.reused_tokens, 51968u);
  EXPECT_EQ(r.prompt_tokens, 2u * 52445u);
}

TEST(ComparisonTest, ResendAtACoarseUnitLosesAWholeCoarseUnit) {
  // Unit 2048: 25 whole units (51,200), less the draft's: 49,152.
  const SimulationResult r =
      RunScenario("2048/2048/2048", "resend:prompt=52445");
  EXPECT_EQ(r.reused_tokens, ResendHit(52445, 2048));
  EXPECT_EQ(r.reused_tokens, 49152u);
}

TEST(ComparisonTest, ResendHitShortOnlyByTheDraftRewindIsWarm) {
  // The first request misses cold. The second's chain is 7,936 (31 whole
  // units); its hit, 7,680, is short of it by the draft's unit. The manager
  // names the recurrent group (no state kept at 7,936, where no step ended) but
  // the hit is no shorter than the draft allows anyway: warm, not sparse.
  const SimulationResult r = RunScenario("2048/256/256", "resend:prompt=8000");
  EXPECT_EQ(r.reused_tokens, ResendHit(8000, 256));
  EXPECT_EQ(r.reused_tokens, 7680u);
  EXPECT_EQ(Calls(r, HitClass::kColdMiss), 1u);
  EXPECT_EQ(Calls(r, HitClass::kWarmHit), 1u);
  EXPECT_EQ(Calls(r, HitClass::kSparseHit), 0u);
}

TEST(ComparisonTest, ResendAtAWholeUnitIsWarmToo) {
  // 8,192 tokens: the chain stops a unit short of the prompt (7,936, to
  // leave a token to compute), which is also where the draft's rewind
  // lands: the whole chain, warm.
  const SimulationResult r = RunScenario("2048/256/256", "resend:prompt=8192");
  EXPECT_EQ(r.reused_tokens, ResendHit(8192, 256));
  EXPECT_EQ(r.reused_tokens, 7936u);
  EXPECT_EQ(Calls(r, HitClass::kWarmHit), 1u);
}

TEST(ComparisonTest, ColdPrefillReusesNothing) {
  const SimulationResult r =
      RunScenario("256/256/256", "cold-prefill:prompt=32768");
  EXPECT_EQ(r.reused_tokens, 0u);
  EXPECT_EQ(r.prompt_tokens, 32768u);
  EXPECT_EQ(Calls(r, HitClass::kColdMiss), 1u);
}

TEST(ComparisonTest, NeedleQuestionRidesTheWholeDocumentButOneUnit) {
  // The document (65,536 tokens, 256 units of 256) is cached first; the
  // question's prompt extends it, so the chain reaches 65,536 and the draft
  // gives one unit back: 65,280. The document itself reused nothing.
  const SimulationResult r =
      RunScenario("2048/256/256", "needle:document=65536,question=64");
  EXPECT_EQ(r.reused_tokens, 65536u - 256u);
  EXPECT_EQ(r.per_request.at(0).reused_tokens, 0u);
}

TEST(ComparisonTest, ReuseSplitsIntoResendsContinuationsAndJunctions) {
  // 0: [a b]; 1: [a b] again (resend); 2: [a b c] (continues 0);
  // 3: [a d] (shares only a: a junction).
  const auto req = [](std::vector<std::uint64_t> ids) {
    SimRequest r;
    for (std::uint64_t id : ids) r.prompt.push_back({.id = id, .length = 8});
    return r;
  };
  const std::vector<SimRequest> w = {req({1, 2}), req({1, 2}), req({1, 2, 3}),
                                     req({1, 4})};
  SimulationResult r;
  r.per_request.resize(4);
  r.per_request[1].reused_tokens = 15;
  r.per_request[2].reused_tokens = 16;
  r.per_request[3].reused_tokens = 8;
  const ReuseSplit s = SplitReuse(w, r);
  EXPECT_EQ(s.resend_tokens, 15u);
  EXPECT_EQ(s.continuation_tokens, 16u);
  EXPECT_EQ(s.junction_tokens, 8u);
}

TEST(ComparisonTest, ATraceTurnThatReCutsThePreviousLastBlockContinues) {
  // Mooncake re-cuts a partial last block: [a b c'] follows [a b c].
  const auto req = [](std::vector<std::uint64_t> ids) {
    SimRequest r;
    for (std::uint64_t id : ids) r.prompt.push_back({.id = id, .length = 8});
    return r;
  };
  const std::vector<SimRequest> w = {req({1, 2, 3}), req({1, 2, 9, 10})};
  SimulationResult r;
  r.per_request.resize(2);
  r.per_request[1].reused_tokens = 16;
  EXPECT_EQ(SplitReuse(w, r).continuation_tokens, 16u);
}

TEST(ComparisonTest, AQueueThatOutgrowsTheArrivalsIsSaturated) {
  std::vector<SimRequest> w(3);
  w[0].arrival_s = 0;
  w[1].arrival_s = 1;
  w[2].arrival_s = 2;
  SimulationResult r;
  r.finished = 3;
  r.makespan_s = 30;  // 0.1 served per s against 1.5 offered
  r.peak_waiting = 2;
  const Load load = LoadOf(w, r);
  EXPECT_DOUBLE_EQ(load.offered_per_s, 1.5);
  EXPECT_DOUBLE_EQ(load.served_per_s, 0.1);
  EXPECT_TRUE(load.saturated);
  r.makespan_s = 2.5;  // kept up
  EXPECT_FALSE(LoadOf(w, r).saturated);
}

TEST(ComparisonTest, UnknownObjectiveIsRefusedBeforeAnyRun) {
  CompareOptions o;
  o.objective = "fastest";
  Result<GeometryComparisonOptions> ab = GeometryComparisonFrom(o);
  ASSERT_FALSE(ab.has_value());
  EXPECT_THAT(ab.error().message, ::testing::HasSubstr("\"fastest\""));
}

TEST(ComparisonTest, ExtraGeometriesAddColumnsOnce) {
  CompareOptions o;
  o.geometries = {"2048/256/256", "4096/256/256"};
  Result<GeometryComparisonOptions> ab = GeometryComparisonFrom(o);
  ASSERT_TRUE(ab.has_value());
  EXPECT_THAT(
      ab->geometries,
      ::testing::ElementsAre(
          "256/256/256", "2048/2048/2048", "2048/2048/256", "2048/256/256",
          "2048/2048/2048,retention=placement",
          "2048/256/256,retention=placement",
          "2048/2048/2048,pools=rebalanced,retention=placement",
          "256/256/256,pools=rebalanced,retention=placement", "4096/256/256"));
}

// A configuration is a geometry with settings of its own; an unknown
// setting or value is refused, naming the configuration.
TEST(ComparisonTest, ConfigurationSettingsAreNamedWhenWrong) {
  GeometryComparisonOptions o;
  o.experiment.limit = 5;
  o.experiment.data_dir = HKV_DATA_DIR;
  o.scenarios.clear();
  o.sensitivity = false;
  o.geometries = {"2048/256/256,pool=workload"};
  Result<Comparison> c = RunGeometryComparison(o, {});
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().message,
            "2048/256/256,pool=workload: \"pool=workload\" is not "
            "pools=LAYOUT or retention=RETENTION");
  o.geometries = {"2048/256/256,retention=dense"};
  c = RunGeometryComparison(o, {});
  ASSERT_FALSE(c.has_value());
  EXPECT_THAT(c.error().message, ::testing::HasSubstr("\"dense\""));
  o.geometries = {"2048/256/256,retention=placement,pools=per-group"};
  c = RunGeometryComparison(o, {});
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->configurations.at(0).config.label,
            "2048/256/256 per-group placement");
  EXPECT_FALSE(RunsAsTheReference(c->configurations.at(0).config));
}

// The per-configuration comparison needs its configurations: without them
// the comparison is the geometry A/B, a different call.
TEST(ComparisonTest, PerConfigurationComparisonNeedsConfigurations) {
  Result<SimRuns> runs = RunComparison(CompareOptions{}, {});
  ASSERT_FALSE(runs.has_value());
  EXPECT_EQ(runs.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(runs.error().message,
              ::testing::HasSubstr("RunGeometryComparison"));
}

TEST(ComparisonTest, BudgetSweepParsesBudgetsAndNamesTheBadOne) {
  EXPECT_THAT(ParseBudgetSweep("budget-gib=16,33.5,1e3").value(),
              ::testing::ElementsAre(16.0, 33.5, 1000.0));
  for (const char* bad : {"budget-gib=", "budget-gib=16,", "budget-gib=0",
                          "budget-gib=nan", "budget-gib=2e6", "tp=1,2"}) {
    Result<std::vector<double>> parsed = ParseBudgetSweep(bad);
    ASSERT_FALSE(parsed.has_value()) << bad;
    EXPECT_THAT(parsed.error().message,
                ::testing::StartsWith(std::string("--sweep ") + bad + ": "));
  }
  std::string seventeen = "budget-gib=1";
  for (int i = 0; i < 16; ++i) seventeen += ",1";
  EXPECT_THAT(ParseBudgetSweep(seventeen).error().message,
              ::testing::HasSubstr("more than 16 budgets"));
}

// Each budget runs every geometry on the trace alone; a larger budget per
// rank gives each geometry a larger pool.
TEST(ComparisonTest, BudgetSweepRunsEveryGeometryAtEachBudget) {
  CompareOptions o;
  o.sim.limit = 20;
  o.sim.data_dir = HKV_DATA_DIR;
  Result<GeometryComparisonOptions> ab = GeometryComparisonFrom(o);
  ASSERT_TRUE(ab.has_value());
  const std::vector<double> budgets = {16.0, 66.0};
  Result<std::vector<BudgetSweepPoint>> points =
      RunBudgetSweep(*ab, budgets, {});
  ASSERT_TRUE(points.has_value()) << points.error().message;
  ASSERT_EQ(points->size(), 2u);
  for (std::size_t g = 0; g < ab->geometries.size(); ++g) {
    const ConfigurationOutcome& small =
        (*points)[0].comparison.configurations.at(g);
    const ConfigurationOutcome& large =
        (*points)[1].comparison.configurations.at(g);
    // The label is the geometry, then what its settings change.
    const std::string& entry = ab->geometries[g];
    EXPECT_THAT(small.config.label,
                ::testing::StartsWith(entry.substr(0, entry.find(','))));
    EXPECT_TRUE(small.scenarios.empty());
    EXPECT_EQ(small.trace.per_request.size(), 20u);
    EXPECT_LT(small.config.capacity->engine_pool_tokens,
              large.config.capacity->engine_pool_tokens);
  }
}
}  // namespace
}  // namespace hkv
