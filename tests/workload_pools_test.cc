// Per-group pools split by the workload (--pools workload): an unlimited-
// pool run measures what each group keeps cached, and the planner's
// per-group budget is re-split by those bytes, each pool keeping at least
// what the longest request needs.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <string>

#include "hkv/experiment.h"

namespace hkv {
namespace {

SimRun RunPools(const std::string& pools) {
  ExperimentOptions o{.workload = "mooncake:" HKV_DATA_DIR
                                  "/traces/mooncake_conversation_trace.jsonl",
                      .limit = 300,
                      .pools = pools,
                      .geometry = "2048/256/256"};
  o.given.insert("geometry");
  Result<SimRuns> runs = RunSimulation(o, {});
  EXPECT_TRUE(runs.has_value()) << runs.error().message;
  return runs->runs.at(0);
}

TEST(WorkloadPoolsTest, ReSplitsThePlannersPoolsByWhatIsKept) {
  const SimRun planned = RunPools("per-group");
  const SimRun split = RunPools("workload");
  EXPECT_EQ(split.config.label, "2048/256/256 workload pools");
  const std::vector<std::uint32_t>& pools =
      split.config.cache.group_pool_blocks;
  ASSERT_EQ(pools.size(), split.config.cache.groups.size());
  EXPECT_EQ(split.config.cache.num_blocks,
            1 + std::accumulate(pools.begin(), pools.end(), 0u));
  EXPECT_NE(pools, planned.config.cache.group_pool_blocks);
  // The planner's split is made for requests of the whole context; the
  // trace's are far shorter and keep their states, which the re-split
  // makes room for.
  EXPECT_GT(split.result.reused_tokens, planned.result.reused_tokens);
  // The capacity reported is the new pools'.
  ASSERT_TRUE(split.config.capacity.has_value());
  EXPECT_EQ(split.config.capacity->blocks, split.config.cache.num_blocks);
}

TEST(WorkloadPoolsTest, PoolLayoutsAreNamed) {
  EXPECT_EQ(ParsePoolLayout("workload"), PoolLayout::kPerGroupByWorkload);
  EXPECT_EQ(ParsePoolLayout("rebalanced"), PoolLayout::kRebalanced);
  EXPECT_EQ(ParsePoolLayout("Shared").error().message,
            "pool layout \"Shared\" is not shared, per-group, workload or "
            "rebalanced");
}

}  // namespace
}  // namespace hkv
