// Property tests of the capacity planner on random models, geometries and
// budgets: per-group pools never hold fewer tokens than the shared pool,
// capacity never shrinks when the budget grows, and both layouts fit the
// budget.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "hkv/model.h"
#include "hkv/planner.h"

namespace hkv {
namespace {

template <typename T>
T OneOf(std::initializer_list<T> values) {
  return *rc::gen::elementOf(std::vector<T>(values));
}

std::uint32_t PowerOfTwo(std::uint32_t min_log, std::uint32_t max_log) {
  return 1u << *rc::gen::inRange(min_log, max_log + 1);
}

// One set of attention facts; the coupled layout needs one page size.
LayerSpec GenAttention(LayerKind kind) {
  LayerSpec l{.kind = kind,
              .num_kv_heads = PowerOfTwo(0, 3),
              .head_size = PowerOfTwo(6, 8),
              .dtype_bytes = OneOf<std::uint32_t>({1, 2})};
  l.head_size_v = l.head_size;
  if (kind == LayerKind::kMla) {
    l = {.kind = kind,
         .record_bytes_per_token = *rc::gen::inRange<std::uint64_t>(1, 1200),
         .tail_bytes_per_token = *rc::gen::inRange<std::uint64_t>(0, 64),
         .record_alignment = OneOf<std::uint64_t>({0, 512, 8448})};
  }
  return l;
}

LayerSpec GenLayer(const LayerSpec& attention, std::uint32_t tp) {
  LayerSpec l = attention;
  const int choice = *rc::gen::inRange(0, 4);
  if (choice == 0) {
    l = {.kind = LayerKind::kRecurrent,
         .state_bytes = tp * *rc::gen::inRange<std::uint64_t>(1, 2'000'000)};
  } else if (choice == 1 && l.kind != LayerKind::kMla) {
    l.kind = LayerKind::kSlidingWindow;
    l.window = *rc::gen::inRange<std::uint32_t>(1, 8192);
  } else if (choice == 2 && l.kind != LayerKind::kMla) {
    l.kind = LayerKind::kChunkedLocal;
    l.chunk = *rc::gen::inRange<std::uint32_t>(1, 8192);
  }
  l.count = *rc::gen::inRange<std::uint32_t>(1, 40);
  return l;
}

ModelSpec GenModel(std::uint32_t tp) {
  ModelSpec m{.name = "random",
              .draft = {.speculative_tokens = *rc::gen::inRange(0u, 8u)},
              .layout = OneOf({Layout::kCoupled, Layout::kSplit})};
  const LayerSpec attention =
      GenAttention(m.layout == Layout::kSplit && *rc::gen::arbitrary<bool>()
                       ? LayerKind::kMla
                       : LayerKind::kFullAttention);
  const auto buckets = *rc::gen::inRange(1, 4);
  for (int i = 0; i < buckets; ++i) m.layers.push_back(GenLayer(attention, tp));
  if (m.layout == Layout::kSplit) {
    m.stride_alignment = OneOf<std::uint64_t>({0, 8448});
  }
  return m;
}

struct Setup {
  ModelSpec model = {};
  Geometry geometry = {};
  PlanOptions options = {};
  Plan plan = {};
};

// A random model and geometry, with a budget that fits at least one request.
Setup GenSetup() {
  const std::uint32_t tp = PowerOfTwo(0, 2);
  Setup s{.model = GenModel(tp)};
  const std::uint32_t target = PowerOfTwo(4, 13);
  s.geometry = {target,
                s.model.layout == Layout::kCoupled ? target : PowerOfTwo(4, 13),
                0};  // the gcd of the blocks always divides them
  s.options = {.tp = tp,
               .dcp = PowerOfTwo(0, 2),
               .budget_bytes = (std::uint64_t{1} << 51) - 1,
               .context_tokens = *rc::gen::inRange<std::uint64_t>(1, 300'000)};
  Result<Plan> unbounded = PlanCapacity(s.model, s.geometry, s.options);
  RC_PRE(unbounded.has_value());
  // Room for 1 .. 5 requests and the null block, and part of a stride.
  const std::uint64_t stride = unbounded->stride_bytes;
  const std::uint64_t per_request = unbounded->shared.blocks_per_request;
  const auto requests = *rc::gen::inRange<std::uint64_t>(1, 6);
  s.options.budget_bytes = stride * (requests * per_request + 1) +
                           *rc::gen::inRange<std::uint64_t>(0, stride);
  RC_PRE(s.options.budget_bytes < (std::uint64_t{1} << 52));
  Result<Plan> plan = PlanCapacity(s.model, s.geometry, s.options);
  RC_ASSERT(plan.has_value());
  s.plan = *plan;
  return s;
}

RC_GTEST_PROP(PlannerPropertyTest, PerGroupPoolsHoldAtLeastTheSharedPool, ()) {
  const Setup s = GenSetup();
  RC_ASSERT(s.plan.shared.concurrency >= 1u);
  RC_ASSERT(s.plan.per_group.concurrency >= s.plan.shared.concurrency);
  RC_ASSERT(s.plan.per_group.tokens >= s.plan.shared.tokens);
}

RC_GTEST_PROP(PlannerPropertyTest, BothLayoutsFitTheBudget, ()) {
  const Setup s = GenSetup();
  const Plan& p = s.plan;
  RC_ASSERT(p.shared.blocks * p.stride_bytes <= s.options.budget_bytes);
  std::uint64_t pool_bytes = p.null_bytes;
  for (const GroupPlan& g : p.groups) {
    RC_ASSERT(g.slot_bytes <= p.stride_bytes);
    RC_ASSERT(g.data_bytes <= g.pool_page_bytes);
    RC_ASSERT(g.pool_page_bytes <= g.slot_bytes);
    RC_ASSERT(g.waste_bytes == p.stride_bytes - g.data_bytes);
    RC_ASSERT(g.pool_blocks >= p.per_group.concurrency * g.blocks_per_request);
    pool_bytes += g.pool_blocks * g.pool_page_bytes;
  }
  RC_ASSERT(pool_bytes <= s.options.budget_bytes);
}

RC_GTEST_PROP(PlannerPropertyTest, CapacityGrowsWithTheBudget, ()) {
  const Setup s = GenSetup();
  PlanOptions more = s.options;
  more.budget_bytes +=
      *rc::gen::inRange<std::uint64_t>(0, s.options.budget_bytes);
  RC_PRE(more.budget_bytes < (std::uint64_t{1} << 52));
  Result<Plan> bigger = PlanCapacity(s.model, s.geometry, more);
  RC_ASSERT(bigger.has_value());
  RC_ASSERT(bigger->stride_bytes == s.plan.stride_bytes);
  RC_ASSERT(bigger->shared.blocks >= s.plan.shared.blocks);
  RC_ASSERT(bigger->shared.tokens >= s.plan.shared.tokens);
  RC_ASSERT(bigger->per_group.tokens >= s.plan.per_group.tokens);
}

}  // namespace
}  // namespace hkv
