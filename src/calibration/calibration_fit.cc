// The fit of one preset's cost model (calibration_fit.h).
#include "calibration/calibration_fit.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "calibration/nnls.h"

namespace hkv::internal {
namespace {

using Json = nlohmann::json;
constexpr std::size_t kN = kNumCoefficients;

std::size_t CoefIndex(const std::string& name) {
  for (std::size_t i = 0; i < kN; ++i) {
    if (kCostCoefficients[i] == name) return i;
  }
  throw std::invalid_argument("unknown coefficient \"" + name + "\"");
}

std::optional<ScenarioFigure> FigureOf(const Case& c, const CostModel& cost) {
  Result<std::vector<ScenarioFigure>> figures =
      ScenarioFigures(c.run->scenario, c.run->result, cost);
  if (!figures) return std::nullopt;
  for (const ScenarioFigure& f : *figures) {
    if (f.name == c.measured.figure) return f;
  }
  return std::nullopt;
}

}  // namespace

Role FitSpec::RoleOf(std::size_t j) const {
  if (std::find(free.begin(), free.end(), j) != free.end()) return Role::kFree;
  if (tied.count(j)) return Role::kTied;
  if (fixed.count(j) || from.count(j) || scaled_from.empty()) {
    return Role::kFixed;
  }
  return Role::kScaled;
}

double Floor(std::size_t j) {
  return j == kComputeScale || j == kMemoryScale || j == kLinkScale
             ? kLeastScale
             : 0.0;
}

std::size_t FitSpec::Unknowns() const {
  return free.size() + (scaled_from.empty() ? 0 : 1);
}

FitSpec FitOf(const Json& fit) {
  FitSpec spec;
  for (const auto& [key, value] : fit.items()) {
    if (key == "figures") {
      spec.figures = value.get<std::vector<std::string>>();
    } else if (key == "free") {
      for (const auto& name : value) spec.free.push_back(CoefIndex(name));
    } else if (key == "fixed") {
      for (const auto& [n, v] : value.items()) {
        spec.fixed[CoefIndex(n)] = v.get<double>();
      }
    } else if (key == "from") {
      for (const auto& [n, v] : value.items()) {
        spec.from[CoefIndex(n)] = v.get<std::string>();
      }
    } else if (key == "tied") {
      for (const auto& [n, v] : value.items()) {
        Tie t{.to = CoefIndex(v.at("to").get<std::string>())};
        if (v.contains("factor")) t.factor = v["factor"].get<double>();
        if (v.contains("ratio_of")) t.ratio_of = v["ratio_of"];
        spec.tied[CoefIndex(n)] = t;
      }
    } else if (key == "scaled_from") {
      spec.scaled_from = value.get<std::string>();
    } else if (key != "note") {
      throw std::invalid_argument("unknown fit field \"" + key + "\"");
    }
  }
  for (const auto& [index, tie] : spec.tied) {
    if (spec.tied.count(tie.to)) {
      throw std::invalid_argument("a coefficient is tied to a tied one");
    }
  }
  if (spec.Unknowns() > 15) throw std::invalid_argument("too many unknowns");
  return spec;
}

std::optional<Row> RowOf(const Case& c, const CostModel& cost) {
  if (!c.run) return std::nullopt;
  const std::optional<ScenarioFigure> f = FigureOf(c, cost);
  if (!f || !f->IsTimed()) return std::nullopt;
  Row row{.seconds = f->tokens > 0.0 ? f->tokens / c.measured.value
                                     : c.measured.value};
  const std::vector<StepShape>& steps = c.run->result.step_shapes;
  for (std::uint64_t s = f->first_step; s <= f->last_step; ++s) {
    for (std::size_t i = 0; i < kN; ++i) {
      row.features[i] += Feature(cost, steps[s], i);
    }
  }
  row.features[kServingCoefficient] += f->serving;
  return row;
}

std::optional<Features> SecondsByTerm(const Case& c, const CostModel& cost) {
  const std::optional<Row> row = RowOf(c, cost);
  if (!row) return std::nullopt;
  Features seconds{};
  for (std::size_t i = 0; i < kN; ++i) {
    seconds[i] = Coefficient(cost, i) * row->features[i];
  }
  return seconds;
}

double ModelValue(const Case& c, const CostModel& cost) {
  if (!c.run) return static_cast<double>(c.capacity.engine_pool_tokens);
  const std::optional<ScenarioFigure> f = FigureOf(c, cost);
  return f ? f->value : 0.0;
}

double Fitter::FixedValue(const std::string& name, std::size_t j) const {
  const FitSpec& spec = specs.at(name);
  if (spec.fixed.count(j)) return spec.fixed.at(j);
  if (spec.from.count(j))
    return Coefficient(presets.at(spec.from.at(j)).cost, j);
  return Coefficient(presets.at(name).cost, j);
}

double Fitter::Factor(const Tie& tie, std::size_t j) const {
  if (tie.ratio_of.empty()) return tie.factor;
  const CostModel& other = presets.at(tie.ratio_of).cost;
  const double to = Coefficient(other, tie.to);
  return to > 0.0 ? Coefficient(other, j) / to : 0.0;
}

// Adds coefficient j's part of a row with feature value f: to its column
// (free), the scale's column (scaled) or the constant (fixed).
void Fitter::AddTo(const std::string& name, std::size_t j, double f,
                   std::vector<double>& col, double& constant) const {
  const FitSpec& spec = specs.at(name);
  switch (spec.RoleOf(j)) {
    case Role::kFree:
      // The unknown is the part above the coefficient's floor.
      col[static_cast<std::size_t>(
          std::find(spec.free.begin(), spec.free.end(), j) -
          spec.free.begin())] += f;
      constant += Floor(j) * f;
      break;
    case Role::kScaled:
      col.back() += Coefficient(presets.at(spec.scaled_from).cost, j) * f;
      break;
    default:
      constant += FixedValue(name, j) * f;
  }
}

Result<CostModel> Fitter::Fit(const std::string& name,
                              const std::vector<const Case*>& chosen) const {
  const FitSpec& spec = specs.at(name);
  const CostModel& now = presets.at(name).cost;
  Matrix a;
  std::vector<double> b;
  for (const Case* c : chosen) {
    const std::optional<Row> row = RowOf(*c, now);
    if (!row) continue;
    std::vector<double> col(spec.Unknowns(), 0.0);
    double constant = 0.0;
    for (std::size_t j = 0; j < kN; ++j) {
      const bool tied = spec.RoleOf(j) == Role::kTied;
      const std::size_t to = tied ? spec.tied.at(j).to : j;
      const double factor = tied ? Factor(spec.tied.at(j), j) : 1.0;
      AddTo(name, to, factor * row->features[j], col, constant);
    }
    for (double& v : col) v /= row->seconds;
    a.push_back(std::move(col));
    b.push_back((row->seconds - constant) / row->seconds);
  }
  if (spec.Unknowns() == 0 || a.empty()) return now;
  const std::optional<std::vector<double>> x = SolveNonNegative(a, b);
  if (!x) {
    return Fail(ErrorCode::kInvalidArgument,
                "preset " + name + ": the fit has no solution");
  }
  return CostOf(name, *x);
}

CostModel Fitter::CostOf(const std::string& name,
                         const std::vector<double>& x) const {
  const FitSpec& spec = specs.at(name);
  CostModel out = presets.at(name).cost;
  for (std::size_t j = 0; j < kN; ++j) {
    double v = Coefficient(out, j);
    switch (spec.RoleOf(j)) {
      case Role::kFree:
        v = Floor(j) + x[static_cast<std::size_t>(
                           std::find(spec.free.begin(), spec.free.end(), j) -
                           spec.free.begin())];
        break;
      case Role::kScaled:
        v = x.back() * Coefficient(presets.at(spec.scaled_from).cost, j);
        break;
      case Role::kFixed:
        v = FixedValue(name, j);
        break;
      case Role::kTied:
        continue;
    }
    (void)SetCostCoefficient(out, kCostCoefficients[j], v);
  }
  for (const auto& [j, tie] : spec.tied) {
    (void)SetCostCoefficient(out, kCostCoefficients[j],
                             Factor(tie, j) * Coefficient(out, tie.to));
  }
  return out;
}

std::vector<const Case*> Fitter::CasesOf(const std::string& name,
                                         const std::string& except) const {
  const std::vector<std::string>& ids = specs.at(name).figures;
  std::vector<const Case*> out;
  for (const Case& c : cases) {
    if (c.measured.preset == name && c.measured.id != except &&
        std::find(ids.begin(), ids.end(), c.measured.id) != ids.end()) {
      out.push_back(&c);
    }
  }
  return out;
}

}  // namespace hkv::internal
