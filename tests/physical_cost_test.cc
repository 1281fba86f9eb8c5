// The physical part of the cost model: the roofline's sides from a
// model's compute facts, the deployment and the hardware, each checked
// against the arithmetic by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "hkv/cost_model.h"
#include "hkv/deployment.h"
#include "hkv/hardware.h"
#include "hkv/model.h"

namespace hkv {
namespace {

using ::testing::HasSubstr;

TEST(PhysicalCostTest, ExpertCoverageIsTheChanceAnExpertIsUsed) {
  EXPECT_DOUBLE_EQ(ExpertCoverage(0, 0, 5), 1.0);  // dense: all weights
  EXPECT_DOUBLE_EQ(ExpertCoverage(288, 8, 0), 0.0);
  EXPECT_DOUBLE_EQ(ExpertCoverage(288, 8, 1), 8.0 / 288);
  EXPECT_NEAR(ExpertCoverage(288, 8, 2), 1 - std::pow(280.0 / 288, 2), 1e-15);
  // Concave in the tokens: the fourth batch of tokens adds less than the
  // first, and 96 tokens (16 decodes of 6) use 93 % of the experts.
  EXPECT_LT(ExpertCoverage(288, 8, 24) - ExpertCoverage(288, 8, 18),
            ExpertCoverage(288, 8, 6));
  EXPECT_NEAR(ExpertCoverage(288, 8, 96), 0.933, 0.001);
}

TEST(PhysicalCostTest, SparseAttentionPairsCapEachQueryAtTopK) {
  EXPECT_DOUBLE_EQ(SparseAttentionPairs(0, 10, 0),
                   PrefillAttentionPairs(0, 10));
  EXPECT_DOUBLE_EQ(SparseAttentionPairs(0, 4, 8), 1 + 2 + 3 + 4);
  EXPECT_DOUBLE_EQ(SparseAttentionPairs(0, 6, 4), 1 + 2 + 3 + 4 + 4 + 4);
  EXPECT_DOUBLE_EQ(SparseAttentionPairs(5, 8, 4), 4 * 3);
  EXPECT_DOUBLE_EQ(SparseAttentionPairs(2, 6, 4), 3 + 4 + 4 + 4);
  double by_hand = 0;
  for (int p = 100; p < 5000; ++p) by_hand += std::min(p + 1, 2048);
  EXPECT_DOUBLE_EQ(SparseAttentionPairs(100, 5000, 2048), by_hand);
}

ModelSpec Dense() {
  return {.name = "dense",
          .layers = {{.kind = LayerKind::kFullAttention,
                      .count = 4,
                      .num_kv_heads = 8,
                      .head_size = 128,
                      .head_size_v = 128,
                      .dtype_bytes = 2},
                     {.kind = LayerKind::kRecurrent,
                      .count = 2,
                      .state = {{.shape = {16, 1024},
                                 .dtype_bytes = 4,
                                 .tp_dim = 0}}}},
          .compute = ComputeSpec{.total_params = 8e9,
                                 .active_params = 8e9,
                                 .hidden = 4096,
                                 .attention_flops_per_pair = 16384}};
}

HardwareSpec Gpu() {
  return {.name = "gpu",
          .memory_bandwidth = 1e12,
          .bf16_flops = 1e15,
          .fp8_flops = 2e15,
          .fp4_flops = 4e15,
          .link_bandwidth = 1e11,
          .link_latency_s = 1e-5};
}

TEST(PhysicalCostTest, ResolvesOneRanksWorkFromTheFacts) {
  Result<PhysicalCost> p = ResolvePhysicalCost(
      Dense(), {.model = "dense", .tp = 2}, Gpu(), Precision::kFp8);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->peak_flops, 2e15);
  EXPECT_DOUBLE_EQ(p->gemm_flops_per_token, 2 * 8e9 / 2);
  EXPECT_DOUBLE_EQ(p->other_weight_bytes, 8e9 * 2 / 2);
  EXPECT_DOUBLE_EQ(p->routed_weight_bytes, 0.0);
  EXPECT_DOUBLE_EQ(p->attention_flops_per_pair, 4 * 16384.0 / 2);
  // 4 KV heads of 256 bytes (K and V of 128 bf16 values) per rank.
  EXPECT_DOUBLE_EQ(p->key_bytes, 4 * (4 * 256 * 2.0));
  // Two layers' states, split by TP, read and written.
  EXPECT_DOUBLE_EQ(p->state_bytes, 2 * 2 * (8 * 1024 * 4.0));
  // Two ring all-reduces per layer of 6 layers, of 4096 bf16 values.
  EXPECT_DOUBLE_EQ(p->link_bytes_per_token, 2 * 6 * 4096 * 2 * 2 * 0.5);
  EXPECT_DOUBLE_EQ(p->collectives_per_step, 12.0);
  Result<PhysicalCost> one = ResolvePhysicalCost(
      Dense(), {.model = "dense", .tp = 1}, Gpu(), Precision::kBf16);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->link_bytes_per_token, 0.0);
  EXPECT_EQ(one->collectives_per_step, 0.0);
}

TEST(PhysicalCostTest, AModelWithoutComputeFactsIsRefusedNamingIt) {
  ModelSpec model = Dense();
  model.compute.reset();
  Result<PhysicalCost> p =
      ResolvePhysicalCost(model, {.model = "dense"}, Gpu(), Precision::kBf16);
  ASSERT_FALSE(p);
  EXPECT_THAT(p.error().message, HasSubstr("model dense has no compute"));
}

