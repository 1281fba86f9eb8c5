// hkv/plan_report.h: the model, the plans and their JSON of `hkv plan`.
#include "hkv/plan_report.h"

#include <nlohmann/json.hpp>

#include "hkv/limits.h"
#include "hkv/numbers.h"

namespace hkv {
namespace {

using Json = nlohmann::json;

std::string GeometryLabel(const Geometry& g) {
  return std::to_string(g.target_block) + "/" +
         std::to_string(g.recurrent_block) + "/" + std::to_string(g.hash_unit);
}

bool SameButRecurrentBlock(const Plan& a, const Plan& b) {
  return a.geometry.target_block == b.geometry.target_block &&
         a.geometry.hash_unit == b.geometry.hash_unit &&
         a.hit_unit == b.hit_unit && a.stride_bytes == b.stride_bytes &&
         a.shared.tokens == b.shared.tokens &&
         a.per_group.tokens == b.per_group.tokens;
}

Json CapacityJson(const PoolCapacity& c) {
  return {{"blocks", c.blocks},
          {"blocks_per_request", c.blocks_per_request},
          {"concurrency", c.concurrency},
          {"tokens", c.tokens},
          {"waste", c.waste}};
}

Json GroupJson(const GroupPlan& g) {
  return {{"kind", LayerKindName(g.kind)},
          {"draft", g.draft},
          {"layers", g.num_layers},
          {"block_tokens", g.block_tokens},
          {"slot_bytes", g.slot_bytes},
          {"data_bytes", g.data_bytes},
          {"waste_bytes", g.waste_bytes},
          {"blocks_per_request", g.blocks_per_request},
          {"pool_page_bytes", g.pool_page_bytes},
          {"pool_blocks", g.pool_blocks}};
}

Json RowJson(const PlanRow& row) {
  const Plan& p = row.plan;
  Json groups = Json::array();
  for (const GroupPlan& g : p.groups) groups.push_back(GroupJson(g));
  Json shared = CapacityJson(p.shared);
  shared["reference_tokens"] = p.reference_tokens;
  Json per_group = CapacityJson(p.per_group);
  per_group["null_bytes"] = p.null_bytes;
  return {{"geometry", row.label},
          {"target_block", p.geometry.target_block},
          {"recurrent_block", p.geometry.recurrent_block},
          {"hash_unit", p.geometry.hash_unit},
          {"scheduler_block", p.scheduler_block},
          {"hit_unit", p.hit_unit},
          {"partial_hits", p.partial_hits},
          {"stride_bytes", p.stride_bytes},
          {"cost_bytes", p.cost_bytes},
          {"baseline_layer_counts", p.baseline_layer_counts},
          {"baseline_stride_bytes", p.baseline_stride_bytes},
          {"baseline_cost_bytes", p.baseline_cost_bytes},
          {"shared", std::move(shared)},
          {"per_group", std::move(per_group)},
          {"groups", std::move(groups)}};
}

}  // namespace

bool IsModelFile(std::string_view model) {
  return model.find('/') != std::string_view::npos || model.ends_with(".json");
}

Result<ModelSpec> LoadModel(const std::string& model) {
  if (!IsModelFile(model)) return LoadPreset(model);
  Result<std::string> text = ReadSmallFile(model, kMaxConfigFileBytes);
  if (!text) return tl::unexpected(text.error());
  Result<ModelSpec> spec = ParseModelJson(*text);
  if (!spec)
    return Fail(ErrorCode::kCorruption, model + ": " + spec.error().message);
  return spec;
}

Result<PlanReport> PlanGeometries(const ModelSpec& model,
                                  const PlanOptions& options,
                                  std::span<const std::string> geometries) {
  PlanReport report{.model = model.name, .options = options};
  for (const std::string& label : geometries) {
    Result<Geometry> g =
        label == "auto" ? AutoGeometry(model, options) : ParseGeometry(label);
    Result<Plan> plan = g ? PlanCapacity(model, *g, options)
                          : Result<Plan>(tl::unexpected(g.error()));
    if (!plan) {
      return Fail(plan.error().code,
                  "geometry " + label + ": " + plan.error().message);
    }
    report.rows.push_back({label, std::move(*plan)});
  }
  return report;
}

Result<PlanReport> SearchPlans(const ModelSpec& model,
                               const PlanOptions& options,
                               std::uint32_t max_unit, std::size_t top) {
  Result<std::vector<Plan>> plans = SearchGeometries(model, options, max_unit);
  if (!plans) return tl::unexpected(plans.error());
  PlanReport report{.model = model.name, .options = options};
  std::vector<PlanRow>& rows = report.rows;
  std::uint32_t first_r = 0;
  for (Plan& plan : *plans) {
    const Geometry& g = plan.geometry;
    if (!rows.empty() && rows.back().plan.geometry == g) continue;
    if (!rows.empty() && SameButRecurrentBlock(rows.back().plan, plan)) {
      rows.back().label = std::to_string(g.target_block) + "/" +
                          std::to_string(first_r) + ".." +
                          std::to_string(g.recurrent_block) + "/" +
                          std::to_string(g.hash_unit);
      continue;
    }
    if (rows.size() == top) break;
    first_r = g.recurrent_block;
    rows.push_back({GeometryLabel(g), std::move(plan)});
  }
  return report;
}

std::string PlanReportJson(const PlanReport& report) {
  const PlanOptions& o = report.options;
  Json plans = Json::array();
  for (const PlanRow& row : report.rows) plans.push_back(RowJson(row));
  const Json out = {{"model", report.model},
                    {"tp", o.tp},
                    {"dcp", o.dcp},
                    {"budget_bytes", o.budget_bytes},
                    {"context_tokens", o.context_tokens},
                    {"plans", std::move(plans)}};
  return out.dump(2);
}

}  // namespace hkv
