// Bindings of the library's experiments (hkv/experiment.h) that `hkv
// simulate` and `hkv compare` run: options by name, results as the
// commands' JSON reports. Simulation runs without the GIL. hkv.simulator
// passes data_dir, the folder of the bundled data (the default workload's
// trace), which it finds beside the package, so an installed module does
// not depend on the source tree.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "hkv/comparison.h"
#include "hkv/experiment.h"
#include "sim_report.h"

namespace hkv::python {
namespace {

using SimCommandOptions = ExperimentOptions;

// A setter of one SimCommandOptions field from a Python value.
using Setter = std::function<void(SimCommandOptions&, py::handle,
                                  const std::string& name)>;

template <typename T>
Setter Field(T SimCommandOptions::*field) {
  return [field](SimCommandOptions& o, py::handle v, const std::string& name) {
    o.*field = Convert<T>(v, name);
  };
}

const std::map<std::string, Setter>& Setters() {
  static const std::map<std::string, Setter> setters = {
      {"workload", Field(&SimCommandOptions::workload)},
      {"limit", Field(&SimCommandOptions::limit)},
      {"time_scale", Field(&SimCommandOptions::time_scale)},
      {"duration_s", Field(&SimCommandOptions::duration_s)},
      {"groups", Field(&SimCommandOptions::groups)},
      {"hash_unit", Field(&SimCommandOptions::hash_unit)},
      {"num_blocks", Field(&SimCommandOptions::num_blocks)},
      {"capacity_tokens", Field(&SimCommandOptions::capacity_tokens)},
      {"dcp", Field(&SimCommandOptions::dcp)},
      {"retention_interval", Field(&SimCommandOptions::retention_interval)},
      {"free_order", Field(&SimCommandOptions::free_order)},
      {"key_function", Field(&SimCommandOptions::key_function)},
      {"model", Field(&SimCommandOptions::model)},
      {"tp", Field(&SimCommandOptions::tp)},
      {"budget_gib", Field(&SimCommandOptions::budget_gib)},
      {"geometry", Field(&SimCommandOptions::geometry)},
      {"max_batched_tokens", Field(&SimCommandOptions::max_batched_tokens)},
      {"max_num_seqs", Field(&SimCommandOptions::max_num_seqs)},
      {"long_prefill_threshold",
       Field(&SimCommandOptions::long_prefill_threshold)},
      {"concurrency", Field(&SimCommandOptions::concurrency)},
      {"open_loop", Field(&SimCommandOptions::open_loop)},
      {"spec_drafts", Field(&SimCommandOptions::spec_drafts)},
      {"spec_acceptance", Field(&SimCommandOptions::spec_acceptance)},
      {"spec_lookahead", Field(&SimCommandOptions::spec_lookahead)},
      {"seed", Field(&SimCommandOptions::seed)},
      {"cost_model", Field(&SimCommandOptions::cost_model)},
      {"cost_file", Field(&SimCommandOptions::cost_file)},
      {"cost", Field(&SimCommandOptions::cost)},
      {"preset", Field(&SimCommandOptions::preset)},
      {"data_dir", Field(&SimCommandOptions::data_dir)},
  };
  return setters;
}

SimCommandOptions OptionsFrom(const py::dict& given) {
  SimCommandOptions options;
  for (const auto& [key, value] : given) {
    const std::string name = key.cast<std::string>();
    auto it = Setters().find(name);
    if (it == Setters().end()) {
      throw UsageError("unknown simulator option \"" + name + "\"");
    }
    it->second(options, value, "simulator option " + name);
    options.given.insert(name);
  }
  // The ranges the commands' flags have.
  if (Result<void> ok = CheckSimOptions(options, OptionNames::kPython); !ok) {
    throw UsageError("simulator option " + ok.error().message);
  }
  return options;
}

// The runs as the commands' JSON: one report per configuration.
std::string ReportsJson(const Result<SimRuns>& runs, bool open_loop) {
  if (!runs) throw ResultError(runs.error());
  nlohmann::json out = nlohmann::json::array();
  for (const SimRun& run : runs->runs) {
    out.push_back(cli::ReportJson(
        {.label = run.config.label,
         .result = &run.result,
         .cost_model = runs->cost_model,
         .wall_s = run.wall_s,
         .groups = run.config.groups,
         .capacity = run.config.capacity,
         .max_model_len = run.config.max_model_len,
         .figures = &run.figures,
         .load = open_loop
                     ? std::optional<Load>(LoadOf(runs->workload, run.result))
                     : std::nullopt}));
  }
  return out.dump();
}

}  // namespace

void BindSimulator(py::module_& m) {
  m.def(
      "simulate_json",
      [](const py::dict& options) {
        const SimCommandOptions o = OptionsFrom(options);
        py::gil_scoped_release release;
        return ReportsJson(RunSimulation(o, {}), o.open_loop);
      },
      py::arg("options"),
      "Runs `hkv simulate` with the options (SimCommandOptions field names) "
      "and returns its JSON reports (a list of one)");
  m.def(
      "compare_json",
      [](const py::dict& options, std::vector<std::string> configs,
         std::vector<std::string> geometries, std::string vary) {
        CompareOptions o{.sim = OptionsFrom(options),
                         .configs = std::move(configs),
                         .vary = std::move(vary),
                         .geometries = std::move(geometries)};
        py::gil_scoped_release release;
        return ReportsJson(RunComparison(o, {}), o.sim.open_loop);
      },
      py::arg("options"), py::arg("configs"), py::arg("geometries"),
      py::arg("vary"),
      "Runs `hkv compare --config/--vary` and returns its JSON reports, one "
      "per column");
  m.def(
      "compare_geometries_json",
      [](const py::dict& options, std::vector<std::string> geometries,
         std::string objective) {
        CompareOptions o{.sim = OptionsFrom(options),
                         .geometries = std::move(geometries),
                         .objective = std::move(objective)};
        Result<GeometryComparisonOptions> ab = GeometryComparisonFrom(o);
        if (!ab) throw ResultError(ab.error());
        py::gil_scoped_release release;
        Result<Comparison> c = RunGeometryComparison(*ab, {});
        if (!c) throw ResultError(c.error());
        return ComparisonJson(*c);
      },
      py::arg("options"), py::arg("geometries"), py::arg("objective"),
      "Runs the geometry comparison of `hkv compare` without --config and "
      "returns its JSON (schema hkv.compare/1)");
}

}  // namespace hkv::python
