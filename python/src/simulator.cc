// Bindings of the library's experiments (hkv/experiment.h) that `hkv
// simulate` and `hkv compare` run: options by name, results as the
// commands' JSON reports. Simulation runs without the GIL. hkv.simulator
// passes data_dir, the folder of the bundled data (the default workload's
// trace), which it finds beside the package, so an installed module does
// not depend on the source tree.
#include <exception>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "bindings.h"
#include "hkv/comparison.h"
#include "hkv/experiment.h"
#include "hkv/sim_options.h"
#include "hkv/sim_report.h"

namespace hkv::python {
namespace {

// The options of the table hkv/sim_options.h, by name.
ExperimentOptions OptionsFrom(const py::dict& given) {
  ExperimentOptions options;
  for (const auto& [key, value] : given) {
    const std::string name = key.cast<std::string>();
    const SimOption* option = FindSimOption(name);
    if (option == nullptr) {
      throw UsageError("unknown simulator option \"" + name + "\"");
    }
    std::visit(
        [&, &value = value](auto field) {
          using T = std::remove_reference_t<decltype(options.*field)>;
          options.*field = Convert<T>(value, "simulator option " + name);
        },
        option->field);
    options.given.insert(name);
  }
  // The ranges the commands' flags have.
  if (Result<void> ok = CheckSimOptions(options, OptionNames::kPython); !ok) {
    throw UsageError("simulator option " + ok.error().message);
  }
  return options;
}

// The runs as the commands' JSON: one report per configuration.
std::string ReportsJson(const Result<SimRuns>& runs,
                        const ExperimentOptions& options) {
  if (!runs) throw ResultError(runs.error());
  return SimReportsJson(ReportsOf(*runs, options));
}

// A Python progress callback, progress(label, done, total), called with
// the GIL held from the run's thread. The first exception it raises stops
// further calls and is raised again by Rethrow once the run is over.
class PythonProgress {
 public:
  explicit PythonProgress(py::object callback)
      : callback_(std::move(callback)) {
    if (!callback_.is_none() && !PyCallable_Check(callback_.ptr())) {
      throw UsageError(
          "progress must be callable(label, done, total) or "
          "None, got " +
          ShortRepr(callback_));
    }
  }
  SimProgress Get() {
    if (callback_.is_none()) return {};
    return
        [this](const std::string& label, std::size_t done, std::size_t total) {
          py::gil_scoped_acquire gil;
          if (error_) return;
          try {
            callback_(label, done, total);
          } catch (const py::error_already_set&) {
            error_ = std::current_exception();
          }
        };
  }
  // REQUIRES: the GIL is held.
  void Rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  py::object callback_;
  std::exception_ptr error_;
};

}  // namespace

void BindSimulator(py::module_& m) {
  m.def(
      "simulate_json",
      [](const py::dict& options, py::object progress) {
        const ExperimentOptions o = OptionsFrom(options);
        PythonProgress callback(std::move(progress));
        Result<SimRuns> runs = [&] {
          py::gil_scoped_release release;
          return RunSimulation(o, callback.Get());
        }();
        callback.Rethrow();
        return ReportsJson(runs, o);
      },
      py::arg("options"), py::arg("progress") = py::none(),
      "Runs `hkv simulate` with the options (ExperimentOptions field names) "
      "and returns its JSON reports (a list of one)");
  m.def(
      "compare_json",
      [](const py::dict& options, std::vector<std::string> configs,
         std::vector<std::string> geometries, std::string vary,
         py::object progress) {
        CompareOptions o{.sim = OptionsFrom(options),
                         .configs = std::move(configs),
                         .vary = std::move(vary),
                         .geometries = std::move(geometries)};
        PythonProgress callback(std::move(progress));
        Result<SimRuns> runs = [&] {
          py::gil_scoped_release release;
          return RunComparison(o, callback.Get());
        }();
        callback.Rethrow();
        return ReportsJson(runs, o.sim);
      },
      py::arg("options"), py::arg("configs"), py::arg("geometries"),
      py::arg("vary"), py::arg("progress") = py::none(),
      "Runs `hkv compare --config/--vary` and returns its JSON reports, one "
      "per column");
  m.def(
      "compare_geometries_json",
      [](const py::dict& options, std::vector<std::string> geometries,
         std::string objective, py::object progress) {
        CompareOptions o{.sim = OptionsFrom(options),
                         .geometries = std::move(geometries),
                         .objective = std::move(objective)};
        Result<GeometryComparisonOptions> ab = GeometryComparisonFrom(o);
        if (!ab) throw ResultError(ab.error());
        PythonProgress callback(std::move(progress));
        Result<Comparison> c = [&] {
          py::gil_scoped_release release;
          return RunGeometryComparison(*ab, callback.Get());
        }();
        callback.Rethrow();
        if (!c) throw ResultError(c.error());
        return ComparisonJson(*c);
      },
      py::arg("options"), py::arg("geometries"), py::arg("objective"),
      py::arg("progress") = py::none(),
      "Runs the geometry comparison of `hkv compare` without --config and "
      "returns its JSON (schema hkv.compare/1)");
}

}  // namespace hkv::python
