// The deployment seam: page geometries and their resolution by the
// capacity planner.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "engine/sim_stats.h"
#include "hkv/deployment.h"

namespace hkv {
namespace {

using ::testing::HasSubstr;

TEST(DeploymentTest, ParsesPageGeometries) {
  DeploymentSpec spec;
  ASSERT_TRUE(ParsePageGeometry("2048/256/128", spec).has_value());
  EXPECT_EQ(spec.target_block, 2048u);
  EXPECT_EQ(spec.recurrent_block, 256u);
  EXPECT_EQ(spec.hash_unit, 128u);
  for (const char* bad : {"", "2048", "2048/256", "2048/256/", "a/b/c",
                          "2048/0/256", "2048/256/256/1", "2048//256"}) {
    EXPECT_FALSE(ParsePageGeometry(bad, spec).has_value()) << bad;
  }
}

std::size_t CountKind(const CacheConfig& config, GroupKind kind) {
  return static_cast<std::size_t>(
      std::count_if(config.groups.begin(), config.groups.end(),
                    [&](const GroupSpec& g) { return g.kind == kind; }));
}

// The built-in comparison's deployments, as the planner lays them out
// (hkv plan --model glm53-flash-like --tp 4 --budget 33GiB --context 262144
// --max-batched-tokens 8192): the model's DFlash draft adds a sliding-window
// group that rewinds a hit by one unit, and 5 speculative state blocks.
TEST(DeploymentTest, ResolvesTheBuiltInComparisonThroughThePlanner) {
  Result<ResolvedDeployment> fine = ResolveDeployment({.target_block = 2048});
  ASSERT_TRUE(fine.has_value()) << fine.error().message;
  // 33 GiB over the 12,638,208-byte stride of 11 MLA pages of 2048 tokens.
  EXPECT_EQ(fine->cache.num_blocks, 2803u);
  ASSERT_EQ(fine->cache.groups.size(), 6u);  // recurrent x4, MLA, draft
  EXPECT_EQ(CountKind(fine->cache, GroupKind::kRecurrent), 4u);
  for (const GroupSpec& g : fine->cache.groups) {
    EXPECT_EQ(g.block_size, g.kind == GroupKind::kRecurrent ? 256u : 2048u);
    if (g.kind == GroupKind::kRecurrent) {
      EXPECT_EQ(g.speculative_blocks, 5u);  // the DFlash2 draft's tokens
    }
    EXPECT_EQ(g.speculation == Speculation::kEagle,
              g.kind == GroupKind::kSlidingWindow);
  }
  EXPECT_EQ(fine->cache.keys.hash_unit, 256u);
  EXPECT_THAT(fine->description, HasSubstr("sliding[5]/2048 (draft"));
  Result<CacheConfig> small = ResolveCacheConfig(
      {.target_block = 256, .recurrent_block = 256, .hash_unit = 256});
  ASSERT_TRUE(small.has_value());
  // The rebalanced 7 recurrent groups of 5 layers set the stride:
  // 5 x 1,146,880 B rounded up to 8448 B = 5,736,192 B; 33 GiB holds 6177.
  EXPECT_EQ(small->num_blocks, 6177u);
  EXPECT_EQ(CountKind(*small, GroupKind::kRecurrent), 7u);
}

// The GB10 deployment's capacity, as the engine logs it and as whole
// requests (calibration file: 4,297,015 tokens, 16.39x at 262,144). Blocks
// per request at 2048/256/256: 128 MLA + 4 recurrent groups x (2 + 5 + 1)
// + the draft window ceil((2048 - 1 + 5 + 16384) / 2048) + 1 = 171.
TEST(DeploymentTest, Gb10CapacityInBothForms) {
  Result<DeploymentPreset> gb10 = LoadDeploymentPreset("glm53-flash-gb10x4");
  ASSERT_TRUE(gb10) << gb10.error().message;
  Result<ResolvedDeployment> d = ResolveDeployment(gb10->spec);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->capacity.blocks, 2803u);
  EXPECT_EQ(d->capacity.blocks_per_request, 171u);
  EXPECT_EQ(d->capacity.engine_pool_tokens, 2803u * 262144u / 171u);
  EXPECT_EQ(d->capacity.engine_pool_tokens, 4'297'015u);
  EXPECT_NEAR(d->capacity.engine_max_concurrency, 16.39, 0.005);
  EXPECT_EQ(d->capacity.whole_requests, 2802u / 171u);
}

// Whole requests of the context length that the cache config holds at
// once, times the context, by the simulator's own count (each group's
// MaxBlocksPerRequest against its pool, or all of them against the shared
// pool).
std::uint64_t SimulatedTokens(const CacheConfig& cache, std::uint64_t context) {
  const double fit = internal::EstimateCapacity(cache, cache.num_blocks - 1,
                                                static_cast<double>(context))
                         .concurrency;
  return static_cast<std::uint64_t>(fit) * context;
}

// 256/256/256 on the GLM-5.3-like model at TP 4 and 33 GiB: the shared
// pool's slots are the recurrent groups' 5.7 MB stride; per-group pools
// give each group its own page (hkv plan: 1,310,720 tokens against
// 4,456,448, 3.4x).
TEST(DeploymentTest, PerGroupPoolsHoldWhatThePlannerPlans) {
  const DeploymentSpec small{
      .target_block = 256, .recurrent_block = 256, .hash_unit = 256};
  DeploymentSpec per_group_spec = small;
  per_group_spec.pools = PoolLayout::kPerGroup;
  Result<ResolvedDeployment> shared = ResolveDeployment(small);
  Result<ResolvedDeployment> per_group = ResolveDeployment(per_group_spec);
  ASSERT_TRUE(shared && per_group);
  const std::uint64_t context = small.context_tokens;
  EXPECT_EQ(shared->capacity.whole_requests * context, 1'310'720u);
  EXPECT_EQ(per_group->capacity.whole_requests * context, 4'456'448u);
  const CacheConfig& pools = per_group->cache;
  ASSERT_EQ(pools.group_pool_blocks.size(), pools.groups.size());
  std::uint64_t sum = 0;
  for (std::uint32_t n : pools.group_pool_blocks) sum += n;
  EXPECT_EQ(pools.num_blocks, sum + 1);
  const std::uint64_t held = SimulatedTokens(pools, context);
  EXPECT_NEAR(static_cast<double>(held), 4'456'448.0, 0.02 * 4'456'448.0);
  EXPECT_GE(held, 3 * SimulatedTokens(shared->cache, context));
  EXPECT_EQ(ParsePoolLayout("per-group"), PoolLayout::kPerGroup);
  EXPECT_EQ(
      ParsePoolLayout("bogus").error().message,
      "pool layout \"bogus\" is not shared, per-group, workload or rebalanced");
}

TEST(DeploymentTest, PresetsLoadAndBadOnesAreNamed) {
  EXPECT_THAT(DeploymentPresetNames(),
              ::testing::ElementsAre("glm53-flash-gb10x4",
                                     "glm53-flash-rtx6000x4-dcp1-mtp",
                                     "glm53-flash-rtx6000x4-dcp4-dflash"));
  for (const std::string& name : DeploymentPresetNames()) {
    Result<DeploymentPreset> p = LoadDeploymentPreset(name);
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_EQ(p->cost.name, name);
    EXPECT_TRUE(ResolveDeployment(p->spec).has_value()) << name;
  }
  EXPECT_THAT(LoadDeploymentPreset("nope").error().message,
              HasSubstr("glm53-flash-gb10x4"));
  EXPECT_THAT(
      ParseDeploymentPreset(R"({"name": "x", "tp": "four"})").error().message,
      HasSubstr("deployment preset"));
  EXPECT_THAT(
      ParseDeploymentPreset(R"({"name": "x", "bogus": 1})").error().message,
      HasSubstr("bogus"));
  EXPECT_THAT(ParseDeploymentPreset(R"({"name": "x", "draft_rewind": "half"})")
                  .error()
                  .message,
              HasSubstr("draft_rewind"));
}

TEST(DeploymentTest, PlannerErrorsPassThrough) {
  const Result<CacheConfig> unknown = ResolveCacheConfig({.model = "nope"});
  ASSERT_FALSE(unknown.has_value());
  EXPECT_THAT(unknown.error().message, HasSubstr("nope"));
  const Result<CacheConfig> tiny =
      ResolveCacheConfig({.budget_bytes = std::uint64_t{1} << 30});
  ASSERT_FALSE(tiny.has_value());
  EXPECT_EQ(tiny.error().code, ErrorCode::kInfeasible);
}

}  // namespace
}  // namespace hkv