TEST(PhysicalCostTest, AStepIsTheLongerSideOfTheRooflinePlusTheLink) {
  PhysicalCost p{.peak_flops = 1e15,
                 .memory_bandwidth = 1e12,
                 .link_bandwidth = 1e11,
                 .link_latency_s = 1e-5,
                 .gemm_flops_per_token = 1e10,
                 .other_weight_bytes = 1e9,
                 .routed_weight_bytes = 8e9,
                 .experts = 8,
                 .experts_per_token = 1,
                 .key_bytes = 1000,
                 .state_bytes = 1e6,
                 .link_bytes_per_token = 1e5,
                 .collectives_per_step = 10};
  // One decode at 1,000 tokens: an eighth of the experts.
  const StepShape decode{.decode_tokens = 1,
                         .decode_context_tokens = 1000,
                         .requests = 1,
                         .decode_sparse_keys = 1000};
  const PeakSeconds d = PhysicalSeconds(p, decode);
  EXPECT_DOUBLE_EQ(d.compute, 1e10 / 1e15);
  EXPECT_DOUBLE_EQ(d.memory, (1e9 + 1e9 + 1000 * 1000 + 1e6) / 1e12);
  EXPECT_DOUBLE_EQ(d.link, 1e5 / 1e11 + 10 * 1e-5);
  CostModel cost{
      .compute_scale = 2, .memory_scale = 1.5, .link_scale = 1, .physics = p};
  // Memory binds: the compute side is not priced.
  EXPECT_DOUBLE_EQ(StepSeconds(cost, decode), 1.5 * d.memory + d.link);
  EXPECT_EQ(Feature(cost, decode, kComputeScale), 0.0);
  EXPECT_DOUBLE_EQ(Feature(cost, decode, kMemoryScale), d.memory);
  // A prefill of 8,192 tokens uses every expert and binds on compute.
  const StepShape prefill{.prefill_tokens = 8192, .requests = 1};
  const PeakSeconds f = PhysicalSeconds(p, prefill);
  EXPECT_GT(2 * f.compute, 1.5 * f.memory);
  EXPECT_DOUBLE_EQ(StepSeconds(cost, prefill), 2 * f.compute + f.link);
  EXPECT_EQ(Feature(cost, prefill, kMemoryScale), 0.0);
}

TEST(PhysicalCostTest, DecodeThroughputIsConcaveInTheBatch) {
  // The preset's model: a batch of 4 reads far more than one request's
  // experts, so it is well below 4x one request's tokens per second.
  Result<CostModel> cost = CostModelPreset("glm53-flash-gb10x4");
  ASSERT_TRUE(cost);
  ASSERT_TRUE(cost->physics.has_value());
  const double one = 1 / DecodeSecondsPerRequest(*cost, {.requests = 1});
  const double four = 4 / (4 * DecodeSecondsPerRequest(*cost, {.requests = 4}));
  const double sixteen =
      16 / (16 * DecodeSecondsPerRequest(*cost, {.requests = 16}));
  EXPECT_GT(four, 1.5 * one);
  EXPECT_LT(four, 3.0 * one);
  EXPECT_GT(sixteen, 2.0 * four);
  EXPECT_LT(sixteen, 4.0 * four);
}

TEST(HardwareTest, PresetsParseAndBadOnesAreNamed) {
  for (const std::string& name : HardwarePresetNames()) {
    Result<HardwareSpec> h = LoadHardwarePreset(name);
    ASSERT_TRUE(h) << h.error().message;
    EXPECT_EQ(h->name, name);
    EXPECT_FALSE(h->sources.empty()) << name;
  }
  EXPECT_THAT(LoadHardwarePreset("tpu").error().message,
              HasSubstr("unknown hardware \"tpu\" (presets: gb10"));
  EXPECT_THAT(ParseHardwarePreset(R"({"name": "x", "memory_bandwidth": -1})")
                  .error()
                  .message,
              HasSubstr("memory_bandwidth must be positive"));
  EXPECT_THAT(
      ParseHardwarePreset(R"({"name": "x", "clock": 1})").error().message,
      HasSubstr("unknown field \"clock\""));
  EXPECT_THAT(ParsePrecision("int8").error().message,
              HasSubstr("unknown precision \"int8\""));
}

TEST(ComputeSpecTest, EveryPresetModelHasConsistentFacts) {
  for (const std::string& name : PresetNames()) {
    Result<ModelSpec> model = LoadPreset(name);
    ASSERT_TRUE(model) << model.error().message;
    ASSERT_TRUE(model->compute.has_value()) << name;
    EXPECT_TRUE(model->compute->Validate()) << name;
  }
  ComputeSpec c{.total_params = 1e9,
                .active_params = 2e9,
                .hidden = 1,
                .attention_flops_per_pair = 1};
  EXPECT_THAT(c.Validate().error().message, HasSubstr("at most total"));
  c = {.total_params = 1e9,
       .active_params = 1e8,
       .routed_params = 5e8,
       .hidden = 1,
       .attention_flops_per_pair = 1};
  EXPECT_THAT(c.Validate().error().message, HasSubstr("mixture of experts"));
  Result<ModelSpec> bad = ParseModelJson(
      R"({"name": "m", "layers": [{"kind": "full", "kv_heads": 1,
          "head_size": 1, "dtype": "bf16"}], "compute": {"flops": 1}})");
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message,
              HasSubstr("unknown compute field \"flops\""));
}

}  // namespace
}  // namespace hkv
