// The deployment seam: page geometries and their resolution by the
// capacity planner.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

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
// (hkv plan --model glm53-flash-like --tp 4 --budget 33GiB --context 262144).
TEST(DeploymentTest, ResolvesTheBuiltInComparisonThroughThePlanner) {
  Result<CacheConfig> fine = ResolveCacheConfig({.target_block = 2048});
  ASSERT_TRUE(fine.has_value()) << fine.error().message;
  EXPECT_EQ(fine->num_blocks, 2803u);
  ASSERT_EQ(fine->groups.size(), 5u);  // recurrent [9, 9, 8, 8], MLA [11]
  EXPECT_EQ(CountKind(*fine, GroupKind::kRecurrent), 4u);
  for (const GroupSpec& g : fine->groups) {
    EXPECT_EQ(g.block_size, g.kind == GroupKind::kRecurrent ? 256u : 2048u);
    if (g.kind == GroupKind::kRecurrent) {
      EXPECT_EQ(g.speculative_blocks, 7u);  // the DFlash2 draft's tokens
    }
  }
  EXPECT_EQ(fine->keys.hash_unit, 256u);
  Result<CacheConfig> small = ResolveCacheConfig(
      {.target_block = 256, .recurrent_block = 256, .hash_unit = 256});
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(small->num_blocks, 6043u);  // rebalanced: 7 recurrent groups
  EXPECT_EQ(CountKind(*small, GroupKind::kRecurrent), 7u);
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
