// One preset's fit (hkv/calibration.h): its fit object, the measured
// figures with their simulated runs, and the least-squares solve.
#pragma once

#include <array>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hkv/calibration.h"

namespace hkv::internal {

inline constexpr std::size_t kNumCoefficients = kCostCoefficients.size();
using Features = std::array<double, kNumCoefficients>;

struct Tie {
  std::size_t to = 0;
  double factor = 1.0;
  std::string ratio_of = {};  // factor = that preset's coefficient ratio
};

enum class Role { kFree, kFixed, kTied, kScaled };

// A preset's "fit" object.
struct FitSpec {
  std::vector<std::string> figures;
  std::vector<std::size_t> free;
  std::map<std::size_t, double> fixed;
  // Fixed at another preset's value (its fitted one).
  std::map<std::size_t, std::string> from;
  std::map<std::size_t, Tie> tied;
  std::string scaled_from;

  Role RoleOf(std::size_t j) const;
  std::size_t Unknowns() const;  // free ones and the scale
};

// Throws std::invalid_argument (or nlohmann's errors) on a bad object.
FitSpec FitOf(const nlohmann::json& fit);

// One measured figure and what the simulator made of it.
struct Case {
  MeasuredFigure measured = {};
  std::optional<ScenarioRun> run = std::nullopt;  // timed figures
  DeploymentCapacity capacity = {};               // capacity figures
};

// The figure's span summed into features, and its measured seconds;
// nullopt for a figure without a span.
struct Row {
  Features features{};
  double seconds = 0.0;
};
std::optional<Row> RowOf(const Case& c, const CostModel& cost);

// Each coefficient's seconds in the figure's span under `cost` (serving_s:
// the serving time the figure includes); nullopt as RowOf.
std::optional<Features> SecondsByTerm(const Case& c, const CostModel& cost);

// The least value of coefficient j: kLeastScale for the physical scales
// (an efficiency of at most 1), else 0.
double Floor(std::size_t j);

// The model's value of the figure under `cost` (capacity: the engine's
// pool tokens).
double ModelValue(const Case& c, const CostModel& cost);

struct Fitter {
  std::map<std::string, DeploymentPreset> presets;
  std::map<std::string, FitSpec> specs;
  std::vector<Case> cases;

  // The cost of preset `name` fitted to `chosen` (the presets it refers to
  // as they are now).
  Result<CostModel> Fit(const std::string& name,
                        const std::vector<const Case*>& chosen) const;
  // The preset's fitted figures, less the one with id `except`.
  std::vector<const Case*> CasesOf(const std::string& name,
                                   const std::string& except) const;

 private:
  double Factor(const Tie& tie, std::size_t j) const;
  // A fixed coefficient's value: its "fixed" number, another preset's
  // ("from"), or the preset's own.
  double FixedValue(const std::string& name, std::size_t j) const;
  CostModel CostOf(const std::string& name, const std::vector<double>& x) const;
  void AddTo(const std::string& name, std::size_t j, double f,
             std::vector<double>& col, double& constant) const;
};

}  // namespace hkv::internal
