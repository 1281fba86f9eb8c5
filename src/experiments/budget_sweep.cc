// `hkv compare --sweep budget-gib=...` (hkv/comparison.h): the geometries
// on the trace at each KV budget per rank.
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hkv/comparison.h"
#include "hkv/numbers.h"

namespace hkv {
namespace {

constexpr std::string_view kBudgetSweep = "budget-gib=";
// Budgets of one sweep at most: each is a run of every geometry.
constexpr std::size_t kMaxSweepPoints = 16;
// As --budget-gib: up to a petabyte per rank.
constexpr RealRange kBudgetRange{.min = 0.0, .max = 1e6, .min_excluded = true};

}  // namespace

Result<std::vector<double>> ParseBudgetSweep(std::string_view spec) {
  const std::string what = "--sweep " + std::string(spec);
  if (spec.substr(0, kBudgetSweep.size()) != kBudgetSweep) {
    return Fail(ErrorCode::kInvalidArgument,
                what + ": want budget-gib=V1,V2,... (GiB per rank)");
  }
  std::vector<double> budgets;
  std::string_view rest = spec.substr(kBudgetSweep.size());
  for (;;) {
    const std::size_t comma = rest.find(',');
    Result<double> budget = ParseReal(rest.substr(0, comma), kBudgetRange);
    if (!budget) return Named(what, budget.error());
    budgets.push_back(*budget);
    if (budgets.size() > kMaxSweepPoints) {
      return Fail(
          ErrorCode::kInvalidArgument,
          what + ": more than " + std::to_string(kMaxSweepPoints) + " budgets");
    }
    if (comma == std::string_view::npos) return budgets;
    rest.remove_prefix(comma + 1);
  }
}

Result<std::vector<BudgetSweepPoint>> RunBudgetSweep(
    const GeometryComparisonOptions& options, std::span<const double> budgets,
    const SimProgress& progress) {
  GeometryComparisonOptions o = options;
  o.scenarios.clear();
  o.sensitivity = false;
  o.experiment.given.insert("budget_gib");
  std::vector<BudgetSweepPoint> points;
  for (const double budget : budgets) {
    o.experiment.budget_gib = budget;
    Result<Comparison> c = RunGeometryComparison(o, progress);
    if (!c) {
      return Named("budget " + NumberText(budget) + " GiB", c.error());
    }
    points.push_back({.budget_gib = budget, .comparison = std::move(*c)});
  }
  return points;
}

}  // namespace hkv
