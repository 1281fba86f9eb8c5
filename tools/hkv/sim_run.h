// Running `hkv simulate` and `hkv compare` without printing: the
// configurations their options name, each simulated on one workload. The
// CLI prints the runs; the Python module returns them.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "hkv/result.h"
#include "hkv/scenarios.h"
#include "hkv/simulator.h"
#include "sim_report.h"
#include "sim_setup.h"

namespace hkv::cli {

struct SimRun {
  SimConfig config;
  SimulationResult result;
  double wall_s = 0.0;  // real time of the run
  // A named scenario's figures (hkv/scenarios.h); empty for other workloads.
  std::vector<ScenarioFigure> figures = {};
};

struct SimRuns {
  std::vector<SimRequest> workload = {};
  std::vector<SimRun> runs = {};
  std::string cost_model = {};

  // One report per run, pointing into this object.
  std::vector<SimReport> Reports() const;
};

// Called with a run's label, its finished requests and the total.
using SimProgress = std::function<void(const std::string& label,
                                       std::size_t done, std::size_t total)>;

// `hkv simulate`: the flags' one configuration. Returns the first error of
// the workload, the cache or the run, prefixed by the run's label.
[[nodiscard]] Result<SimRuns> RunSimulation(const SimCommandOptions& options,
                                            const SimProgress& progress);

// `hkv compare`: the --config configurations (default: the built-in
// comparison, its first 2000 requests) or one flag varied.
[[nodiscard]] Result<SimRuns> RunComparison(
    const CompareCommandOptions& options, const SimProgress& progress);

}  // namespace hkv::cli
