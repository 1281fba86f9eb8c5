// The experiments of hkv/experiment.h run: each variant simulated on one
// workload, a named scenario's figures read off its steps.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <sstream>
#include <utility>

#include "engine/sim_stats.h"
#include "experiments/experiment_util.h"
#include "hkv/experiment.h"
#include "hkv/limits.h"
#include "hkv/numbers.h"

namespace hkv {
namespace {

using hkv::Named;

using Clock = std::chrono::steady_clock;

// One column of the output: a cache and the flags it runs under.
struct Variant {
  SimConfig config;
  ExperimentOptions flags;
};

Result<SimRun> RunOne(SimConfig config, SimulationOptions engine,
                      const std::vector<SimRequest>& workload,
                      const SimProgress& progress) {
  const Clock::time_point start = Clock::now();
  if (config.split_pools_by_workload) {
    if (Result<void> ok =
            internal::SplitPoolsByWorkload(config, engine, workload);
        !ok) {
      return Fail(ok.error().code, config.label + ": " + ok.error().message);
    }
  }
  engine.cache = config.cache;
  engine.page_bytes = config.page_bytes;
  if (config.physics) engine.cost.physics = config.physics;
  if (progress) {
    engine.progress = [&progress, label = config.label](std::size_t done,
                                                        std::size_t total) {
      progress(label, done, total);
    };
  }
  Result<SimulationResult> result = Simulate(workload, engine);
  if (!result) {
    return Fail(result.error().code,
                config.label + ": " + result.error().message);
  }
  const double wall =
      std::chrono::duration<double>(Clock::now() - start).count();
  return SimRun{std::move(config), std::move(*result), wall};
}

// The named scenario of the workload flag, if it names one.
std::optional<Scenario> ScenarioOf(const ExperimentOptions& o) {
  if (!IsScenarioName(o.workload.substr(0, o.workload.find(':')))) {
    return std::nullopt;
  }
  Result<Scenario> scenario = ParseScenario(o.workload);
  return scenario ? std::optional<Scenario>(*scenario) : std::nullopt;
}

// Runs each variant on the workload of `base`.
Result<SimRuns> RunVariants(const ExperimentOptions& base,
                            const std::vector<Variant>& variants,
                            const SimProgress& progress) {
  Result<std::vector<SimRequest>> workload = LoadWorkload(base);
  if (!workload) return tl::unexpected(workload.error());
  SimRuns runs{.workload = std::move(*workload)};
  const std::optional<Scenario> scenario = ScenarioOf(base);
  for (const Variant& v : variants) {
    Result<SimulationOptions> engine = EngineFromFlags(v.flags);
    if (!engine) return tl::unexpected(engine.error());
    runs.cost_model = engine->cost.name;
    if (scenario) {
      engine->concurrency = ScenarioConcurrency(*scenario);
      engine->arrivals = ArrivalMode::kClosedLoop;
      engine->record_steps = true;
    }
    Result<SimRun> run = RunOne(v.config, *engine, runs.workload, progress);
    if (!run) return tl::unexpected(run.error());
    if (scenario) {
      Result<std::vector<ScenarioFigure>> figures =
          ScenarioFigures(*scenario, run->result, engine->cost);
      if (!figures) return tl::unexpected(figures.error());
      run->figures = std::move(*figures);
      run->result.step_shapes.clear();
    }
    runs.runs.push_back(std::move(*run));
  }
  return runs;
}

// --vary NAME=V1,V2,...: one variant per value, on the one --config (or the
// flags' cache).
Result<std::vector<Variant>> Varied(const CompareOptions& options) {
  const std::size_t eq = options.vary.find('=');
  if (eq == std::string::npos || options.configs.size() > 1) {
    return Fail(ErrorCode::kInvalidArgument,
                "--vary wants NAME=V1,V2,... and at most one --config");
  }
  const std::string name = options.vary.substr(0, eq);
  if (options.vary.size() == eq + 1) {
    return Fail(ErrorCode::kInvalidArgument,
                "--vary " + options.vary + " lists no values");
  }
  std::vector<Variant> variants;
  std::stringstream values(options.vary.substr(eq + 1));
  for (std::string value; std::getline(values, value, ',');) {
    ExperimentOptions flags = options.sim;
    if (Result<void> ok = SetSimOption(flags, name, value); !ok) {
      return tl::unexpected(ok.error());
    }
    const std::string label = name + "=" + value;
    Result<SimConfig> config = options.configs.empty()
                                   ? ConfigFromFlags(flags)
                                   : ConfigFromSpec(options.configs[0], flags);
    if (!config) return Named("--vary " + label, config.error());
    config->label = label;
    variants.push_back({std::move(*config), std::move(flags)});
  }
  return variants;
}

// The --config and --geometry variants, or the built-in comparison.
Result<std::vector<Variant>> Configured(const CompareOptions& options,
                                        const ExperimentOptions& sim) {
  std::vector<std::string> specs = options.configs;
  for (const std::string& g : options.geometries) {
    specs.push_back("geometry=" + g + ";label=" + g);
  }
  std::vector<Variant> variants;
  for (const std::string& spec : specs) {
    Result<SimConfig> config = ConfigFromSpec(spec, sim);
    if (!config) return tl::unexpected(config.error());
    variants.push_back({std::move(*config), sim});
  }
  return variants;
}

}  // namespace

Result<SimRuns> RunSimulation(const ExperimentOptions& given,
                              const SimProgress& progress) {
  if (Result<void> ok = CheckSimOptions(given, OptionNames::kFlag); !ok) {
    return tl::unexpected(ok.error());
  }
  ExperimentOptions options = given;
  DefaultToMeasured(options, false);
  if (Result<void> ok = ApplyPreset(options); !ok) {
    return tl::unexpected(ok.error());
  }
  Result<SimConfig> config = ConfigFromFlags(options);
  if (!config) return tl::unexpected(config.error());
  return RunVariants(options, {{std::move(*config), options}}, progress);
}

Result<SimRuns> RunComparison(const CompareOptions& given,
                              const SimProgress& progress) {
  if (Result<void> ok = CheckSimOptions(given.sim, OptionNames::kFlag); !ok) {
    return tl::unexpected(ok.error());
  }
  if (given.configs.empty() && given.geometries.empty() && given.vary.empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "compare needs --config, --geometry or --vary; without them "
                "it is the geometry comparison (RunGeometryComparison)");
  }
  CompareOptions options = given;
  if (!options.vary.empty() && !options.geometries.empty()) {
    if (options.geometries.size() > 1) {
      return Fail(ErrorCode::kInvalidArgument,
                  "--vary takes at most one --geometry");
    }
    options.sim.geometry = options.geometries[0];
    options.sim.given.insert("geometry");
  }
  const bool uses_groups = std::any_of(
      options.configs.begin(), options.configs.end(), [](const std::string& c) {
        return c.find("geometry=") == std::string::npos;
      });
  DefaultToMeasured(options.sim, uses_groups);
  if (Result<void> ok = ApplyPreset(options.sim); !ok) {
    return tl::unexpected(ok.error());
  }
  // One default limit on the bundled trace, whatever else is given.
  if (options.sim.workload.empty() && !options.sim.limit) {
    options.sim.limit = kCompareDefaultLimit;
  }
  const ExperimentOptions& sim = options.sim;
  Result<std::vector<Variant>> variants =
      options.vary.empty() ? Configured(options, sim) : Varied(options);
  if (!variants) return tl::unexpected(variants.error());
  return RunVariants(sim, *variants, progress);
}

