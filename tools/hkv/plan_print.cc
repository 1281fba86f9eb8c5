#include "plan_print.h"

#include <fmt/core.h>

namespace hkv::cli {
namespace {

std::string GeometryText(const Geometry& g) {
  return fmt::format("{}/{}/{}", g.target_block, g.recurrent_block,
                     g.hash_unit);
}

std::string CountList(const std::vector<std::uint32_t>& counts) {
  std::string out = "[";
  for (std::size_t i = 0; i < counts.size(); ++i) {
    out += fmt::format("{}{}", i == 0 ? "" : ",", counts[i]);
  }
  return out + "]";
}

// "rec[9,9,8,8] mla[11]": consecutive groups of one kind together.
std::string GroupsText(const Plan& plan) {
  std::string out;
  std::vector<std::uint32_t> run;
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    const GroupPlan& g = plan.groups[i];
    run.push_back(g.num_layers);
    const bool last = i + 1 == plan.groups.size() ||
                      plan.groups[i + 1].kind != g.kind ||
                      plan.groups[i + 1].draft != g.draft;
    if (!last) continue;
    out +=
        fmt::format("{}{}{}{}", out.empty() ? "" : " ", g.draft ? "draft-" : "",
                    LayerKindName(g.kind), CountList(run));
    run.clear();
  }
  return out;
}

std::string RebalanceText(const Plan& plan) {
  std::vector<std::uint32_t> counts;
  for (const GroupPlan& g : plan.groups) counts.push_back(g.num_layers);
  if (counts == plan.baseline_layer_counts) return "";
  const double change =
      100.0 * (static_cast<double>(plan.cost_bytes) /
                   static_cast<double>(plan.baseline_cost_bytes) -
               1.0);
  return fmt::format(" (rebalanced from {}: cost {} -> {} B, {:+.1f}%)",
                     CountList(plan.baseline_layer_counts),
                     plan.baseline_cost_bytes, plan.cost_bytes, change);
}

constexpr const char* kRowFormat =
    "{:<18} {:<16} {:>5} {:>11} {:>8} {:>7} {:>5} {:>10} {:>6} | {:>8} "
    "{:>5} {:>10} {:>6} | {}\n";

}  // namespace

void PrintPlanText(const PlanReport& report) {
  const PlanOptions& o = report.options;
  fmt::print("model {}, tp {}, dcp {}, budget {} B, context {} tokens\n",
             report.model, o.tp, o.dcp, o.budget_bytes, o.context_tokens);
  fmt::print("{:<42}{:-^52} | {:-^32} |\n", "", " shared pool ",
             " per-group pools ");
  fmt::print(kRowFormat, "geometry", "blocks T/R/U", "hit", "stride B",
             "blocks", "blk/req", "reqs", "tokens", "waste", "blocks", "reqs",
             "tokens", "waste", "groups");
  for (const PlanRow& row : report.rows) {
    const Plan& p = row.plan;
    fmt::print(kRowFormat, row.label, GeometryText(p.geometry), p.hit_unit,
               p.stride_bytes, p.shared.blocks, p.shared.blocks_per_request,
               p.shared.concurrency, p.shared.tokens,
               fmt::format("{:.1f}%", 100.0 * p.shared.waste),
               p.per_group.blocks, p.per_group.concurrency, p.per_group.tokens,
               fmt::format("{:.1f}%", 100.0 * p.per_group.waste),
               GroupsText(p) + RebalanceText(p));
  }
  // The figure hkv simulate and compare report as the capacity.
  for (const PlanRow& row : report.rows) {
    const Plan& p = row.plan;
    fmt::print(
        "{}: the engine's log line (shared pool): {} tokens, maximum "
        "concurrency {:.2f}x at {} tokens\n",
        row.label, p.reference_tokens,
        static_cast<double>(p.reference_tokens) /
            static_cast<double>(o.context_tokens),
        o.context_tokens);
  }
}

}  // namespace hkv::cli
