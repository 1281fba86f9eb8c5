#include "hkv/planner.h"

#include <algorithm>
#include <charconv>
#include <numeric>

#include "check.h"
#include "geometry/arith.h"
#include "geometry/buckets.h"
#include "geometry/grouping.h"
#include "hkv/geometry.h"
#include "hkv/limits.h"
#include "text.h"

namespace hkv {
namespace {

using internal::Bucket;
using internal::Cat;
using internal::GroupingResult;
using internal::GroupLayers;
using internal::MulDiv;
using internal::SaturatingAdd;
using internal::SaturatingMul;

// The scheduler block, hash unit and alignment of spec §5.2 and §4.5.
struct HitRules {
  std::uint32_t scheduler_block = 0;
  std::uint32_t hit_unit = 0;
  bool partial_hits = false;
};

// A group whose lookup can stop inside its blocks (spec §4.5 item 3).
bool FineCapable(LayerKind kind) { return kind != LayerKind::kChunkedLocal; }

Result<HitRules> ResolveHits(const std::vector<Bucket>& buckets,
                             const std::vector<GroupLayers>& groups,
                             const Geometry& geometry, std::uint32_t dcp) {
  const std::uint32_t unit = geometry.hash_unit;
  if (groups.size() == 1) {
    const std::uint32_t block = buckets[groups[0].bucket].block_tokens;
    if (unit != block) {
      return Fail(ErrorCode::kInvalidArgument,
                  Cat("one cache group: the hash unit must be its block ",
                      block, ", not ", unit));
    }
    return HitRules{block, block, false};
  }
  std::uint64_t scheduler_block = 1;
  bool recurrent = false;
  bool coarser = false;
  bool fine_capable = true;
  for (const Bucket& b : buckets) {
    if (b.block_tokens % unit != 0) {
      return Fail(
          ErrorCode::kInvalidArgument,
          Cat("hash unit ", unit, " does not divide the ",
              LayerKindName(b.kind), " block of ", b.block_tokens, " tokens"));
    }
    // Blocks are below 2^32 tokens, so one step's lcm fits 64 bits.
    scheduler_block = std::lcm(scheduler_block, std::uint64_t{b.block_tokens});
    if (scheduler_block > 0xffffffffu) {
      return Fail(ErrorCode::kInvalidArgument,
                  Cat("the groups' blocks have a least common multiple (the "
                      "scheduler block) above 2^32 - 1 tokens"));
    }
    if (b.kind == LayerKind::kRecurrent) {
      recurrent = true;
      coarser |= dcp == 1 ? b.block_tokens > unit : b.block_tokens >= unit;
    } else {
      coarser |= b.block_tokens > unit;
    }
    fine_capable &= b.block_tokens == unit || FineCapable(b.kind);
  }
  HitRules rules{.scheduler_block =
                     static_cast<std::uint32_t>(scheduler_block)};
  rules.partial_hits = recurrent && coarser && fine_capable;
  rules.hit_unit = rules.partial_hits ? unit : rules.scheduler_block;
  return rules;
}

std::vector<GroupPlan> GroupPlans(const std::vector<Bucket>& buckets,
                                  const internal::Grouping& grouping) {
  std::vector<GroupPlan> plans;
  for (const GroupLayers& g : grouping.groups) {
    const Bucket& b = buckets[g.bucket];
    const std::uint64_t data = SaturatingMul(g.layers, b.data);
    plans.push_back(
        {.kind = b.kind,
         .draft = b.draft,
         .num_layers = g.layers,
         .block_tokens = b.block_tokens,
         .slot_bytes = SaturatingMul(g.layers, b.slot_page),
         .data_bytes = data,
         .waste_bytes = grouping.stride - std::min(grouping.stride, data),
         .blocks_per_request = b.blocks_per_request,
         .pool_page_bytes = SaturatingMul(g.layers, b.pool_page)});
  }
  return plans;
}

// The shared pool (spec §5.4, §5.5, §5.7). Figures that saturated exceed
// every budget, so they end here as infeasible.
Result<void> FillShared(const ModelSpec& model, const PlanOptions& options,
                        Plan& plan) {
  const std::uint64_t stride = plan.stride_bytes;
  HKV_DCHECK(stride > 0);  // validated models have no empty pages
  const std::uint64_t blocks = options.budget_bytes / stride;
  if (blocks < 2) {
    const bool aligned =
        model.layout == Layout::kSplit && model.stride_alignment > 0;
    return Fail(ErrorCode::kInfeasible,
                Cat("the budget of ", options.budget_bytes, " B holds ", blocks,
                    " block(s) of ", stride, " B (the stride",
                    aligned ? Cat(", rounded up to stride_alignment ",
                                  model.stride_alignment)
                            : std::string(),
                    ") and one is the null block: no room for a request"));
  }
  const std::uint64_t per_request = plan.shared.blocks_per_request;
  if (plan.cost_bytes > options.budget_bytes - stride) {
    return Fail(
        ErrorCode::kInfeasible,
        Cat("one request of ", options.context_tokens, " tokens needs ",
            per_request, " blocks x ", stride, " B = ", plan.cost_bytes,
            " B, more than the budget of ", options.budget_bytes,
            " B less the null block (", options.budget_bytes - stride,
            " B): plan for shorter requests (--context) or a larger budget"));
  }
  std::uint64_t wasted = 0;  // per request, bytes
  for (const GroupPlan& g : plan.groups) {
    wasted = SaturatingAdd(wasted,
                           SaturatingMul(g.blocks_per_request, g.waste_bytes));
  }
  plan.shared.blocks = blocks;
  plan.shared.concurrency = (blocks - 1) / per_request;
  plan.shared.tokens =
      SaturatingMul(plan.shared.concurrency, options.context_tokens);
  plan.shared.waste =
      static_cast<double>(wasted) / static_cast<double>(plan.cost_bytes);
  plan.reference_tokens = MulDiv(blocks, options.context_tokens, per_request);
  return {};
}

// Per-group pools: one null page of the largest page, the rest split in
// proportion to each group's bytes per request.
void FillPerGroup(const PlanOptions& options, Plan& plan) {
  std::uint64_t need = 0;  // bytes per request
  std::uint64_t data = 0;
  for (const GroupPlan& g : plan.groups) {
    need = SaturatingAdd(
        need, SaturatingMul(g.blocks_per_request, g.pool_page_bytes));
    data =
        SaturatingAdd(data, SaturatingMul(g.blocks_per_request, g.data_bytes));
    plan.null_bytes = std::max(plan.null_bytes, g.pool_page_bytes);
  }
  const std::uint64_t available = options.budget_bytes - plan.null_bytes;
  for (GroupPlan& g : plan.groups) {
    g.pool_blocks = MulDiv(available, g.blocks_per_request, need);
    plan.per_group.blocks += g.pool_blocks;
  }
  plan.per_group.blocks_per_request = plan.shared.blocks_per_request;
  plan.per_group.concurrency = available / need;
  plan.per_group.tokens =
      SaturatingMul(plan.per_group.concurrency, options.context_tokens);
  plan.per_group.waste =
      static_cast<double>(need - data) / static_cast<double>(need);
}

std::vector<std::uint32_t> LayerCounts(const internal::Grouping& grouping) {
  std::vector<std::uint32_t> counts;
  for (const GroupLayers& g : grouping.groups) counts.push_back(g.layers);
  return counts;
}

}  // namespace

Result<Geometry> ParseGeometry(std::string_view text) {
  std::uint32_t values[3] = {};
  std::string_view rest = text;
  for (std::uint32_t& value : values) {
    const std::size_t slash = rest.find('/');
    const bool last = &value == &values[2];
    const std::string_view part = last ? rest : rest.substr(0, slash);
    const auto [end, ec] =
        std::from_chars(part.data(), part.data() + part.size(), value);
    if ((!last && slash == std::string_view::npos) || part.empty() ||
        ec != std::errc() || end != part.data() + part.size() || value == 0) {
      return Fail(ErrorCode::kInvalidArgument,
                  Cat("bad geometry \"", text,
                      "\": want T/R/U (target block/recurrent block/hash "
                      "unit, positive tokens)"));
    }
    if (!last) rest = rest.substr(slash + 1);
  }
  return Geometry{values[0], values[1], values[2]};
}

Result<void> Geometry::Validate() const {
  if (target_block == 0 || recurrent_block == 0) {
    return Fail(ErrorCode::kInvalidArgument,
                Cat("blocks must be positive (got ", target_block, "/",
                    recurrent_block, "/", hash_unit, ")"));
  }
  return {};
}

Result<void> PlanOptions::Validate() const {
  if (tp == 0 || dcp == 0 || budget_bytes == 0 || context_tokens == 0 ||
      max_batched_tokens == 0) {
    return Fail(ErrorCode::kInvalidArgument,
                "tp, dcp, budget, context and batched tokens must be "
                "positive");
  }
  if (context_tokens > kMaxTokensPerRequest) {
    return Fail(ErrorCode::kInvalidArgument,
                Cat("context ", context_tokens, " tokens exceeds the limit of ",
                    kMaxTokensPerRequest, " tokens per request"));
  }
  if (budget_bytes >= (std::uint64_t{1} << 52)) {
    return Fail(ErrorCode::kInvalidArgument,
                Cat("budget ", budget_bytes, " B out of range (below 2^52)"));
  }
  return {};
}

Result<Plan> PlanCapacity(const ModelSpec& model, const Geometry& geometry,
                          const PlanOptions& options) {
  if (Result<void> ok = model.Validate(); !ok)
    return tl::unexpected(ok.error());
  if (Result<void> ok = options.Validate(); !ok) {
    return tl::unexpected(ok.error());
  }
  if (Result<void> ok = geometry.Validate(); !ok) {
    return tl::unexpected(ok.error());
  }
  Result<std::vector<internal::RankLayer>> layers =
      internal::RankLayers(model, options);
  if (!layers) return tl::unexpected(layers.error());
  Plan plan;
  Result<Geometry> resolved =
      internal::ResolveGeometry(model, *layers, geometry, options);
  if (!resolved) return tl::unexpected(resolved.error());
  plan.geometry = *resolved;
  const std::vector<Bucket> buckets =
      internal::MakeBuckets(model, *layers, plan.geometry, options);
  Result<GroupingResult> grouping = internal::GroupBuckets(model, buckets);
  if (!grouping) return tl::unexpected(grouping.error());
  Result<HitRules> hits =
      ResolveHits(buckets, grouping->chosen.groups, plan.geometry, options.dcp);
  if (!hits) return tl::unexpected(hits.error());
  plan.scheduler_block = hits->scheduler_block;
  plan.hit_unit = hits->hit_unit;
  plan.partial_hits = hits->partial_hits;
  plan.groups = GroupPlans(buckets, grouping->chosen);
  plan.stride_bytes = grouping->chosen.stride;
  plan.cost_bytes = grouping->chosen.cost;
  plan.baseline_layer_counts = LayerCounts(grouping->baseline);
  plan.baseline_stride_bytes = grouping->baseline.stride;
  plan.baseline_cost_bytes = grouping->baseline.cost;
  plan.shared.blocks_per_request = grouping->chosen.blocks_per_request;
  if (Result<void> ok = FillShared(model, options, plan); !ok) {
    return tl::unexpected(ok.error());
  }
  FillPerGroup(options, plan);
  return plan;
}

Result<Geometry> AutoGeometry(const ModelSpec& model,
                              const PlanOptions& options) {
  if (model.layout == Layout::kCoupled) {
    return Geometry{model.kernel_block, model.kernel_block, 0};
  }
  Result<std::uint32_t> block =
      AutoBlock({.dcp = options.dcp,
                 .retention_interval = options.retention_interval,
                 .max_num_scheduled_tokens = options.max_scheduled_tokens,
                 .max_num_batched_tokens = options.max_batched_tokens});
  if (!block) return tl::unexpected(block.error());
  return Geometry{*block, *block, 0};
}

}  // namespace hkv
