// `hkv simulate` (one configuration) and `hkv compare` (several side by
// side): run the engine simulator over one workload and print the figures.
#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <memory>
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

int RunConfigs(const char* command, const SimCommandOptions& o,
               const std::vector<SimConfig>& configs, Clock::time_point start) {
  Result<std::vector<SimRequest>> workload = LoadWorkload(o);
  if (!workload) return Failure(command, workload.error());
  Result<SimulationOptions> engine = EngineFromFlags(o);
  if (!engine) return Failure(command, engine.error());
  std::vector<Run> runs;
  for (const SimConfig& config : configs) {
    Result<Run> run = RunOne(config, *engine, *workload, start);
    if (!run) return Failure(command, run.error());
    runs.push_back(std::move(*run));
  }
  Print(o, *workload, runs, engine->cost.name);
  return 0;
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
  return RunConfigs("simulate", options, {std::move(*config)}, start);
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
  OnRun(sub, options, &RunCompare);
}

int RunCompare(const CompareCommandOptions& options) {
  const Clock::time_point start = Clock::now();
  SimCommandOptions sim = options.sim;
  std::vector<std::string> specs = options.configs;
  if (specs.empty()) {
    for (const char* g : kDefaultGeometries)
      specs.push_back(std::string("geometry=") + g + ";label=" + g);
    if (sim.workload.empty() && !sim.limit) sim.limit = kDefaultLimit;
  }
  std::vector<SimConfig> configs;
  for (const std::string& spec : specs) {
    Result<SimConfig> config = ConfigFromSpec(spec, sim);
    if (!config) return Failure("compare", config.error());
    configs.push_back(std::move(*config));
  }
  return RunConfigs("compare", sim, configs, start);
}

}  // namespace hkv::cli
