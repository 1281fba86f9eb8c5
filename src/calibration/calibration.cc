// Calibrate (hkv/calibration.h): runs every figure's scenario, fits the
// presets in rounds, and checks the fit on what it did not see.
#include "hkv/calibration.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "calibration/calibration_fit.h"

namespace hkv {
namespace {

using internal::Case;
using internal::Fitter;

// The presets to fit: those asked for (or all with figures) and those they
// refer to.
Result<void> LoadPresets(const CalibrationData& data,
                         const CalibrateOptions& options, Fitter& fitter) {
  std::vector<std::string> todo = options.presets;
  if (todo.empty()) {
    for (const MeasuredFigure& f : data.figures) todo.push_back(f.preset);
  }
  while (!todo.empty()) {
    const std::string name = todo.back();
    todo.pop_back();
    if (fitter.presets.count(name)) continue;
    Result<DeploymentPreset> preset = LoadDeploymentPreset(name);
    if (!preset) return tl::unexpected(preset.error());
    try {
      internal::FitSpec spec = internal::FitOf(nlohmann::json::parse(
          preset->fit_json.empty() ? "{}" : preset->fit_json));
      if (!spec.scaled_from.empty()) todo.push_back(spec.scaled_from);
      for (const auto& [j, tie] : spec.tied) {
        if (!tie.ratio_of.empty()) todo.push_back(tie.ratio_of);
      }
      for (const auto& [j, other] : spec.from) todo.push_back(other);
      fitter.specs[name] = std::move(spec);
    } catch (const std::exception& e) {
      return Fail(ErrorCode::kInvalidArgument,
                  "preset " + name + ": fit: " + e.what());
    }
    fitter.presets.emplace(name, std::move(*preset));
  }
  return {};
}

// Each id once; no fit lists an independent figure.
Result<void> CheckIndependence(const CalibrationData& data,
                               const Fitter& fitter) {
  std::set<std::string> ids;
  for (const MeasuredFigure& m : data.figures) {
    if (!ids.insert(m.id).second) {
      return Fail(ErrorCode::kInvalidArgument,
                  "figure " + m.id + " is given twice");
    }
    if (!m.independent) continue;
    for (const auto& [name, spec] : fitter.specs) {
      if (std::find(spec.figures.begin(), spec.figures.end(), m.id) !=
          spec.figures.end()) {
        return Fail(ErrorCode::kInvalidArgument,
                    "preset " + name + " fits " + m.id +
                        ", a held-out figure: it may only check the fit");
      }
    }
  }
  return {};
}

Result<void> RunCases(const CalibrationData& data, Fitter& fitter) {
  for (const MeasuredFigure& m : data.figures) {
    if (!fitter.presets.count(m.preset)) continue;
    const DeploymentPreset& preset = fitter.presets.at(m.preset);
    Case c{.measured = m};
    if (m.scenario.empty()) {
      DeploymentSpec spec = preset.spec;
      spec.context_tokens = m.max_model_len;
      Result<void> ok = ParsePageGeometry(m.geometry, spec);
      Result<ResolvedDeployment> d =
          ok ? ResolveDeployment(spec)
             : Result<ResolvedDeployment>(tl::unexpected(ok.error()));
      if (!d) return Fail(d.error().code, m.id + ": " + d.error().message);
      c.capacity = d->capacity;
    } else {
      Result<ScenarioRun> run = RunScenario(preset, m.geometry, m.scenario);
      if (!run)
        return Fail(run.error().code, m.id + ": " + run.error().message);
      c.run = std::move(*run);
    }
    fitter.cases.push_back(std::move(c));
  }
  return {};
}

double Change(const CostModel& a, const CostModel& b) {
  double most = 0.0;
  for (std::size_t j = 0; j < kCostCoefficients.size(); ++j) {
    const double x = Coefficient(a, j);
    const double y = Coefficient(b, j);
    const double scale = std::max(std::abs(x), std::abs(y));
    if (scale > 0.0) most = std::max(most, std::abs(x - y) / scale);
  }
  return most;
}

// The sum of squared relative errors of every fitted timed figure, under
// `costs` (by preset; a preset not there: its current cost).
double Misfit(const Fitter& fitter,
              const std::map<std::string, CostModel>& costs) {
  double sum = 0.0;
  for (const Case& c : fitter.cases) {
    const std::string& name = c.measured.preset;
    const std::vector<std::string>& ids = fitter.specs.at(name).figures;
    if (!c.run || std::find(ids.begin(), ids.end(), c.measured.id) == ids.end())
      continue;
    const auto it = costs.find(name);
    const CostModel& cost =
        it != costs.end() ? it->second : fitter.presets.at(name).cost;
    const double e = internal::ModelValue(c, cost) / c.measured.value - 1.0;
    sum += e * e;
  }
  return sum;
}

// Rounds of fits until no coefficient moves by more than 1e-9 relatively,
// or the fits come back to where they were two rounds before: a step near
// the roofline's ridge can bind on either side, and the two fits that
// assign it each way may alternate (they differ by under 1 % here).
Result<std::uint32_t> FitRounds(Fitter& fitter, std::uint32_t max_rounds) {
  std::map<std::string, CostModel> before_last;
  for (std::uint32_t round = 1; round <= max_rounds; ++round) {
    double moved = 0.0;
    double cycle = round > 2 ? 0.0 : 1.0;
    std::map<std::string, CostModel> last;
    for (auto& [name, preset] : fitter.presets) {
      Result<CostModel> cost = fitter.Fit(name, fitter.CasesOf(name, ""));
      if (!cost) return tl::unexpected(cost.error());
      moved = std::max(moved, Change(preset.cost, *cost));
      if (round > 2) cycle = std::max(cycle, Change(before_last[name], *cost));
      last[name] = preset.cost;
      preset.cost = std::move(*cost);
    }
    if (moved < 1e-9) return round;
    if (cycle < 1e-9) {
      // Of the two, the fits that match the figures better.
      if (Misfit(fitter, last) < Misfit(fitter, {})) {
        for (auto& [name, preset] : fitter.presets) {
          preset.cost = last.at(name);
        }
      }
      return round;
    }
    before_last = std::move(last);
  }
  return max_rounds;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

// Fitted figures: predicted by a fit without them, when enough remain.
// Held-out figures: predicted by the fit.
FigureResult Evaluate(const Fitter& fitter, const Case& c) {
  const DeploymentPreset& preset = fitter.presets.at(c.measured.preset);
  const internal::FitSpec& spec = fitter.specs.at(c.measured.preset);
  const std::vector<std::string>& ids = spec.figures;
  FigureResult r{
      .measured = c.measured,
      .model = internal::ModelValue(c, preset.cost),
      .fitted = std::find(ids.begin(), ids.end(), c.measured.id) != ids.end(),
      .model_concurrency = c.capacity.engine_max_concurrency};
  r.error = r.model / c.measured.value - 1.0;
  if (!c.run) return r;
  if (const std::optional<internal::Features> seconds =
          internal::SecondsByTerm(c, preset.cost)) {
    const auto most = std::max_element(seconds->begin(), seconds->end());
    double total = 0.0;
    for (double v : *seconds) total += v;
    if (total > 0.0) {
      r.dominant_term =
          kCostCoefficients[static_cast<std::size_t>(most - seconds->begin())];
      r.dominant_share = *most / total;
    }
  }
  if (!r.fitted) {
    r.held_out_model = r.model;
  } else {
    const std::vector<const Case*> rest =
        fitter.CasesOf(c.measured.preset, c.measured.id);
    std::size_t rows = 0;
    for (const Case* other : rest) rows += other->run ? 1u : 0u;
    if (rows >= spec.Unknowns() && spec.Unknowns() > 0) {
      Result<CostModel> without = fitter.Fit(c.measured.preset, rest);
      if (without) r.held_out_model = internal::ModelValue(c, *without);
    }
  }
  if (r.held_out_model) {
    r.held_out_error = *r.held_out_model / c.measured.value - 1.0;
  }
  return r;
}

// Speed: a rate (..._per_s), or the inverse of a time (..._s).
double Speed(const MeasuredFigure& m, double value) {
  const bool time = m.figure.ends_with("_s") && !m.figure.ends_with("_per_s");
  return time ? 1.0 / value : value;
}

void TermTable(CalibrationReport& report) {
  for (std::string_view term : kCostCoefficients) {
    TermErrors t{.term = std::string(term)};
    std::vector<double> fitted;
    std::vector<double> held_out;
    for (const FigureResult& f : report.figures) {
      if (f.dominant_term != term) continue;
      ++t.figures;
      if (f.fitted) fitted.push_back(std::abs(f.error));
      if (f.held_out_error) held_out.push_back(std::abs(*f.held_out_error));
    }
    if (t.figures == 0) continue;
    t.median_fitted_error = Median(fitted);
    t.held_out = held_out.size();
    t.median_held_out_error = Median(held_out);
    report.terms.push_back(std::move(t));
  }
}

void Rankings(CalibrationReport& report) {
  const std::vector<FigureResult>& f = report.figures;
  for (std::size_t i = 0; i < f.size(); ++i) {
    for (std::size_t j = i + 1; j < f.size(); ++j) {
      const MeasuredFigure& a = f[i].measured;
      const MeasuredFigure& b = f[j].measured;
      if (a.scenario.empty() || a.preset != b.preset ||
          a.scenario != b.scenario || a.figure != b.figure ||
          a.geometry == b.geometry) {
        continue;
      }
      const bool a_faster = Speed(a, a.value) >= Speed(b, b.value);
      const FigureResult& fast = a_faster ? f[i] : f[j];
      const FigureResult& slow = a_faster ? f[j] : f[i];
      RankCheck check{.faster_measured = fast.measured.id,
                      .slower_measured = slow.measured.id};
      check.measured_gap = Speed(fast.measured, fast.measured.value) /
                               Speed(slow.measured, slow.measured.value) -
                           1.0;
      check.model_gap =
          Speed(fast.measured, fast.model) / Speed(slow.measured, slow.model) -
          1.0;
      check.agrees = check.model_gap > 1e-9;
      report.rankings.push_back(check);
    }
  }
}

}  // namespace

Result<CalibrationReport> Calibrate(const CalibrationData& data,
                                    const CalibrateOptions& options) {
  Fitter fitter;
  if (Result<void> ok = LoadPresets(data, options, fitter); !ok) {
    return tl::unexpected(ok.error());
  }
  if (Result<void> ok = CheckIndependence(data, fitter); !ok) {
    return tl::unexpected(ok.error());
  }
  if (Result<void> ok = RunCases(data, fitter); !ok) {
    return tl::unexpected(ok.error());
  }
  CalibrationReport report;
  Result<std::uint32_t> rounds = FitRounds(fitter, options.max_rounds);
  if (!rounds) return tl::unexpected(rounds.error());
  report.rounds = *rounds;
  std::vector<double> fitted;
  std::vector<double> held_out;
  std::vector<double> independent;
  for (const Case& c : fitter.cases) {
    FigureResult r = Evaluate(fitter, c);
    if (r.fitted && c.run) fitted.push_back(std::abs(r.error));
    if (r.held_out_error) held_out.push_back(std::abs(*r.held_out_error));
    if (c.measured.independent && c.run) {
      independent.push_back(std::abs(r.error));
    }
    report.figures.push_back(std::move(r));
  }
  report.median_fitted_error = Median(fitted);
  report.median_held_out_error = Median(held_out);
  report.median_independent_error = Median(independent);
  Rankings(report);
  TermTable(report);
  for (auto& [name, preset] : fitter.presets) {
    report.presets.push_back(std::move(preset));
  }
  return report;
}

}  // namespace hkv
