// The report of a simulation run, as `hkv simulate` and `hkv compare` (with
// --config, --geometry or --vary) print it and hkv.simulate / hkv.compare
// return it: its figures as rows (the CLI's text table and CSV) and as JSON
// (the `--json` schema, docs/simulator.md; golden tests in tests/testdata/
// hold it). Times in it are modelled, but for the wall time and the
// manager calls' times, which are measured.
//
// Thread-safety: pure functions over values; a SimReport points into the
// SimRuns it was made from, which must outlive it.
//
// Example:
//   Result<SimRuns> runs = RunSimulation(options, {});
//   std::vector<SimReport> reports = ReportsOf(*runs, options);
//   std::string json = SimReportJson(reports[0]);
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/comparison.h"
#include "hkv/deployment.h"
#include "hkv/experiment.h"
#include "hkv/scenarios.h"
#include "hkv/simulator.h"

namespace hkv {

// What "prompt hit ratio" means in every command's output (replay,
// simulate, compare): one definition.
inline constexpr std::string_view kPromptHitRatioMeaning =
    "prompt hit ratio = prompt tokens served from the cache (GPU or a "
    "tier) / prompt tokens, over every request, first sends included";

// How a simulator run's hit ratio was reached, for the line under its
// report: "closed loop, 16 requests in the system" or "open loop at the
// workload's arrival times", the cluster's size, and that concurrent
// requests share only blocks already computed and the pool evicts, which
// hkv replay (one request at a time, pool unbounded unless
// --capacity-tokens) does not.
std::string HitRatioRegime(const ExperimentOptions& options);

struct SimReport {
  std::string label = {};
  const SimulationResult* result = nullptr;  // required: not null
  std::string cost_model = {};
  double wall_s = 0.0;  // real time of the run
  // A deployment's resolved groups and capacity (empty, unset otherwise).
  std::string groups = {};
  std::optional<DeploymentCapacity> capacity = std::nullopt;
  std::uint64_t max_model_len = 0;
  const std::vector<ScenarioFigure>* figures = nullptr;  // may be empty
  // Open loop: the offered load against the served (JSON "saturation").
  std::optional<Load> load = std::nullopt;
};

// One report per run of `runs`, in order, pointing into `runs`; with the
// load of each when `options` ran them open loop.
std::vector<SimReport> ReportsOf(const SimRuns& runs,
                                 const ExperimentOptions& options);

// One row of a report's table: one value, or two shown as "a/b" (then
// `key` names the first CSV column and `key2` the second).
struct SimReportRow {
  std::string key;    // CSV column, and key of the JSON's "table"
  std::string label;  // the text table's row
  std::string text;   // the value as shown
  std::string key2 = {};
  std::string text2 = {};

  std::string Shown() const { return key2.empty() ? text : text + "/" + text2; }
};

// The report's rows, in the order shown: counts, latencies, throughput,
// the deployment's capacity and the scenario's figures (when there are),
// miss causes, cached blocks per group kind, manager call times, wall time.
std::vector<SimReportRow> SimReportRows(const SimReport& report);

// `hkv simulate --json`: one JSON object, indented by 2 (label, cost
// model, the rows as "table" with numbers as numbers, the deployment,
// "saturation", latencies, miss causes, manager call times, groups, and
// every request's figures and the usage over time).
std::string SimReportJson(const SimReport& report);

// The reports as a JSON array of SimReportJson's objects, indented by 2
// (`hkv compare --json` with more than one configuration).
std::string SimReportsJson(std::span<const SimReport> reports);

}  // namespace hkv
