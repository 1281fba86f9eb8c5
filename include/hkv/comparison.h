// The geometry comparison `hkv compare` runs by default: the reviewers' A/B
// of page geometries (target attention block / recurrent block / hash unit)
// on one deployment, over the named scenarios (hkv/scenarios.h) and a trace,
// with a recommendation (hkv/recommend.h) and its sensitivity to the
// retention policy and the pool size. ComparisonJson writes it in the
// schema docs/simulator.md documents ("hkv.compare/1").
//
// Thread-safety: value types; RunGeometryComparison owns what it builds.
//
// Example:
//   GeometryComparisonOptions o;  // the GB10 deployment, four geometries
//   o.experiment.data_dir = "data";
//   Result<Comparison> c = RunGeometryComparison(o, {});
//   if (c) std::cout << c->recommendation.why << "\n";
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/experiment.h"
#include "hkv/recommend.h"
#include "hkv/result.h"
#include "hkv/scenarios.h"
#include "hkv/simulator.h"
#include "hkv/workload.h"

namespace hkv {

struct GeometryComparisonOptions {
  // The deployment, engine and trace (workload empty: the bundled
  // conversation trace, cut to kCompareDefaultLimit unless limit is set).
  ExperimentOptions experiment = {.preset = "glm53-flash-gb10x4"};
  // Configurations: a page geometry, optionally with ",pools=LAYOUT" and
  // ",retention=RETENTION" (hkv/deployment.h, hkv/cache_config.h). The
  // reviewers' four run as the reference does; hkv's beyond them.
  std::vector<std::string> geometries = {
      "256/256/256",
      "2048/2048/2048",
      "2048/2048/256",
      "2048/256/256",
      "2048/2048/2048,retention=placement",
      "2048/256/256,retention=placement",
      "2048/2048/2048,pools=rebalanced,retention=placement",
      "256/256/256,pools=rebalanced,retention=placement"};
  // The first `built_in` geometries are the comparison's own choice, not
  // the user's: one the deployment's model cannot run (a coupled layout
  // takes only T/T/U; a block its pages do not divide) is left out, with
  // the reason in Comparison::skipped. Any other invalid geometry, or all
  // of them left out, is an error.
  std::size_t built_in = 0;
  std::vector<std::string> scenarios = {
      "cold-prefill", "resend", "shared-prefix", "needle", "decode-cell"};
  Objective objective = Objective::kTtftP50;
  double capacity_tolerance = 0.05;
  // Each lookup timed as the fastest of this many repeats.
  std::uint32_t lookup_repeats = 5;
  // Re-run the trace under retention interval 0 and with an unlimited pool.
  bool sensitivity = true;
};

// Lookup CPU time of one class (HitClass) on the trace: percentiles only
// over at least kMinTimedLookups calls.
inline constexpr std::uint64_t kMinTimedLookups = 100;
struct LookupTimes {
  std::uint64_t calls = 0;
  std::optional<std::uint64_t> p50_ns = std::nullopt;
  std::optional<std::uint64_t> p99_ns = std::nullopt;
};

// Reused prompt tokens by what the request repeats of an earlier one (in
// workload order, segment by segment): its whole prompt (a resend); an
// earlier whole prompt, or all of one but its last segment when that
// leaves two or more (a trace re-cuts the last partial block), followed by
// more (a multi-turn continuation); else only a shared part of earlier
// prompts (a shared-prefix junction, e.g. a system prompt).
struct ReuseSplit {
  std::uint64_t resend_tokens = 0;
  std::uint64_t continuation_tokens = 0;
  std::uint64_t junction_tokens = 0;
};

// Splits each request's reused_tokens (result.per_request) by its relation
// to the earlier requests of `workload`, compared segment by segment.
// REQUIRES: result.per_request.size() == workload.size(). O(total
// segments).
ReuseSplit SplitReuse(std::span<const SimRequest> workload,
                      const SimulationResult& result);

// An open-loop run's load: the offered arrival rate against the rate the
// modelled engine served. Saturated: more offered than served and a
// makespan past 1.5x the arrival span (the queue grew without bound).
struct Load {
  double offered_per_s = 0.0;
  double served_per_s = 0.0;
  std::uint32_t peak_waiting = 0;
  bool saturated = false;
};
Load LoadOf(std::span<const SimRequest> workload,
            const SimulationResult& result);

struct ScenarioOutcome {
  std::string spec;  // e.g. "resend:prompt=32768"
  std::uint64_t prompt_tokens = 0;
  std::uint64_t reused_tokens = 0;
  std::vector<ScenarioFigure> figures = {};
  // Lookup times by class (moved into the configuration's pooled ones).
  std::array<std::vector<std::uint32_t>, kNumHitClasses> lookup_ns = {};
};

struct ConfigurationOutcome {
  SimConfig config;
  std::vector<ScenarioOutcome> scenarios = {};
  SimulationResult trace = {};
  ReuseSplit reuse = {};
  std::array<LookupTimes, kNumHitClasses> lookups = {};  // by HitClass
  std::optional<Load> load = std::nullopt;  // open-loop traces only
  // Sensitivity: the trace under retention interval 0, and its reused
  // tokens with an unlimited pool (the bound the geometry allows).
  std::optional<SimulationResult> interval0 = std::nullopt;
  std::optional<std::uint64_t> unlimited_reused_tokens = std::nullopt;
};

struct Comparison {
  std::string preset;
  std::string cost_model;
  std::string trace;  // the workload flag, "" for the bundled trace
  std::size_t trace_requests = 0;
  std::uint64_t trace_prompt_tokens = 0;
  std::string retention;  // as run: "dense retention" or "interval R"
  Objective objective = Objective::kTtftP50;
  double capacity_tolerance = 0.05;
  std::vector<ConfigurationOutcome> configurations = {};
  std::vector<Candidate> candidates = {};  // by configuration
  Recommendation recommendation = {};
  // The rule again with the trace under retention interval 0 (empty
  // without sensitivity runs).
  std::optional<Recommendation> interval0 = std::nullopt;
  // When the winner runs beyond the reference (per-group pools or
  // placement) and some configuration runs as the reference does: the
  // rule's winner among those (an index into the configurations), and one
  // sentence on what it leaves behind.
  std::optional<std::size_t> reference_best = std::nullopt;
  std::string beyond_reference = {};
  // On the reference engine at kEngineCommit (hkv/engine_flags.h): the
  // rule's winner among the configurations it runs, and what to tell the
  // user: its flags and, when the recommendation is another configuration,
  // why that one needs hkv and what it gains; or, when it runs none, why.
  std::optional<std::size_t> engine_best = std::nullopt;
  std::vector<std::string> on_the_engine = {};  // lines
  // Built-in geometries left out, each "GEOMETRY: why".
  std::vector<std::string> skipped = {};
};

// Whether a configuration runs as the reference does: one shared pool and
// the reference's retention.
bool RunsAsTheReference(const SimConfig& config);

// Sets c.reference_best and c.beyond_reference from c.recommendation (both
// empty unless the winner runs beyond the reference and some configuration
// runs as it does), then c.engine_best and c.on_the_engine.
void CompareWithTheReference(Comparison& c);

// Sets c.engine_best and c.on_the_engine from c.recommendation and each
// configuration's SimConfig::engine.
void CompareOnTheEngine(Comparison& c);

// The candidate of a configuration: capacity (engine-logged concurrency at
// max_model_len, else hkv's estimate), the trace's TTFT and reuse, the
// decode-cell and cold-prefill scenarios' figures (0 when not run).
Candidate CandidateOf(const ConfigurationOutcome& outcome,
                      const SimulationResult& trace);

// The geometry comparison of `hkv compare` without --config or --vary: the
// default geometries (built in: those the model cannot run are left out),
// then those of options.geometries not among them, on the options'
// deployment and trace, by options.objective.
// kInvalidArgument for an unknown objective.
[[nodiscard]] Result<GeometryComparisonOptions> GeometryComparisonFrom(
    const CompareOptions& options);

// Runs every geometry on the scenarios and the trace, then the rule.
// Returns the first error (a bad geometry, scenario or trace), prefixed by
// the configuration. `progress` is called as the runs go.
[[nodiscard]] Result<Comparison> RunGeometryComparison(
    const GeometryComparisonOptions& options, const SimProgress& progress);

// The geometries `hkv compare --search` tries: target 256, 1024, 2048 and
// 4096 tokens, each with recurrent pages and hash unit of 256 tokens or of
// the target.
std::vector<std::string> SearchGeometries();

// `hkv compare --search`: every SearchGeometries() geometry under dense
// retention, retention interval 0, placement, and placement in rebalanced
// per-group pools (labels "T/R/U dense", "T/R/U interval 0", "T/R/U
// placement", "T/R/U rebalanced pools placement") on the options' trace
// only (no scenarios, no sensitivity runs), ranked by the rule: 28 trace
// runs, `progress` called as they go.
// Returns the first error, prefixed by the configuration.
[[nodiscard]] Result<Comparison> RunGeometrySearch(
    const GeometryComparisonOptions& options, const SimProgress& progress);

// The comparison as JSON (schema "hkv.compare/1", docs/simulator.md):
// numbers are numbers, a missing figure is null.
std::string ComparisonJson(const Comparison& comparison);

// `hkv compare --sweep budget-gib=V1,V2,...`: the comparison's geometries on
// the trace alone (no scenarios, no sensitivity runs) at each KV budget per
// rank, for the hit ratio against the budget (python3 -m hkv.plot).
struct BudgetSweepPoint {
  double budget_gib = 0.0;
  Comparison comparison;
};
// The budgets of "budget-gib=V1,V2,..." (GiB per rank, each in (0, 1e6],
// at most 16). kInvalidArgument naming the spec and the bad value.
[[nodiscard]] Result<std::vector<double>> ParseBudgetSweep(
    std::string_view spec);
// One RunGeometryComparison per budget, in order. Returns the first error,
// prefixed by the budget.
[[nodiscard]] Result<std::vector<BudgetSweepPoint>> RunBudgetSweep(
    const GeometryComparisonOptions& options, std::span<const double> budgets,
    const SimProgress& progress);
// {"schema": "hkv.compare-sweep/1", "sweep": {"parameter": "budget_gib",
// "points": [{"value": GiB, "reports": <ComparisonJson>}, ...]}}
// (docs/simulator.md).
std::string BudgetSweepJson(std::span<const BudgetSweepPoint> points);

}  // namespace hkv
