// Spec §5 capacity vectors (V-93 ... V-96), the worked TP2 example of §5.5
// and the coupled rule's inflated attention blocks recorded in models.json,
// reproduced from the model presets.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hkv/geometry.h"
#include "hkv/model.h"
#include "hkv/planner.h"

namespace hkv {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

ModelSpec Preset(std::string_view name) {
  Result<ModelSpec> model = LoadPreset(name);
  EXPECT_TRUE(model) << model.error().message;
  return *model;
}

// The worked TP2 example's deployment (spec §5.5): glm53-flash-like with a
// DFlash2 draft of 7 speculative tokens whose own cache layers the
// deployment log does not count (the preset's draft is the GB10
// deployment's: 5 tokens and a sliding-window draft group).
ModelSpec WorkedExampleModel() {
  ModelSpec model = Preset("glm53-flash-like");
  model.draft = {.speculative_tokens = 7};
  return model;
}

std::vector<std::uint32_t> LayerCounts(const Plan& plan) {
  std::vector<std::uint32_t> counts;
  for (const GroupPlan& g : plan.groups) counts.push_back(g.num_layers);
  return counts;
}

// One layer's bytes per block of the first group of `kind`.
std::uint64_t LayerSlot(const Plan& plan, LayerKind kind) {
  for (const GroupPlan& g : plan.groups) {
    if (g.kind == kind) return g.slot_bytes / g.num_layers;
  }
  ADD_FAILURE() << "no group of kind " << LayerKindName(kind);
  return 0;
}

std::uint64_t LayerData(const Plan& plan, LayerKind kind) {
  for (const GroupPlan& g : plan.groups) {
    if (g.kind == kind) return g.data_bytes / g.num_layers;
  }
  ADD_FAILURE() << "no group of kind " << LayerKindName(kind);
  return 0;
}

TEST(SpecPlanner, V93GlmMlaPageFp8) {
  const auto page = [](std::uint32_t block) {
    return MlaPageBytes({.block = block,
                         .record_bytes_per_token = 528,
                         .tail_bytes_per_token = 33});
  };
  EXPECT_EQ(page(64), 35'904u);
  EXPECT_EQ(page(256), 143'616u);
  EXPECT_EQ(page(2048), 1'148'928u);
  // The preset's MLA layers have the same page.
  Result<Plan> plan = PlanCapacity(
      Preset("glm53-flash-like"), {256, 256, 256},
      {.tp = 4, .budget_bytes = 33 * kGiB, .context_tokens = 262'144});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(LayerSlot(*plan, LayerKind::kMla), 143'616u);
}

TEST(SpecPlanner, V94SplitAutoGeometry) {
  const auto block = [](AutoBlockInput in) { return AutoBlock(in).value(); };
  EXPECT_EQ(block({.dcp = 4, .retention_interval = 4096}), 1024u);
  EXPECT_EQ(block({.dcp = 1, .max_num_batched_tokens = 4096}), 4096u);
  EXPECT_EQ(block({.dcp = 2, .max_num_batched_tokens = 4096}), 2048u);
  EXPECT_EQ(block({.dcp = 4, .max_num_batched_tokens = 4096}), 1024u);
  EXPECT_EQ(block({.dcp = 8, .max_num_batched_tokens = 4096}), 512u);
  EXPECT_EQ(
      block(
          {.dcp = 4, .retention_interval = 0, .max_num_batched_tokens = 4096}),
      1024u);
  EXPECT_EQ(block({.dcp = 4,
                   .retention_interval = 0,
                   .max_num_scheduled_tokens = 4096,
                   .max_num_batched_tokens = 4352}),
            1024u);
  Result<std::uint32_t> odd = AutoBlock({.dcp = 4, .retention_interval = 4097});
  ASSERT_FALSE(odd);
  EXPECT_EQ(odd.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(odd.error().message, HasSubstr("4097"));
}

TEST(SpecPlanner, V94AutoGeometryOfThePreset) {
  const ModelSpec glm = Preset("glm53-flash-like");
  const PlanOptions options{.tp = 4,
                            .dcp = 4,
                            .budget_bytes = 33 * kGiB,
                            .context_tokens = 262'144,
                            .retention_interval = 4096};
  Result<Geometry> geometry = AutoGeometry(glm, options);
  ASSERT_TRUE(geometry) << geometry.error().message;
  EXPECT_EQ(*geometry, (Geometry{1024, 1024, 0}));
  Result<Plan> plan = PlanCapacity(glm, *geometry, options);
  ASSERT_TRUE(plan) << plan.error().message;
  // The unit is the gcd of the MLA block (1024 x dcp 4) and the state's.
  EXPECT_EQ(plan->geometry, (Geometry{1024, 1024, 1024}));
  EXPECT_EQ(plan->scheduler_block, 4096u);
}

// A GLM-5.3-like NVFP4 model: MLA record 304 B/token padded to 8448 B per
// page plus a 33 B/token tail, and a recurrent state of 1,085,440 B.
ModelSpec CoupledNvfp4() {
  return {.name = "glm53-nvfp4-coupled",
          .layers = {{.kind = LayerKind::kRecurrent,
                      .count = 34,
                      .state_bytes = 1'085'440},
                     {.kind = LayerKind::kMla,
                      .count = 11,
                      .record_bytes_per_token = 304,
                      .tail_bytes_per_token = 33,
                      .record_alignment = 8448}}};
}

TEST(SpecPlanner, V95CoupledNvfp4InflatesTheBlock) {
  EXPECT_EQ(CoupledAttentionBlock({.block = 256,
                                   .state_bytes = 1'085'440,
                                   .attention_bytes_per_token = 304 + 33}),
            3328u);
  EXPECT_EQ(MlaPageBytes({.block = 3328,
                          .record_bytes_per_token = 304,
                          .tail_bytes_per_token = 33,
                          .record_alignment = 8448}),
            1'123'584u);
  Result<Plan> plan = PlanCapacity(
      CoupledNvfp4(), {256, 256, 256},
      {.dcp = 4, .budget_bytes = 64 * kGiB, .context_tokens = 262'144});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->geometry.target_block, 3328u);
  EXPECT_EQ(plan->geometry.recurrent_block, 3328u);  // mamba_block_size
  // mamba_page_size_padded: the state padded to the MLA page.
  EXPECT_EQ(LayerSlot(*plan, LayerKind::kRecurrent), 1'123'584u);
  EXPECT_EQ(LayerSlot(*plan, LayerKind::kMla), 1'123'584u);
  EXPECT_EQ(plan->scheduler_block, 3328u * 4);
}

TEST(SpecPlanner, V96RebalancingCost) {
  // The TP2 figures of §5.5 with the state given as bytes per layer.
  ModelSpec model{.name = "glm53-tp2-by-bytes",
                  .layers = {{.kind = LayerKind::kRecurrent,
                              .count = 34,
                              .state_bytes = 2 * 2'342'912},
                             {.kind = LayerKind::kMla,
                              .count = 11,
                              .record_bytes_per_token = 528,
                              .tail_bytes_per_token = 33}},
                  .draft = {.speculative_tokens = 7},
                  .layout = Layout::kSplit,
                  .stride_alignment = 8448};
  Result<Plan> plan = PlanCapacity(
      model, {2048, 256, 256},
      {.tp = 2, .budget_bytes = 64 * kGiB, .context_tokens = 262'144});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_THAT(plan->baseline_layer_counts, ElementsAre(9, 9, 8, 8, 11));
  EXPECT_EQ(plan->baseline_cost_bytes, 3'542'482'944u);
  EXPECT_THAT(LayerCounts(*plan), ElementsAre(5, 5, 5, 5, 5, 5, 4, 11));
  EXPECT_EQ(plan->cost_bytes, 2'502'365'184u);
  const double change = static_cast<double>(plan->cost_bytes) /
                            static_cast<double>(plan->baseline_cost_bytes) -
                        1.0;
  EXPECT_NEAR(change, -0.294, 0.0005);
}

// §5.5 worked example, from the glm53-flash-like preset: split 2048/256,
// TP2, 262,144 tokens, DFlash2 draft (7 speculative tokens), DCP1.
TEST(SpecPlanner, WorkedTp2ExampleFromThePreset) {
  Result<Plan> plan = PlanCapacity(
      WorkedExampleModel(), {2048, 256, 256},
      {.tp = 2, .budget_bytes = 64 * kGiB, .context_tokens = 262'144});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(LayerSlot(*plan, LayerKind::kMla), 1'148'928u);
  EXPECT_EQ(LayerSlot(*plan, LayerKind::kRecurrent), 2'342'912u);
  EXPECT_THAT(plan->baseline_layer_counts, ElementsAre(9, 9, 8, 8, 11));
  EXPECT_EQ(plan->baseline_stride_bytes, 21'086'208u);
  EXPECT_EQ(plan->baseline_stride_bytes % 8448, 0u);
  EXPECT_EQ(plan->baseline_cost_bytes, 3'542'482'944u);  // 168 blocks
  EXPECT_THAT(LayerCounts(*plan), ElementsAre(5, 5, 5, 5, 5, 5, 4, 11));
  EXPECT_EQ(plan->stride_bytes, 12'638'208u);
  EXPECT_EQ(plan->shared.blocks_per_request, 198u);  // 128 + 7 x 10
  EXPECT_EQ(plan->cost_bytes, 2'502'365'184u);
  for (const GroupPlan& g : plan->groups) {
    EXPECT_EQ(g.blocks_per_request,
              g.kind == LayerKind::kMla ? 128u : 2u + 7u + 1u);
  }
}

// The MTP-3 layout (3 speculative tokens) of the same state: 2,244,608 B.
TEST(SpecPlanner, GlmStateFollowsTheSpeculativeTokens) {
  Result<Plan> plan = PlanCapacity(WorkedExampleModel(), {2048, 256, 256},
                                   {.tp = 2,
                                    .budget_bytes = 64 * kGiB,
                                    .context_tokens = 262'144,
                                    .speculative_tokens = 3});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(LayerSlot(*plan, LayerKind::kRecurrent), 2'244'608u);
}

// §5.2's PR geometry: 2048/256/256 with DCP4 and the MLA target sharded.
TEST(SpecPlanner, PrGeometryWithDcp4) {
  Result<Plan> plan = PlanCapacity(Preset("glm53-flash-like"), {2048, 256, 256},
                                   {.tp = 4,
                                    .dcp = 4,
                                    .budget_bytes = 33 * kGiB,
                                    .context_tokens = 262'144});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->scheduler_block, 8192u);
  EXPECT_TRUE(plan->partial_hits);
  EXPECT_EQ(plan->hit_unit, 256u);
}

struct Inflated {
  const char* preset;
  std::uint32_t tp;
  std::uint32_t block;
  std::uint64_t state_bytes;
  std::uint64_t padded_bytes;
};

// models.json "vllm_hybrid_block_example_*": the coupled rule from the
// 16-token kernel block.
TEST(SpecPlanner, CoupledRuleInflatesTheAttentionBlocksOfThePresets) {
  const Inflated cases[] = {
      {"qwen3-next-80b-a3b", 1, 544, 1'097'728, 1'114'112},
      {"qwen3-next-80b-a3b-fp32-state", 1, 1056, 2'146'304, 2'162'688},
      {"kimi-linear-48b-a3b", 2, 944, 1'085'440, 1'087'488},
      {"qwen3.5-27b", 1, 784, 3'207'168, 3'211'264},
      {"qwen3.5-397b-a17b", 1, 2096, 4'268'032, 4'292'608},
      {"nemotron-h-56b", 1, 2080, 8'511'488, 8'519'680},
  };
  for (const Inflated& c : cases) {
    SCOPED_TRACE(c.preset);
    const ModelSpec model = Preset(c.preset);
    const PlanOptions options{
        .tp = c.tp, .budget_bytes = 80 * kGiB, .context_tokens = 131'072};
    Result<Plan> plan =
        PlanCapacity(model, AutoGeometry(model, options).value(), options);
    ASSERT_TRUE(plan) << plan.error().message;
    EXPECT_EQ(plan->geometry, (Geometry{c.block, c.block, c.block}));
    EXPECT_EQ(LayerData(*plan, LayerKind::kRecurrent), c.state_bytes);
    EXPECT_EQ(LayerSlot(*plan, LayerKind::kRecurrent), c.padded_bytes);
  }
}

}  // namespace
}  // namespace hkv
