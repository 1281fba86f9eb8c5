// Calibration as code: measured figures (data/calibration/), each the
// outcome of a named scenario on a deployment preset at a page geometry, and
// the fit of every preset's cost model to them. Each figure's scenario runs
// through the real simulator once (the schedule of a closed-loop scenario
// does not depend on step times); its recorded steps then price it under any
// coefficients, so the fit is a small non-negative least-squares problem on
// relative errors. docs/calibration.md has the figures, the fit and the
// errors.
//
// A preset's "fit" object says how its coefficients are found:
//   "figures":  the ids fitted (the preset's other figures are held out)
//   "free":     coefficients fitted
//   "fixed":    {name: value} coefficients assumed
//   "tied":     {name: {"to": other, "factor": f}} name = f x other; or
//               {"to": other, "ratio_of": preset} with f = that preset's
//               name / other
//   "scaled_from": preset: every coefficient not free, fixed or tied is one
//               fitted scale times that preset's
// Presets depending on each other are fitted in rounds until their
// coefficients settle.
//
// Thread-safety: value types and pure functions.
//
// Example:
//   Result<CalibrationData> data = ParseCalibrationData(text);
//   Result<CalibrationReport> report = Calibrate(*data, {});
//   for (const FigureResult& f : report->figures) print(f);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/deployment.h"
#include "hkv/result.h"
#include "hkv/scenarios.h"
#include "hkv/simulator.h"

namespace hkv {

struct MeasuredFigure {
  std::string id;
  std::string preset;    // deployment preset name
  std::string geometry;  // T/R/U
  std::string scenario;  // KIND:ARGS (hkv/scenarios.h); empty: capacity
  std::string figure;    // the scenario figure's name
  double value = 0.0;
  // Capacity figures: the engine's log line at max_model_len.
  std::uint64_t max_model_len = 0;
  double concurrency = 0.0;
  std::string source;  // where it was published
  // From a file of figures held out from every fit ("held_out": true):
  // measurements of the same deployments that only check the fit.
  bool independent = false;
};

struct CalibrationData {
  std::vector<MeasuredFigure> figures;
};

// Parses a calibration data file (format in docs/calibration.md); figures
// of a file with "held_out": true are independent. kInvalidArgument naming
// the figure and field otherwise.
[[nodiscard]] Result<CalibrationData> ParseCalibrationData(
    std::string_view json_text);

struct CalibrateOptions {
  // Presets to fit (empty: every preset with figures); presets they depend
  // on are fitted with them.
  std::vector<std::string> presets = {};
  std::uint32_t max_rounds = 20;
};

struct FigureResult {
  MeasuredFigure measured;
  double model = 0.0;  // the fitted presets' figure (capacity: pool tokens)
  double error = 0.0;  // model / measured - 1
  bool fitted = false;
  // Held-out check: fitted figures predicted by a fit without them (leave
  // one out); held-out figures by the fit itself. Unset when nothing is
  // left to fit without the figure.
  std::optional<double> held_out_model = std::nullopt;
  std::optional<double> held_out_error = std::nullopt;
  double model_concurrency = 0.0;  // capacity figures
  // The term (a name of kCostCoefficients) with the most of the figure's
  // modelled seconds under the fitted presets, and its share of them; empty
  // for a figure without a span of steps (capacity, reuse).
  std::string dominant_term = {};
  double dominant_share = 0.0;
};

// The errors of the timed figures one term dominates: how the model fares
// where that term sets the time.
struct TermErrors {
  std::string term;
  std::size_t figures = 0;
  double median_fitted_error = 0.0;  // |error| of those fitted
  // |held_out_error| (left out of the fit, or held out of every fit).
  std::size_t held_out = 0;
  double median_held_out_error = 0.0;
};

// Two geometries of one deployment and scenario: which is faster, measured
// and modelled.
struct RankCheck {
  std::string faster_measured;  // figure id
  std::string slower_measured;  // figure id
  double measured_gap = 0.0;    // faster / slower - 1
  double model_gap = 0.0;       // the same figures' modelled ratio - 1
  bool agrees = false;          // the model orders them the same way
};

struct CalibrationReport {
  std::vector<DeploymentPreset> presets;  // with fitted cost models
  std::vector<FigureResult> figures;
  double median_fitted_error = 0.0;    // of |error| over fitted timed figures
  double median_held_out_error = 0.0;  // of |held_out_error| where set
  // Of |error| over the independent timed and reuse figures (0: none).
  double median_independent_error = 0.0;
  std::vector<RankCheck> rankings;
  std::vector<TermErrors> terms;  // by term, in kCostCoefficients order
  std::uint32_t rounds = 0;
};

// Fits the presets' cost models to `data`. Returns kNotFound for a figure's
// unknown preset, kInvalidArgument for a bad fit object or scenario, for a
// fit that lists an independent figure or for two figures with one id, and
// the simulator's errors.
[[nodiscard]] Result<CalibrationReport> Calibrate(
    const CalibrationData& data, const CalibrateOptions& options);

// A preset file's text with its "cost" object replaced by `cost` (the other
// fields as they were). kInvalidArgument for text that is not a JSON object.
[[nodiscard]] Result<std::string> WithCost(std::string_view preset_json,
                                           const CostModel& cost);

// The engine a preset serves with: its step budget, speculative decoding
// (drafts, acceptance, as many lookahead slots) and cost model, closed loop.
SimulationOptions PresetEngine(const DeploymentPreset& preset);

// A scenario simulated on a deployment, its steps recorded.
struct ScenarioRun {
  Scenario scenario = {};
  ResolvedDeployment deployment = {};
  SimulationOptions engine = {};
  SimulationResult result = {};
};

// Simulates scenario `scenario_spec` on `preset` at `geometry` (T/R/U;
// empty: the preset's), recording steps. Returns the parse, planner and
// simulator errors.
[[nodiscard]] Result<ScenarioRun> RunScenario(const DeploymentPreset& preset,
                                              std::string_view geometry,
                                              std::string_view scenario_spec);

}  // namespace hkv
