#include "hkv/deployment.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "hkv/planner.h"

namespace hkv {
namespace {

const LayerSpec* FirstLayer(const ModelSpec& model, const GroupPlan& group) {
  const std::vector<LayerSpec>& layers =
      group.draft ? model.draft.layers : model.layers;
  const auto it =
      std::find_if(layers.begin(), layers.end(),
                   [&](const LayerSpec& l) { return l.kind == group.kind; });
  return it == layers.end() ? nullptr : &*it;
}

// A planned group as a cache group.
GroupSpec CacheGroup(const GroupPlan& group, const Plan& plan,
                     const ModelSpec& model, const DeploymentSpec& deployment) {
  const bool rewinds =
      group.draft && deployment.draft_rewind == DraftRewind::kOneUnit;
  GroupSpec spec{
      .block_size = plan.geometry.target_block,
      .speculation = rewinds ? Speculation::kEagle : Speculation::kNone};
  const LayerSpec* layer = FirstLayer(model, group);
  switch (group.kind) {
    case LayerKind::kFullAttention:
    case LayerKind::kMla:
      break;
    case LayerKind::kSlidingWindow:
      spec.kind = GroupKind::kSlidingWindow;
      spec.sliding_window = layer != nullptr ? layer->window : 0;
      spec.dcp_layout = DcpLayout::kReplicated;
      break;
    case LayerKind::kChunkedLocal:
      spec.kind = GroupKind::kChunkedLocal;
      spec.chunk_size = layer != nullptr ? layer->chunk : 0;
      spec.dcp_layout = DcpLayout::kReplicated;
      break;
    case LayerKind::kRecurrent:
      spec.kind = GroupKind::kRecurrent;
      spec.block_size = plan.geometry.recurrent_block;
      spec.speculative_blocks = deployment.speculative_tokens.value_or(
          model.draft.speculative_tokens);
      break;
  }
  return spec;
}

// The planner's per-group pools as the cache's: one null block for all.
Result<void> PerGroupPools(const Plan& plan, CacheConfig& cache) {
  std::uint64_t total = 1;
  cache.group_pool_blocks.clear();
  for (const GroupPlan& group : plan.groups) {
    if (group.pool_blocks == 0) {
      return Fail(ErrorCode::kInvalidArgument,
                  "per-group pools: the budget leaves a group no block");
    }
    total += group.pool_blocks;
    if (total > std::numeric_limits<std::uint32_t>::max()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "per-group pools: the plan's blocks exceed 2^32 - 1");
    }
    cache.group_pool_blocks.push_back(
        static_cast<std::uint32_t>(group.pool_blocks));
  }
  cache.num_blocks = static_cast<std::uint32_t>(total);
  return {};
}

Result<void> BadGeometry(std::string_view text) {
  return Fail(ErrorCode::kInvalidArgument,
              "page geometry \"" + std::string(text) +
                  "\" is not target/recurrent/unit, e.g. 2048/256/256");
}

DeploymentCapacity Capacity(const Plan& plan, PoolLayout pools) {
  if (pools != PoolLayout::kShared) {
    const PoolCapacity& per_group = plan.per_group;
    return {
        .engine_pool_tokens = per_group.tokens,
        .engine_max_concurrency = static_cast<double>(per_group.concurrency),
        .whole_requests = per_group.concurrency,
        .blocks = per_group.blocks + 1,
        .blocks_per_request = per_group.blocks_per_request,
        .stride_bytes = 0};
  }
  const PoolCapacity& shared = plan.shared;
  return {
      .engine_pool_tokens = plan.reference_tokens,
      .engine_max_concurrency = static_cast<double>(shared.blocks) /
                                static_cast<double>(shared.blocks_per_request),
      .whole_requests = shared.concurrency,
      .blocks = shared.blocks,
      .blocks_per_request = shared.blocks_per_request,
      .stride_bytes = plan.stride_bytes};
}

// "recurrent[9,9,8,8]/256 mla[11]/2048 ...; hash unit 256".
std::string Describe(const Plan& plan, DraftRewind rewind) {
  std::string out;
  for (std::size_t i = 0; i < plan.groups.size();) {
    const GroupPlan& g = plan.groups[i];
    std::string counts;
    std::size_t j = i;
    for (; j < plan.groups.size() && plan.groups[j].kind == g.kind &&
           plan.groups[j].draft == g.draft;
         ++j) {
      counts += (j == i ? "" : ",") + std::to_string(plan.groups[j].num_layers);
    }
    out += (out.empty() ? "" : " ") + std::string(LayerKindName(g.kind)) + "[" +
           counts + "]/" + std::to_string(g.block_tokens) +
           (!g.draft                          ? ""
            : rewind == DraftRewind::kOneUnit ? " (draft, rewinds a unit)"
                                              : " (draft)");
    i = j;
  }
  return out + "; hash unit " + std::to_string(plan.geometry.hash_unit) +
         ", hits in units of " + std::to_string(plan.hit_unit);
}

Result<Plan> PlanOf(const DeploymentSpec& spec, ModelSpec& model) {
  Result<ModelSpec> loaded = LoadPreset(spec.model);
  if (!loaded) return tl::unexpected(loaded.error());
  model = std::move(*loaded);
  if (spec.draft) model.draft = *spec.draft;
  return PlanCapacity(model,
                      {.target_block = spec.target_block,
                       .recurrent_block = spec.recurrent_block,
                       .hash_unit = spec.hash_unit},
                      {.tp = spec.tp,
                       .dcp = spec.dcp,
                       .budget_bytes = spec.budget_bytes,
                       .context_tokens = spec.context_tokens,
                       .max_batched_tokens = spec.in_flight_tokens,
                       .speculative_tokens = spec.speculative_tokens});
}

}  // namespace

