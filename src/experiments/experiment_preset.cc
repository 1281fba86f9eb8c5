// Deployment-based configurations of `hkv simulate` and `hkv compare`: a
// deployment preset's defaults under the flags, and the resolution of a
// model, TP, budget and geometry into a cache through the planner.
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "experiments/experiment_util.h"
#include "hkv/experiment.h"
#include "hkv/keys.h"
#include "hkv/numbers.h"

namespace hkv {
namespace {

// " per-group", " workload pools" or " rebalanced pools" after a geometry
// with such pools.
std::string PoolLabel(PoolLayout pools) {
  switch (pools) {
    case PoolLayout::kPerGroup:
      return " per-group";
    case PoolLayout::kPerGroupByWorkload:
      return " workload pools";
    case PoolLayout::kRebalanced:
      return " rebalanced pools";
    case PoolLayout::kShared:
      break;
  }
  return "";
}

using hkv::Named;

constexpr double kGiB = 1073741824.0;
// The measured deployment model-based runs default to.
constexpr const char* kMeasuredPreset = "glm53-flash-gb10x4";

// The preset of `o`, or a plain DeploymentSpec when none is named.
Result<DeploymentSpec> BaseSpec(const ExperimentOptions& o) {
  if (o.preset.empty()) return DeploymentSpec{};
  Result<DeploymentPreset> preset = LoadDeploymentPreset(o.preset);
  if (!preset) return tl::unexpected(preset.error());
  return preset->spec;
}

}  // namespace

void DefaultToMeasured(ExperimentOptions& o, bool uses_groups) {
  if (o.preset.empty() && !uses_groups && o.groups.empty() &&
      !o.given.count("model")) {
    o.preset = kMeasuredPreset;
  }
}

Result<void> ApplyPreset(ExperimentOptions& o) {
  if (o.preset.empty()) return {};
  Result<DeploymentPreset> preset = LoadDeploymentPreset(o.preset);
  if (!preset) return tl::unexpected(preset.error());
  const DeploymentPreset& p = *preset;
  const auto unless_given = [&o](const char* field, auto& target, auto value) {
    if (!o.given.count(field)) target = value;
  };
  unless_given("model", o.model, p.spec.model);
  unless_given("tp", o.tp, p.spec.tp);
  unless_given("dcp", o.dcp, p.spec.dcp);
  unless_given("budget_gib", o.budget_gib,
               static_cast<double>(p.spec.budget_bytes) / kGiB);
  unless_given("geometry", o.geometry,
               std::to_string(p.spec.target_block) + "/" +
                   std::to_string(p.spec.recurrent_block) + "/" +
                   std::to_string(p.spec.hash_unit));
  unless_given("max_batched_tokens", o.max_batched_tokens,
               p.max_batched_tokens);
  unless_given("spec_drafts", o.spec_drafts, p.speculative_tokens);
  unless_given("spec_acceptance", o.spec_acceptance, p.acceptance_rate);
  unless_given("spec_lookahead", o.spec_lookahead, p.speculative_tokens);
  unless_given("cost_model", o.cost_model, p.name);
  return {};
}

Result<SimConfig> DeploymentConfig(const std::string& geometry,
                                   const ExperimentOptions& o) {
  Result<DeploymentSpec> base = BaseSpec(o);
  if (!base) return tl::unexpected(base.error());
  DeploymentSpec spec = std::move(*base);
  spec.model = o.model;
  spec.tp = o.tp;
  spec.dcp = o.dcp;
  spec.budget_bytes =
      static_cast<std::uint64_t>(std::llround(o.budget_gib * kGiB));
  if (o.context) spec.context_tokens = *o.context;
  // The engine's drafts, not the model's: without speculative decoding no
  // speculative states are kept.
  spec.speculative_tokens = o.spec_drafts;
  if (Result<void> ok = ParsePageGeometry(geometry, spec); !ok) {
    return Named("--geometry " + geometry, ok.error());
  }
  Result<PoolLayout> pools = ParsePoolLayout(o.pools);
  if (!pools) return Named("--pools", pools.error());
  spec.pools = *pools;
  Result<Retention> retention = ParseRetention(o.retention);
  if (!retention) return Named("--retention", retention.error());
  const std::uint64_t sharded = std::uint64_t{spec.target_block} * spec.dcp;
  if (sharded > std::numeric_limits<std::uint32_t>::max()) {
    return Fail(ErrorCode::kInvalidArgument,
                "--dcp " + std::to_string(spec.dcp) + ": the target block of " +
                    std::to_string(spec.target_block) + " tokens x " +
                    std::to_string(spec.dcp) + " = " + std::to_string(sharded) +
                    " tokens exceeds 2^32 - 1");
  }
  Result<ResolvedDeployment> resolved = ResolveDeployment(spec);
  if (!resolved) {
    return Named("--model " + spec.model + " at --geometry " + geometry,
                 resolved.error());
  }
  if (Result<KeyFunction> key = ParseKeyFunction(o.key_function); key) {
    resolved->cache.keys.function = *key;
  }
  resolved->cache.retention_interval = o.retention_interval;
  resolved->cache.retention = *retention;
  resolved->cache.free_order = o.free_order;
  std::optional<PhysicalCost> physics;
  if (Result<DeploymentPreset> cost = LoadDeploymentPreset(o.cost_model);
      cost && !cost->hardware.empty()) {
    // The cost preset's hardware and efficiencies, this model and width.
    Result<PhysicalCost> resolved_physics = PresetPhysics(*cost, spec);
    if (!resolved_physics) {
      return Named(
          "--model " + spec.model + " with --cost-model " + o.cost_model,
          resolved_physics.error());
    }
    physics = std::move(*resolved_physics);
  }
  EngineFlags engine =
      EngineFlagsFor(resolved->cache, {.tp = spec.tp,
                                       .context_tokens = spec.context_tokens,
                                       .layout = resolved->layout});
  return SimConfig{
      .label = geometry + PoolLabel(spec.pools) +
               (*retention == Retention::kPlacement ? " placement" : ""),
      .cache = std::move(resolved->cache),
      .page_bytes = std::move(resolved->page_bytes),
      .groups = std::move(resolved->description),
      .capacity = resolved->capacity,
      .max_model_len = spec.context_tokens,
      .split_pools_by_workload = spec.pools == PoolLayout::kPerGroupByWorkload,
      .engine = std::move(engine),
      .physics = std::move(physics)};
}

}  // namespace hkv
