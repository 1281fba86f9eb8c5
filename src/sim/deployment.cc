#include "hkv/deployment.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "hkv/planner.h"

namespace hkv {
namespace {

// A planned group as a cache group.
GroupSpec CacheGroup(const GroupPlan& group, const Plan& plan,
                     const ModelSpec& model, std::uint32_t speculative_tokens) {
  GroupSpec spec{
      .block_size = plan.geometry.target_block,
      .speculation = group.draft ? Speculation::kEagle : Speculation::kNone};
  const auto layer =
      std::find_if(model.layers.begin(), model.layers.end(),
                   [&](const LayerSpec& l) { return l.kind == group.kind; });
  switch (group.kind) {
    case LayerKind::kFullAttention:
    case LayerKind::kMla:
      break;
    case LayerKind::kSlidingWindow:
      spec.kind = GroupKind::kSlidingWindow;
      spec.sliding_window = layer != model.layers.end() ? layer->window : 0;
      spec.dcp_layout = DcpLayout::kReplicated;
      break;
    case LayerKind::kChunkedLocal:
      spec.kind = GroupKind::kChunkedLocal;
      spec.chunk_size = layer != model.layers.end() ? layer->chunk : 0;
      spec.dcp_layout = DcpLayout::kReplicated;
      break;
    case LayerKind::kRecurrent:
      spec.kind = GroupKind::kRecurrent;
      spec.block_size = plan.geometry.recurrent_block;
      spec.speculative_blocks = speculative_tokens;
      break;
  }
  return spec;
}

Result<void> BadGeometry(std::string_view text) {
  return Fail(ErrorCode::kInvalidArgument,
              "page geometry \"" + std::string(text) +
                  "\" is not target/recurrent/unit, e.g. 2048/256/256");
}

}  // namespace

Result<void> ParsePageGeometry(std::string_view text, DeploymentSpec& spec) {
  const Result<Geometry> geometry = ParseGeometry(text);
  if (!geometry) return BadGeometry(text);
  spec.target_block = geometry->target_block;
  spec.recurrent_block = geometry->recurrent_block;
  spec.hash_unit = geometry->hash_unit;
  return {};
}

Result<CacheConfig> ResolveCacheConfig(const DeploymentSpec& spec) {
  Result<ModelSpec> model = LoadPreset(spec.model);
  if (!model) return tl::unexpected(model.error());
  Result<Plan> plan =
      PlanCapacity(*model,
                   {.target_block = spec.target_block,
                    .recurrent_block = spec.recurrent_block,
                    .hash_unit = spec.hash_unit},
                   {.tp = spec.tp,
                    .dcp = spec.dcp,
                    .budget_bytes = spec.budget_bytes,
                    .context_tokens = spec.context_tokens,
                    .speculative_tokens = spec.speculative_tokens});
  if (!plan) return tl::unexpected(plan.error());
  if (plan->shared.blocks > std::numeric_limits<std::uint32_t>::max()) {
    return Fail(ErrorCode::kInvalidArgument,
                "the plan's " + std::to_string(plan->shared.blocks) +
                    " blocks exceed 2^32 - 1");
  }
  CacheConfig config{
      .num_blocks = static_cast<std::uint32_t>(plan->shared.blocks),
      .keys = {.function = KeyFunction::kXxh3_128Cbor,
               .hash_unit = plan->geometry.hash_unit},
      .dcp = spec.dcp};
  for (const GroupPlan& group : plan->groups) {
    config.groups.push_back(CacheGroup(
        group, *plan, *model,
        spec.speculative_tokens.value_or(model->draft.speculative_tokens)));
  }
  if (Result<void> ok = config.Validate(); !ok) {
    return tl::unexpected(ok.error());
  }
  return config;
}

}  // namespace hkv
