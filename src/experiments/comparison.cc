// The geometry comparison of hkv/comparison.h: each geometry of one
// deployment on the scenarios and the trace, then the recommendation.
#include "hkv/comparison.h"

#include <algorithm>
#include <limits>
#include <string_view>
#include <utility>

#include "experiments/experiment_util.h"

namespace hkv {
namespace {

// How the configurations keep states, as the report names it.
std::string RetentionText(const ExperimentOptions& e) {
  if (ParseRetention(e.retention) == Retention::kPlacement) return "placement";
  return e.retention_interval
             ? "retention interval " + std::to_string(*e.retention_interval)
             : "dense retention";
}

// A configuration entry: a geometry, then ",pools=LAYOUT" and
// ",retention=RETENTION" in any order, over the comparison's options.
Result<SimConfig> ConfigurationOf(const std::string& entry,
                                  ExperimentOptions options) {
  std::string_view rest = entry;
  const std::string geometry(rest.substr(0, rest.find(',')));
  rest.remove_prefix(std::min(rest.size(), geometry.size() + 1));
  while (!rest.empty()) {
    const std::string_view setting = rest.substr(0, rest.find(','));
    rest.remove_prefix(std::min(rest.size(), setting.size() + 1));
    const std::size_t eq = setting.find('=');
    const std::string_view key = setting.substr(0, eq);
    const std::string value(
        eq == std::string_view::npos ? "" : setting.substr(eq + 1));
    if (key == "pools") {
      options.pools = value;
    } else if (key == "retention") {
      options.retention = value;
    } else {
      return Fail(ErrorCode::kInvalidArgument,
                  "\"" + std::string(setting) +
                      "\" is not pools=LAYOUT or retention=RETENTION");
    }
  }
  return DeploymentConfig(geometry, options);
}

// One run: the configuration's cache under the options' engine.
struct RunSpec {
  const SimConfig* config;
  const ExperimentOptions* options;
  const std::vector<SimRequest>* workload;
  const Scenario* scenario;  // null: the trace
  std::uint32_t lookup_repeats;
  const SimProgress* progress;  // may be empty
  std::string label;
};

Result<SimulationResult> RunOne(const RunSpec& r, CostModel* cost_out) {
  Result<SimulationOptions> engine = EngineFromFlags(*r.options);
  if (!engine) return tl::unexpected(engine.error());
  engine->cache = r.config->cache;
  engine->page_bytes = r.config->page_bytes;
  if (r.config->physics) engine->cost.physics = r.config->physics;
  engine->lookup_repeats = r.lookup_repeats;
  if (r.scenario != nullptr) {
    engine->concurrency = ScenarioConcurrency(*r.scenario);
    engine->arrivals = ArrivalMode::kClosedLoop;
    engine->record_steps = true;
  }
  if (*r.progress) {
    engine->progress = [&r](std::size_t done, std::size_t total) {
      (*r.progress)(r.label, done, total);
    };
  }
  Result<SimulationResult> result = Simulate(*r.workload, *engine);
  if (!result) {
    return Fail(result.error().code, r.label + ": " + result.error().message);
  }
  if (cost_out != nullptr) *cost_out = engine->cost;
  return result;
}

Result<ScenarioOutcome> RunScenario(RunSpec run, const std::string& spec) {
  Result<Scenario> scenario = ParseScenario(spec);
  if (!scenario) return tl::unexpected(scenario.error());
  const std::vector<SimRequest> workload = GenerateScenario(*scenario);
  run.workload = &workload;
  run.scenario = &*scenario;
  run.label += " " + spec;
  CostModel cost;
  Result<SimulationResult> result = RunOne(run, &cost);
  if (!result) return tl::unexpected(result.error());
  Result<std::vector<ScenarioFigure>> figures =
      ScenarioFigures(*scenario, *result, cost);
  if (!figures) return tl::unexpected(figures.error());
  return ScenarioOutcome{.spec = spec,
                         .prompt_tokens = result->prompt_tokens,
                         .reused_tokens = result->reused_tokens,
                         .figures = std::move(*figures),
                         .lookup_ns = std::move(result->lookup_ns)};
}

// Nearest rank `p` of sorted `v`. REQUIRES: v is not empty.
std::uint64_t Rank(const std::vector<std::uint32_t>& v, std::size_t p) {
  const std::size_t rank = (p * v.size() + 99) / 100;
  return v[std::max<std::size_t>(rank, 1) - 1];
}

// The lookups of `runs`, pooled by class.
std::array<LookupTimes, kNumHitClasses> Lookups(
    const std::vector<const SimulationResult*>& runs) {
  std::array<LookupTimes, kNumHitClasses> out;
  for (std::size_t h = 0; h < kNumHitClasses; ++h) {
    std::vector<std::uint32_t> all;
    for (const SimulationResult* r : runs) {
      all.insert(all.end(), r->lookup_ns[h].begin(), r->lookup_ns[h].end());
    }
    std::sort(all.begin(), all.end());
    out[h].calls = all.size();
    if (all.size() >= kMinTimedLookups) {
      out[h].p50_ns = Rank(all, 50);
      out[h].p99_ns = Rank(all, 99);
    }
  }
  return out;
}

// The trace again under retention interval 0 (a placement configuration
// keeps its own sparse retention: its run as it is) and with an unlimited
// pool.
Result<void> RunSensitivity(RunSpec run, ConfigurationOutcome& out,
                            std::vector<SimulationResult>& runs) {
  SimConfig config = *run.config;
  run.config = &config;
  if (config.cache.retention == Retention::kPlacement) {
    out.interval0 = out.trace;
  } else {
    config.cache.retention_interval = 0;
    run.label = out.config.label + " interval 0";
    Result<SimulationResult> interval0 = RunOne(run, nullptr);
    if (!interval0) return tl::unexpected(interval0.error());
    out.interval0 = std::move(*interval0);
  }
  config = out.config;
  // One pool that never evicts: how it would be split does not matter.
  internal::UseUnlimitedPool(config.cache, *run.workload);
  run.label = out.config.label + " unlimited pool";
  Result<SimulationResult> unlimited = RunOne(run, nullptr);
  if (!unlimited) return tl::unexpected(unlimited.error());
  out.unlimited_reused_tokens = unlimited->reused_tokens;
  runs.push_back(std::move(*unlimited));
  return {};
}

struct Shared {
  const GeometryComparisonOptions* options;
  const ExperimentOptions* experiment;  // the preset applied
  const std::vector<SimRequest>* trace;
  const SimProgress* progress;
};

// Runs one configuration entry (`geometry`), resolved as `config`.
Result<ConfigurationOutcome> RunConfiguration(const std::string& geometry,
                                              SimConfig config,
                                              const Shared& s) {
  ConfigurationOutcome out{.config = std::move(config)};
  if (out.config.split_pools_by_workload) {
    Result<SimulationOptions> engine = EngineFromFlags(*s.experiment);
    if (!engine) return tl::unexpected(engine.error());
    Result<void> ok =
        internal::SplitPoolsByWorkload(out.config, *engine, *s.trace);
    if (!ok) return Fail(ok.error().code, geometry + ": " + ok.error().message);
  }
  const RunSpec run{
      &out.config, s.experiment,    s.trace, nullptr, s.options->lookup_repeats,
      s.progress,  out.config.label};
  for (const std::string& spec : s.options->scenarios) {
    Result<ScenarioOutcome> scenario = RunScenario(run, spec);
    if (!scenario) return tl::unexpected(scenario.error());
    out.scenarios.push_back(std::move(*scenario));
  }
  Result<SimulationResult> trace = RunOne(run, nullptr);
  if (!trace) return tl::unexpected(trace.error());
  out.trace = std::move(*trace);
  out.reuse = SplitReuse(*s.trace, out.trace);
  if (s.experiment->open_loop) out.load = LoadOf(*s.trace, out.trace);
  std::vector<SimulationResult> extra;  // the scenarios' lookups and more
  for (ScenarioOutcome& o : out.scenarios) {
    extra.emplace_back().lookup_ns = std::move(o.lookup_ns);
  }
  if (s.options->sensitivity) {
    if (Result<void> ok = RunSensitivity(run, out, extra); !ok) {
      return tl::unexpected(ok.error());
    }
  }
  std::vector<const SimulationResult*> runs = {&out.trace};
  if (out.interval0) runs.push_back(&*out.interval0);
  for (const SimulationResult& r : extra) runs.push_back(&r);
  out.lookups = Lookups(runs);
  return out;
}

double Figure(const ConfigurationOutcome& o, std::string_view kind,
              std::string_view name) {
  for (const ScenarioOutcome& s : o.scenarios) {
    if (s.spec.substr(0, s.spec.find(':')) != kind) continue;
    for (const ScenarioFigure& f : s.figures) {
      if (f.name == name) return f.value;
    }
  }
  return 0.0;
}

// The candidates and the rule, on the trace and on it under interval 0.
void Decide(Comparison& c) {
  std::vector<Candidate> interval0;
  for (const ConfigurationOutcome& o : c.configurations) {
    c.trace_prompt_tokens = o.trace.prompt_tokens;
    c.candidates.push_back(CandidateOf(o, o.trace));
    if (o.interval0) interval0.push_back(CandidateOf(o, *o.interval0));
  }
  c.recommendation = Recommend(c.candidates, c.objective, c.capacity_tolerance);
  if (interval0.size() == c.candidates.size()) {
    c.interval0 = Recommend(interval0, c.objective, c.capacity_tolerance);
  }
  CompareWithTheReference(c);
}

}  // namespace

Candidate CandidateOf(const ConfigurationOutcome& o,
                      const SimulationResult& trace) {
  return {
      .label = o.config.label,
      .capacity = o.config.capacity ? o.config.capacity->engine_max_concurrency
                                    : o.trace.capacity_concurrency,
      .ttft_p50_s = trace.ttft.p50_s,
      .ttft_p99_s = trace.ttft.p99_s,
      .reused_tokens = static_cast<double>(trace.reused_tokens),
      .decode_tokens_per_s = Figure(o, "decode-cell", "decode_tokens_per_s"),
      .cold_prefill_s = Figure(o, "cold-prefill", "ttft_s"),
      .hash_unit = o.config.cache.keys.hash_unit};
}

Result<GeometryComparisonOptions> GeometryComparisonFrom(
    const CompareOptions& options) {
  Result<Objective> objective = ParseObjective(options.objective);
  if (!objective) return tl::unexpected(objective.error());
  GeometryComparisonOptions out;
  out.experiment = options.sim;
  out.objective = *objective;
  out.built_in = out.geometries.size();
  for (const std::string& g : options.geometries) {
    if (std::find(out.geometries.begin(), out.geometries.end(), g) ==
        out.geometries.end()) {
      out.geometries.push_back(g);
    }
  }
  return out;
}

Result<Comparison> RunGeometryComparison(
    const GeometryComparisonOptions& options, const SimProgress& progress) {
  if (options.geometries.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "no geometry to compare");
  }
  if (!(options.capacity_tolerance >= 0.0 && options.capacity_tolerance < 1)) {
    return Fail(ErrorCode::kInvalidArgument,
                "the capacity tolerance must be in [0, 1)");
  }
  ExperimentOptions e = options.experiment;
  DefaultToMeasured(e, false);
  if (Result<void> ok = ApplyPreset(e); !ok) return tl::unexpected(ok.error());
  if (e.workload.empty() && !e.limit) e.limit = kCompareDefaultLimit;
  Result<std::vector<SimRequest>> trace = LoadWorkload(e);
  if (!trace) return tl::unexpected(trace.error());
  Comparison c{.preset = e.preset,
               .cost_model = e.cost_model,
               .trace = e.workload,
               .trace_requests = trace->size(),
               .retention = RetentionText(e),
               .objective = options.objective,
               .capacity_tolerance = options.capacity_tolerance};
  // Every entry is resolved before the first run.
  std::vector<SimConfig> configs;
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < options.geometries.size(); ++i) {
    const std::string& geometry = options.geometries[i];
    Result<SimConfig> config = ConfigurationOf(geometry, e);
    if (!config && i < options.built_in &&
        config.error().code == ErrorCode::kInvalidArgument) {
      c.skipped.push_back(config.error().message);
      continue;
    }
    if (!config) {
      return Fail(config.error().code,
                  geometry + ": " + config.error().message);
    }
    configs.push_back(std::move(*config));
    labels.push_back(geometry);
  }
  if (configs.empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "no built-in geometry fits --model " + e.model +
                    "; give one with --geometry T/R/U (" + c.skipped.front() +
                    ")");
  }
  const Shared shared{&options, &e, &*trace, &progress};
  for (std::size_t i = 0; i < configs.size(); ++i) {
    Result<ConfigurationOutcome> outcome =
        RunConfiguration(labels[i], std::move(configs[i]), shared);
    if (!outcome) return tl::unexpected(outcome.error());
    c.configurations.push_back(std::move(*outcome));
  }
  Decide(c);
  return c;
}

void CompareWithTheReference(Comparison& c) {
  c.reference_best.reset();
  c.beyond_reference.clear();
  CompareOnTheEngine(c);
  const std::size_t winner = c.recommendation.winner;
  if (RunsAsTheReference(c.configurations[winner].config)) return;
  std::vector<Candidate> reference;
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < c.configurations.size(); ++i) {
    if (!RunsAsTheReference(c.configurations[i].config)) continue;
    reference.push_back(c.candidates[i]);
    index.push_back(i);
  }
  if (reference.empty()) return;
  const std::size_t best =
      index[Recommend(reference, c.objective, c.capacity_tolerance).winner];
  c.reference_best = best;
  c.beyond_reference = AgainstTheReference(c.candidates[winner],
                                           c.candidates[best], c.objective);
}

bool RunsAsTheReference(const SimConfig& config) {
  return config.cache.group_pool_blocks.empty() &&
         config.cache.retention == Retention::kReference;
}

}  // namespace hkv
