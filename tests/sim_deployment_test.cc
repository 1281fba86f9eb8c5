// The deployment seam: page geometries and the stand-in resolution of the
// built-in comparison.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

TEST(DeploymentTest, ResolvesTheBuiltInComparison) {
  Result<CacheConfig> fine = ResolveCacheConfig({.target_block = 2048});
  ASSERT_TRUE(fine.has_value()) << fine.error().message;
  EXPECT_EQ(fine->num_blocks, 2803u);
  ASSERT_EQ(fine->groups.size(), 5u);
  EXPECT_EQ(fine->groups[0].kind, GroupKind::kFullAttention);
  EXPECT_EQ(fine->groups[0].block_size, 2048u);
  EXPECT_EQ(fine->groups[4].kind, GroupKind::kRecurrent);
  EXPECT_EQ(fine->groups[4].block_size, 256u);
  EXPECT_EQ(fine->keys.hash_unit, 256u);
  Result<CacheConfig> small = ResolveCacheConfig(
      {.target_block = 256, .recurrent_block = 256, .hash_unit = 256});
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(small->num_blocks, 3360u);
}

TEST(DeploymentTest, UnknownDeploymentsWaitForThePlanner) {
  const Result<CacheConfig> r = ResolveCacheConfig({.tp = 2});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(r.error().message, HasSubstr("until the planner lands"));
}

}  // namespace
}  // namespace hkv
