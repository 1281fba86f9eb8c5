// `hkv simulate` (one configuration) and `hkv compare` (several side by
// side): run the engine simulator over one workload and print the figures.
#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "hkv/deployment.h"
#include "sim_report.h"
#include "sim_setup.h"

namespace hkv::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The built-in comparison: three page geometries of the default deployment.
constexpr const char* kDefaultGeometries[] = {"256/256/256", "2048/2048/2048",
                                              "2048/256/256"};
constexpr std::size_t kDefaultLimit = 2000;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int Failure(const char* command, const Error& error) {
  fmt::print(stderr, "hkv {}: {}\n", command, error.message);
  return 1;
}

struct Run {
  SimConfig config;
  SimulationResult result;
  double wall_s = 0.0;
};

// Runs one configuration; progress on stderr once the command has run for
// a second.
Result<Run> RunOne(SimConfig config, SimulationOptions engine,
                   const std::vector<SimRequest>& workload,
                   Clock::time_point command_start) {
  const Clock::time_point start = Clock::now();
  engine.cache = config.cache;
  const std::string label = config.label;
  engine.progress = [label, command_start](std::size_t done,
                                           std::size_t total) {
    if (Seconds(command_start) >= 1.0) {
      fmt::print(stderr, "{}: {}/{} requests\n", label, done, total);
    }
  };
  Result<SimulationResult> result = Simulate(workload, engine);
  if (!result) {
    return Fail(result.error().code, label + ": " + result.error().message);
  }
  return Run{std::move(config), std::move(*result), Seconds(start)};
}

void Print(const SimCommandOptions& o, const std::vector<SimRequest>& workload,
           const std::vector<Run>& runs, const std::string& cost_model) {
  std::vector<SimReport> reports;
  for (const Run& run : runs) {
    reports.push_back({run.config.label, &run.result, cost_model, run.wall_s});
    if (o.open_loop) PrintLoad(workload, reports.back());
  }
  if (o.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const SimReport& r : reports) out.push_back(ReportJson(r));
    fmt::print("{}\n", (reports.size() == 1 ? out[0] : out).dump(2));
  } else if (o.csv) {
    PrintCsv(reports);
  } else {
    PrintText(reports);
  }
}

// One column of the output: a cache and the flags it runs under.
struct Variant {
  SimConfig config;
  SimCommandOptions flags;
};

// Runs each variant on the workload of `base`.
int RunVariants(const char* command, const SimCommandOptions& base,
                const std::vector<Variant>& variants, Clock::time_point start) {
  Result<std::vector<SimRequest>> workload = LoadWorkload(base);
  if (!workload) return Failure(command, workload.error());
  std::vector<Run> runs;
  std::string cost_model;
  for (const Variant& v : variants) {
    Result<SimulationOptions> engine = EngineFromFlags(v.flags);
    if (!engine) return Failure(command, engine.error());
    cost_model = engine->cost.name;
    Result<Run> run = RunOne(v.config, *engine, *workload, start);
    if (!run) return Failure(command, run.error());
    runs.push_back(std::move(*run));
  }
  Print(base, *workload, runs, cost_model);
  return 0;
}

// --vary NAME=V1,V2,...: one variant per value, on the one --config (or the
// flags' cache).
Result<std::vector<Variant>> Varied(const CompareCommandOptions& options) {
  const std::size_t eq = options.vary.find('=');
  if (eq == std::string::npos || options.configs.size() > 1) {
    return Fail(ErrorCode::kInvalidArgument,
                "--vary wants NAME=V1,V2,... and at most one --config");
  }
  const std::string name = options.vary.substr(0, eq);
  std::vector<Variant> variants;
  std::stringstream values(options.vary.substr(eq + 1));
  for (std::string value; std::getline(values, value, ',');) {
    SimCommandOptions flags = options.sim;
    if (Result<void> ok = SetSimOption(flags, name, value); !ok) {
      return tl::unexpected(ok.error());
    }
    Result<SimConfig> config = options.configs.empty()
                                   ? ConfigFromFlags(flags)
                                   : ConfigFromSpec(options.configs[0], flags);
    if (!config) return tl::unexpected(config.error());
    config->label = name + "=" + value;
    variants.push_back({std::move(*config), std::move(flags)});
  }
  return variants;
}

// The --config variants, or the built-in comparison.
Result<std::vector<Variant>> Configured(const CompareCommandOptions& options,
                                        SimCommandOptions& sim) {
  std::vector<std::string> specs = options.configs;
  if (specs.empty()) {
    for (const char* g : kDefaultGeometries) {
      specs.push_back(std::string("geometry=") + g + ";label=" + g);
    }
    if (sim.workload.empty() && !sim.limit) sim.limit = kDefaultLimit;
  }
  std::vector<Variant> variants;
  for (const std::string& spec : specs) {
    Result<SimConfig> config = ConfigFromSpec(spec, sim);
    if (!config) return tl::unexpected(config.error());
    variants.push_back({std::move(*config), sim});
  }
  return variants;
}

template <typename Options>
void OnRun(CLI::App* sub, std::shared_ptr<Options> options,
           int (*run)(const Options&)) {
  sub->callback([options, run] {
    if (const int code = run(*options); code != 0) {
      throw CLI::RuntimeError(code);
    }
  });
}

}  // namespace

void RegisterSimulate(CLI::App& app) {
  auto options = std::make_shared<SimCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "simulate",
      "Simulate an engine serving a workload on one cache configuration "
      "(modelled times, measured cache-manager CPU time)");
  AddSimOptions(*sub, *options);
  OnRun(sub, options, &RunSimulate);
}

int RunSimulate(const SimCommandOptions& options) {
  const Clock::time_point start = Clock::now();
  Result<SimConfig> config = ConfigFromFlags(options);
  if (!config) return Failure("simulate", config.error());
  return RunVariants("simulate", options, {{std::move(*config), options}},
                     start);
}

void RegisterCompare(CLI::App& app) {
  auto options = std::make_shared<CompareCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "compare",
      "Simulate several cache configurations on one workload, side by side "
      "(default: glm53-flash-like TP 4, 33 GiB, geometries 256/256/256, "
      "2048/2048/2048, 2048/256/256, first 2000 requests of the bundled "
      "conversation trace, closed loop at concurrency 16)");
  AddSimOptions(*sub, options->sim);
  sub->add_option("--config", options->configs,
                  "A configuration (repeat): GROUPS[;unit=U][;blocks=N|"
                  ";capacity=T][;label=L] or geometry=T/R/U[;blocks=N]"
                  "[;label=L]; the default is the built-in comparison");
  sub->add_option("--vary", options->vary,
                  "NAME=V1,V2,...: one column per value of one flag "
                  "(concurrency, max-batched-tokens, max-num-seqs, "
                  "long-prefill-threshold, spec-drafts, spec-acceptance, "
                  "spec-lookahead, retention-interval, num-blocks, hash-unit, "
                  "dcp, tp, budget-gib, geometry) on the one --config or the "
                  "flags' cache");
  OnRun(sub, options, &RunCompare);
}

int RunCompare(const CompareCommandOptions& options) {
  const Clock::time_point start = Clock::now();
  SimCommandOptions sim = options.sim;
  Result<std::vector<Variant>> variants =
      options.vary.empty() ? Configured(options, sim) : Varied(options);
  if (!variants) return Failure("compare", variants.error());
  return RunVariants("compare", sim, *variants, start);
}

}  // namespace hkv::cli
