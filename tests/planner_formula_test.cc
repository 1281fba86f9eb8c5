// The planner's formulas against hand-computed numbers: pages, TP division,
// blocks per request, grouping, the optimiser, hit rules, capacity of both
// layouts, byte sizes and model files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "hkv/geometry.h"
#include "hkv/limits.h"
#include "hkv/model.h"
#include "hkv/planner.h"

namespace hkv {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Qwen3-Next's Gated DeltaNet state: conv [3, 8192] bf16, SSM [32, 128, 128].
std::vector<StateTensor> GdnState() {
  return {{.shape = {3, 8192}, .tp_dim = 1, .speculative_rows = true},
          {.shape = {32, 128, 128}, .tp_dim = 0}};
}

TEST(PlannerFormulaTest, AttentionBytesAndHeadsPerRank) {
  EXPECT_EQ(AttentionBytesPerToken(2, 256, 256, 2), 2048u);
  EXPECT_EQ(AttentionBytesPerToken(8, 64, 64, 1), 1024u);
  EXPECT_EQ(KvHeadsPerRank(8, 2).value(), 4u);
  EXPECT_EQ(KvHeadsPerRank(2, 4).value(), 1u);  // replicated
  EXPECT_FALSE(KvHeadsPerRank(3, 2));
  EXPECT_FALSE(KvHeadsPerRank(2, 3));
}

TEST(PlannerFormulaTest, MlaPadsTheRecordOnly) {
  // 64 x 304 = 19,456 -> 25,344; + 64 x 33 = 2,112 (spec §5.1 NVFP4).
  EXPECT_EQ(MlaPageBytes({.block = 64,
                          .record_bytes_per_token = 304,
                          .tail_bytes_per_token = 33,
                          .record_alignment = 8448}),
            27'456u);
  EXPECT_EQ(RoundUp(19'456, 8448), 25'344u);
  EXPECT_EQ(RoundUp(7, 0), 7u);
}

TEST(PlannerFormulaTest, StateBytesDivideByTpAndGrowWithSpeculation) {
  EXPECT_EQ(StateBytes(GdnState(), 1, 0).value(), 49'152u + 1'048'576u);
  EXPECT_EQ(StateBytes(GdnState(), 2, 0).value(), 548'864u);
  // One conv row of 8192 bf16 per speculative token.
  EXPECT_EQ(StateBytes(GdnState(), 1, 1).value(), 1'097'728u + 16'384u);
  Result<std::uint64_t> bad = StateBytes(GdnState(), 3, 0);
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("TP 3"));
  EXPECT_FALSE(StateBytes({StateTensor{}}, 1, 0));
  Result<std::uint64_t> no_dim =
      StateBytes({StateTensor{.shape = {4, 4}, .tp_dim = 2}}, 2, 0);
  ASSERT_FALSE(no_dim);
  EXPECT_THAT(no_dim.error().message, HasSubstr("tp_dim 2"));
}

TEST(PlannerFormulaTest, CoupledBlockAlignsToTheLargerOfKernelAndBlock) {
  // models.json: Nemotron-3-Nano, fp8 KV, --block-size 32:
  // 32 x ceil(2,134,016 / (32 x 512)) = 4192.
  EXPECT_EQ(CoupledAttentionBlock({.block = 32,
                                   .state_bytes = 2'134'016,
                                   .attention_bytes_per_token = 512}),
            4192u);
  // A state that fits one aligned page keeps the block.
  EXPECT_EQ(CoupledAttentionBlock({.block = 2048,
                                   .state_bytes = 1'000,
                                   .attention_bytes_per_token = 561}),
            2048u);
  EXPECT_EQ(CoupledAttentionBlock(
                {.block = 8, .state_bytes = 0, .attention_bytes_per_token = 1}),
            16u);
}

TEST(PlannerFormulaTest, BlocksPerRequestPerKind) {
  const auto blocks = [](RequestBlocksInput in) {
    in.context_tokens = in.context_tokens ? in.context_tokens : 131'072;
    return BlocksPerRequest(in);
  };
  EXPECT_EQ(blocks({.kind = LayerKind::kMla, .block = 2048}), 64u);
  // ceil(ceil(1000 / 3) / 16) = ceil(334 / 16) = 21.
  EXPECT_EQ(blocks({.block = 16, .context_tokens = 1000, .dcp = 3}), 21u);
  // ceil((128 - 1 + 2 + 8192) / 16) + 1 = ceil(8321 / 16) + 1 = 521 + 1.
  EXPECT_EQ(blocks({.kind = LayerKind::kSlidingWindow,
                    .block = 16,
                    .window_or_chunk = 128,
                    .speculative_tokens = 2}),
            522u);
  EXPECT_EQ(blocks({.kind = LayerKind::kSlidingWindow,
                    .block = 16,
                    .context_tokens = 1000,
                    .window_or_chunk = 128}),
            63u + 1u);
  EXPECT_EQ(blocks({.kind = LayerKind::kChunkedLocal,
                    .block = 16,
                    .window_or_chunk = 8192}),
            1024u);
  EXPECT_EQ(blocks({.kind = LayerKind::kRecurrent,
                    .block = 256,
                    .speculative_tokens = 7,
                    .checkpoint_blocks = 1}),
            10u);
}

TEST(PlannerFormulaTest, RoundRobinAndUniformGrouping) {
  EXPECT_THAT(RoundRobinSizes(34, 4), ElementsAre(9, 9, 8, 8));
  EXPECT_THAT(RoundRobinSizes(34, 7), ElementsAre(5, 5, 5, 5, 5, 5, 4));
  EXPECT_THAT(UniformGroupCounts({34, 11}), ElementsAre(4, 1));
  EXPECT_THAT(UniformGroupCounts({52, 10}), ElementsAre(6, 1));
  // 13 < 1.5 x 12: groups of 13, one per bucket; 18 = 1.5 x 12 is not.
  EXPECT_THAT(UniformGroupCounts({12, 13}), ElementsAre(1, 1));
  EXPECT_THAT(UniformGroupCounts({12, 18}), ElementsAre(1, 2));
}

// A split-layout model small enough to plan by hand: 2 attention layers of
// 256 B/token (4096 B per 16-token page) and 4 states of 10,000 B.
ModelSpec SmallSplit() {
  return {.name = "small-split",
          .layers = {{.kind = LayerKind::kFullAttention,
                      .count = 2,
                      .num_kv_heads = 1,
                      .head_size = 64,
                      .head_size_v = 64},
                     {.kind = LayerKind::kRecurrent,
                      .count = 4,
                      .state_bytes = 10'000}},
          .layout = Layout::kSplit};
}

constexpr PlanOptions kSmall{.budget_bytes = 1'000'000, .context_tokens = 1024};

TEST(PlannerFormulaTest, OptimiserTradesGroupsForStride) {
  Result<Plan> plan = PlanCapacity(SmallSplit(), {16, 16, 16}, kSmall);
  ASSERT_TRUE(plan) << plan.error().message;
  // Baseline [2 | 2, 2]: stride 20,000, 64 + 2 x 3 blocks -> 1,400,000.
  EXPECT_THAT(plan->baseline_layer_counts, ElementsAre(2, 2, 2));
  EXPECT_EQ(plan->baseline_cost_bytes, 1'400'000u);
  // Best [2 | 1, 1, 1, 1]: stride 10,000, 64 + 4 x 3 = 76 -> 760,000.
  std::vector<std::uint32_t> counts;
  for (const GroupPlan& g : plan->groups) counts.push_back(g.num_layers);
  EXPECT_THAT(counts, ElementsAre(2, 1, 1, 1, 1));
  EXPECT_EQ(plan->stride_bytes, 10'000u);
  EXPECT_EQ(plan->cost_bytes, 760'000u);
}

TEST(PlannerFormulaTest, CapacityOfBothLayouts) {
  Result<Plan> plan = PlanCapacity(SmallSplit(), {16, 16, 16}, kSmall);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->shared.blocks, 100u);     // 1,000,000 / 10,000
  EXPECT_EQ(plan->shared.concurrency, 1u);  // (100 - 1) / 76
  EXPECT_EQ(plan->shared.tokens, 1024u);
  EXPECT_EQ(plan->reference_tokens, 1347u);  // 100 x 1024 / 76
  EXPECT_EQ(plan->groups[0].waste_bytes, 10'000u - 8192u);
  EXPECT_EQ(plan->groups[1].waste_bytes, 0u);
  EXPECT_DOUBLE_EQ(plan->shared.waste, 64.0 * 1808 / 760'000);
  // Per-group pools: 64 x 8192 + 12 x 10,000 = 644,288 B per request and a
  // null page of 10,000 B: 990,000 B split 64 : 3 : 3 : 3 : 3.
  EXPECT_EQ(plan->null_bytes, 10'000u);
  EXPECT_EQ(plan->per_group.concurrency, 1u);
  EXPECT_EQ(plan->groups[0].pool_blocks, 98u);  // 990,000 x 64 / 644,288
  EXPECT_EQ(plan->groups[1].pool_blocks, 4u);   // 990,000 x 3 / 644,288
  EXPECT_EQ(plan->per_group.blocks, 98u + 4 * 4u);
  EXPECT_DOUBLE_EQ(plan->per_group.waste, 0.0);
}

TEST(PlannerFormulaTest, HitRules) {
  // All blocks equal the unit: no partial hits; A = S.
  Result<Plan> same = PlanCapacity(SmallSplit(), {16, 16, 16}, kSmall);
  ASSERT_TRUE(same);
  EXPECT_FALSE(same->partial_hits);
  EXPECT_EQ(same->hit_unit, 16u);
  // A coarser attention block turns them on: S = 64, A = 16.
  Result<Plan> coarse = PlanCapacity(SmallSplit(), {64, 16, 16}, kSmall);
  ASSERT_TRUE(coarse) << coarse.error().message;
  EXPECT_TRUE(coarse->partial_hits);
  EXPECT_EQ(coarse->scheduler_block, 64u);
  EXPECT_EQ(coarse->hit_unit, 16u);
  // A chunked-local group (not fine-capable) above the unit vetoes them.
  ModelSpec chunked = SmallSplit();
  chunked.layers[0].kind = LayerKind::kChunkedLocal;
  chunked.layers[0].chunk = 512;
  Result<Plan> vetoed = PlanCapacity(chunked, {64, 16, 16}, kSmall);
  ASSERT_TRUE(vetoed) << vetoed.error().message;
  EXPECT_FALSE(vetoed->partial_hits);
  EXPECT_EQ(vetoed->hit_unit, 64u);
}

TEST(PlannerFormulaTest, DraftLayersAreGroupedApartAndAppended) {
  ModelSpec model = SmallSplit();
  model.draft = {.speculative_tokens = 2,
                 .layers = {{.kind = LayerKind::kSlidingWindow,
                             .count = 1,
                             .num_kv_heads = 1,
                             .head_size = 64,
                             .head_size_v = 64,
                             .window = 64}}};
  Result<Plan> plan =
      PlanCapacity(model, {16, 16, 16},
                   {.budget_bytes = 10'000'000, .context_tokens = 1024});
  ASSERT_TRUE(plan) << plan.error().message;
  const GroupPlan& last = plan->groups.back();
  EXPECT_TRUE(last.draft);
  EXPECT_EQ(last.kind, LayerKind::kSlidingWindow);
  // ceil(min(64 - 1 + 2 + 8192, 1024) / 16) + 1.
  EXPECT_EQ(last.blocks_per_request, 64u + 1u);
  // Recurrent groups hold 2 + 2 speculative + 1 checkpoint blocks.
  EXPECT_EQ(plan->groups[1].blocks_per_request, 5u);
}

TEST(PlannerFormulaTest, ImpossibleRequestsAreErrorsWithTheNumbers) {
  Result<Plan> tiny =
      PlanCapacity(SmallSplit(), {16, 16, 16},
                   {.budget_bytes = 15'000, .context_tokens = 1024});
  ASSERT_FALSE(tiny);
  EXPECT_EQ(tiny.error().code, ErrorCode::kInfeasible);
  EXPECT_THAT(tiny.error().message, HasSubstr("holds 1 block(s) of 10000 B"));
  Result<Plan> long_context =
      PlanCapacity(SmallSplit(), {16, 16, 16},
                   {.budget_bytes = 1'000'000, .context_tokens = 16'384});
  ASSERT_FALSE(long_context);
  EXPECT_EQ(long_context.error().code, ErrorCode::kInfeasible);
  EXPECT_THAT(long_context.error().message, HasSubstr("16384 tokens"));
  Result<Plan> unit = PlanCapacity(SmallSplit(), {64, 16, 48}, kSmall);
  ASSERT_FALSE(unit);
  EXPECT_EQ(unit.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(unit.error().message, HasSubstr("hash unit 48 does not divide"));
  Result<Plan> zero = PlanCapacity(SmallSplit(), {0, 16, 16}, kSmall);
  ASSERT_FALSE(zero);
  EXPECT_THAT(zero.error().message, HasSubstr("blocks must be positive"));
  ModelSpec coupled = SmallSplit();
  coupled.layout = Layout::kCoupled;
  Result<Plan> uncoupled = PlanCapacity(coupled, {64, 16, 16}, kSmall);
  ASSERT_FALSE(uncoupled);
  EXPECT_THAT(uncoupled.error().message, HasSubstr("give T/T/U"));
}

TEST(PlannerFormulaTest, OneGroupTakesOnlyItsBlockAsUnit) {
  ModelSpec model{.name = "one",
                  .layers = {{.count = 4,
                              .num_kv_heads = 8,
                              .head_size = 128,
                              .head_size_v = 128}}};
  const PlanOptions options{.budget_bytes = 64 << 20, .context_tokens = 1024};
  EXPECT_TRUE(PlanCapacity(model, {16, 16, 16}, options));
  Result<Plan> finer = PlanCapacity(model, {32, 32, 16}, options);
  ASSERT_FALSE(finer);
  EXPECT_THAT(finer.error().message, HasSubstr("block 32, not 16"));
}

TEST(PlannerFormulaTest, HugeFiguresSaturateInsteadOfWrapping) {
  // 2^51 one-byte states of 3 blocks each, times a 2^24 token context.
  const ModelSpec model{
      .name = "tiny-state",
      .layers = {{.kind = LayerKind::kRecurrent, .state_bytes = 1}}};
  Result<Plan> plan = PlanCapacity(model, {16, 16, 16},
                                   {.budget_bytes = std::uint64_t{1} << 51,
                                    .context_tokens = kMaxTokensPerRequest});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->shared.concurrency, ((std::uint64_t{1} << 51) - 1) / 3);
  EXPECT_EQ(plan->shared.tokens, std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(plan->reference_tokens, std::numeric_limits<std::uint64_t>::max());
}

TEST(PlannerFormulaTest, ParseByteSize) {
  EXPECT_EQ(ParseByteSize("33GiB").value(), 33ull << 30);
  EXPECT_EQ(ParseByteSize("1.5TB").value(), 1'500'000'000'000u);
  EXPECT_EQ(ParseByteSize("0.5KiB").value(), 512u);
  EXPECT_EQ(ParseByteSize("4096").value(), 4096u);
  EXPECT_EQ(ParseByteSize("4096B").value(), 4096u);
  EXPECT_EQ(ParseByteSize("80GB").value(), 80'000'000'000u);
  for (const char* bad : {"", "GiB", "33 GiB", "33gib", "1.", "-1", ".5GB",
                          "9999999TiB", "99999999999999999999"}) {
    EXPECT_FALSE(ParseByteSize(bad)) << bad;
  }
}

TEST(PlannerFormulaTest, ModelJsonNamesWhatIsWrong) {
  const auto error = [](const char* text) {
    Result<ModelSpec> m = ParseModelJson(text);
    return m ? std::string() : m.error().message;
  };
  EXPECT_THAT(error(R"({"name": "x", "layers": []})"), HasSubstr("no layers"));
  EXPECT_THAT(error(R"({"name": "x", "layers": [{"kind": "sliding",
                "count": 2, "kv_heads": 1, "head_size": 8}]})"),
              HasSubstr("layer 0: window W is required"));
  EXPECT_THAT(error(R"({"layers": [{"kind": "full", "dtype": "fp4"}]})"),
              HasSubstr("unknown dtype \"fp4\""));
  EXPECT_THAT(error(R"({"layers": [{"kind": "full", "heads": 1}]})"),
              HasSubstr("unknown layer field \"heads\""));
  EXPECT_THAT(error(R"({"name": "x", "layers": [{"kind": "recurrent",
                "state_bytes": 8, "state": [{"shape": [1]}]}]})"),
              HasSubstr("not both"));
  EXPECT_THAT(error(R"({"name": "x", "layers": [{"kind": "recurrent",
                "state": [{"shape": []}]}]})"),
              HasSubstr("needs a shape"));
  EXPECT_THAT(error(R"({"layers": [{"kind": "mla",
                "record_bytes_per_token": 8}], "draft": {"tokens": 1}})"),
              HasSubstr("unknown draft field \"tokens\""));
  EXPECT_THAT(error("{"), HasSubstr("model description"));
  EXPECT_EQ(LoadPreset("nope").error().code, ErrorCode::kNotFound);
}

TEST(PlannerFormulaTest, EveryPresetParsesAndPlans) {
  for (const std::string& name : PresetNames()) {
    SCOPED_TRACE(name);
    Result<ModelSpec> model = LoadPreset(name);
    ASSERT_TRUE(model) << model.error().message;
    EXPECT_EQ(model->name, name);
    const PlanOptions options{
        .tp = 2, .budget_bytes = 80ull << 30, .context_tokens = 32'768};
    Result<Plan> plan =
        PlanCapacity(*model, AutoGeometry(*model, options).value(), options);
    ASSERT_TRUE(plan) << plan.error().message;
    EXPECT_GT(plan->shared.concurrency, 0u);
  }
}

}  // namespace
}  // namespace hkv