Result<PoolLayout> ParsePoolLayout(std::string_view text) {
  if (text == "shared") return PoolLayout::kShared;
  if (text == "per-group") return PoolLayout::kPerGroup;
  if (text == "workload") return PoolLayout::kPerGroupByWorkload;
  if (text == "rebalanced") return PoolLayout::kRebalanced;
  return Fail(ErrorCode::kInvalidArgument,
              "pool layout \"" + std::string(text) +
                  "\" is not shared, per-group, workload or rebalanced");
}

Result<void> ParsePageGeometry(std::string_view text, DeploymentSpec& spec) {
  const Result<Geometry> geometry = ParseGeometry(text);
  if (!geometry) return BadGeometry(text);
  spec.target_block = geometry->target_block;
  spec.recurrent_block = geometry->recurrent_block;
  spec.hash_unit = geometry->hash_unit;
  return {};
}

Result<ResolvedDeployment> ResolveDeployment(const DeploymentSpec& spec) {
  ModelSpec model;
  Result<Plan> plan = PlanOf(spec, model);
  if (!plan) return tl::unexpected(plan.error());
  if (plan->shared.blocks > std::numeric_limits<std::uint32_t>::max()) {
    return Fail(ErrorCode::kInvalidArgument,
                "the plan's " + std::to_string(plan->shared.blocks) +
                    " blocks exceed 2^32 - 1");
  }
  ResolvedDeployment out;
  out.cache.num_blocks = static_cast<std::uint32_t>(plan->shared.blocks);
  if (spec.pools != PoolLayout::kShared) {
    Result<void> ok = PerGroupPools(*plan, out.cache);
    if (!ok) return tl::unexpected(ok.error());
  }
  out.cache.keys.function = KeyFunction::kXxh3_128Cbor;
  out.cache.keys.hash_unit = plan->geometry.hash_unit;
  out.cache.dcp = spec.dcp;
  out.cache.max_in_flight_tokens = spec.in_flight_tokens;
  out.capacity = Capacity(*plan, spec.pools);
  out.description = Describe(*plan, spec.draft_rewind);
  out.layout = model.layout;
  for (const GroupPlan& group : plan->groups) {
    out.cache.groups.push_back(CacheGroup(group, *plan, model, spec));
    out.page_bytes.push_back(group.data_bytes);
  }
  if (spec.pools == PoolLayout::kRebalanced) {
    out.cache.pool_slot_bytes.assign(out.page_bytes.begin(),
                                     out.page_bytes.end());
  }
  if (Result<void> ok = out.cache.Validate(); !ok) {
    return tl::unexpected(ok.error());
  }
  return out;
}

Result<CacheConfig> ResolveCacheConfig(const DeploymentSpec& spec) {
  Result<ResolvedDeployment> resolved = ResolveDeployment(spec);
  if (!resolved) return tl::unexpected(resolved.error());
  return std::move(resolved->cache);
}

}  // namespace hkv