namespace internal {

Result<void> SplitPoolsByWorkload(SimConfig& config, SimulationOptions engine,
                                  const std::vector<SimRequest>& workload) {
  CacheConfig& cache = config.cache;
  const auto bytes_of = [&config](std::size_t g) -> double {
    return config.page_bytes.empty()
               ? 1.0
               : static_cast<double>(config.page_bytes[g]);
  };
  engine.cache = cache;
  UseUnlimitedPool(engine.cache, workload);
  engine.page_bytes = config.page_bytes;
  engine.progress = nullptr;
  engine.kv_events = nullptr;  // a sizing pass, not the run
  engine.record_steps = false;
  Result<SimulationResult> unlimited = Simulate(workload, engine);
  if (!unlimited) return tl::unexpected(unlimited.error());
  std::uint64_t longest = 1;
  for (const SimRequest& r : workload) {
    longest =
        std::max<std::uint64_t>(longest, PromptLength(r) + r.output_length);
  }
  double budget = 0.0;
  double kept = 0.0;
  double floor_bytes = 0.0;
  std::vector<std::uint64_t> floor_blocks;
  for (std::size_t g = 0; g < cache.groups.size(); ++g) {
    budget += static_cast<double>(cache.group_pool_blocks[g]) * bytes_of(g);
    kept +=
        static_cast<double>(unlimited->groups[g].cached_blocks) * bytes_of(g);
    floor_blocks.push_back(MaxBlocksPerRequest(
        cache.groups[g],
        {.max_model_len = std::min<std::uint64_t>(longest, cache.max_model_len),
         .max_in_flight_tokens =
             cache.max_in_flight_tokens.value_or(cache.max_model_len),
         .dcp = cache.dcp}));
    floor_bytes += static_cast<double>(floor_blocks.back()) * bytes_of(g);
  }
  if (kept <= 0.0 || floor_bytes > budget) return {};
  // The floors first, then the rest by what each group keeps.
  std::vector<std::uint32_t> pools;
  std::uint64_t total = 1;
  for (std::size_t g = 0; g < cache.groups.size(); ++g) {
    const double share =
        static_cast<double>(unlimited->groups[g].cached_blocks) * bytes_of(g) /
        kept;
    const double blocks =
        static_cast<double>(floor_blocks[g]) +
        std::floor((budget - floor_bytes) * share / bytes_of(g));
    pools.push_back(static_cast<std::uint32_t>(
        std::clamp(blocks, 1.0, static_cast<double>(kMaxPoolBlocks))));
    total += pools.back();
  }
  if (total > kMaxPoolBlocks) return {};
  cache.group_pool_blocks = std::move(pools);
  cache.num_blocks = static_cast<std::uint32_t>(total);
  if (config.capacity && config.max_model_len > 0) {
    // Whole requests of the context the new pools hold.
    const double fit =
        EstimateCapacity(cache, cache.num_blocks - 1,
                         static_cast<double>(config.max_model_len))
            .concurrency;
    DeploymentCapacity& c = *config.capacity;
    c.whole_requests = static_cast<std::uint64_t>(fit);
    c.engine_max_concurrency = fit;
    c.engine_pool_tokens = c.whole_requests * config.max_model_len;
    c.blocks = cache.num_blocks;
  }
  return {};
}

}  // namespace internal
}  // namespace hkv
