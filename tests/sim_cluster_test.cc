// The cluster simulation (SimulationOptions::instances, docs/cluster.md):
// every request runs once on one instance, the routers place requests as
// their rules say, and the hybrid-prefix router never counts a prefix the
// instance cannot resume from.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "hkv/group_list.h"
#include "hkv/simulator.h"
#include "hkv/workload.h"

namespace hkv {
namespace {

// Sessions of agent turns: each turn carries the previous one, so the
// instance that served a session holds its prefix.
std::vector<SimRequest> Sessions() {
  return GenerateAgentSessions({.num_sessions = 12,
                                .turns = 4,
                                .system_tokens = 1024,
                                .message_tokens = 700,
                                .output_tokens = 60,
                                .interval_s = 0.05,
                                .think_s = 0.5});
}

// Full attention and a recurrent group keeping states only where chunks
// end (256-token units, 768-token chunks): the 1,024-token system prompt
// another session computed is cached in full for attention but has a state
// at 768 only, so counting attention overlaps counts tokens that do not
// resume.
SimulationOptions Cluster(Router router, std::uint32_t instances = 3) {
  Result<std::vector<GroupSpec>> groups =
      ParseGroupList("full:256,recurrent:256");
  EXPECT_TRUE(groups.has_value());
  return {.cache = {.groups = groups.value_or(std::vector<GroupSpec>{}),
                    .num_blocks = 600,
                    .keys = {.function = KeyFunction::kXxh3_128Cbor,
                             .hash_unit = 256}},
          .cost = {.step_s = 0.01,
                   .prefill_token_s = 1e-4,
                   .decode_token_s = 2e-4,
                   .request_s = 1e-4},
          .limits = {.max_num_batched_tokens = 768},
          .arrivals = ArrivalMode::kOpenLoop,
          .instances = instances,
          .router = router};
}

SimulationResult Simulated(const SimulationOptions& options) {
  const std::vector<SimRequest> workload = Sessions();
  Result<SimulationResult> result = Simulate(workload, options);
  EXPECT_TRUE(result.has_value()) << result.error().message;
  return result.value_or(SimulationResult{});
}

class ClusterRouterTest : public ::testing::TestWithParam<Router> {};

TEST_P(ClusterRouterTest, EveryRequestRunsOnceOnOneInstance) {
  const std::vector<SimRequest> workload = Sessions();
  const SimulationResult r = Simulated(Cluster(GetParam()));
  EXPECT_EQ(r.finished, workload.size());
  std::uint64_t prompt = 0;
  for (std::size_t i = 0; i < workload.size(); ++i) {
    prompt += PromptLength(workload[i]);
    EXPECT_EQ(r.per_request[i].output_tokens, workload[i].output_length) << i;
    EXPECT_GE(r.per_request[i].first_token_s, r.per_request[i].arrival_s);
  }
  EXPECT_EQ(r.prompt_tokens, prompt);
  EXPECT_EQ(r.reused_tokens + r.computed_tokens, r.prompt_tokens);
  ASSERT_TRUE(r.cluster.has_value());
  EXPECT_EQ(r.cluster->router, GetParam());
  ASSERT_EQ(r.cluster->per_instance.size(), 3u);
  std::uint64_t requests = 0;
  std::uint64_t reused = 0;
  for (const InstanceFigures& f : r.cluster->per_instance) {
    requests += f.requests;
    reused += f.reused_tokens;
  }
  EXPECT_EQ(requests, workload.size());
  EXPECT_EQ(reused, r.reused_tokens);
  EXPECT_EQ(r.manager_stats.hits, r.reused_tokens);  // summed over instances
  EXPECT_EQ(r.manager_stats.requests, workload.size());
  EXPECT_GE(r.cluster->load_imbalance, 1.0);
}

INSTANTIATE_TEST_SUITE_P(Routers, ClusterRouterTest,
                         ::testing::Values(Router::kRoundRobin,
                                           Router::kLeastLoaded,
                                           Router::kPrefix,
                                           Router::kHybridPrefix));

TEST(ClusterTest, RoundRobinDealsRequestsInTurn) {
  const SimulationResult r = Simulated(Cluster(Router::kRoundRobin));
  for (const InstanceFigures& f : r.cluster->per_instance) {
    EXPECT_EQ(f.requests, 16u);
  }
  EXPECT_EQ(r.cluster->routed_tokens, 0u);
}

TEST(ClusterTest, HybridPrefixCountsOnlyResumablePrefixes) {
  const SimulationResult prefix = Simulated(Cluster(Router::kPrefix));
  const SimulationResult hybrid = Simulated(Cluster(Router::kHybridPrefix));
  // Full attention's chain runs past the last recurrent state: the prefix
  // router counts tokens the instance must compute after all.
  EXPECT_GT(prefix.cluster->unresumable_routes, 0u);
  EXPECT_GT(prefix.cluster->routed_tokens, prefix.reused_tokens);
  EXPECT_EQ(hybrid.cluster->unresumable_routes, 0u);
  EXPECT_EQ(hybrid.cluster->unresumable_tokens, 0u);
  EXPECT_GT(hybrid.cluster->routed_tokens, 0u);
  // Following sessions beats dealing them out.
  const SimulationResult dealt = Simulated(Cluster(Router::kRoundRobin));
  EXPECT_GT(hybrid.reused_tokens, dealt.reused_tokens);
}

TEST(ClusterTest, AClosedLoopKeepsItsSeatsAndTurnOrderAcrossInstances) {
  SimulationOptions options = Cluster(Router::kHybridPrefix);
  options.arrivals = ArrivalMode::kClosedLoop;
  options.concurrency = 4;
  const std::vector<SimRequest> workload = Sessions();
  const SimulationResult r = Simulated(options);
  ASSERT_EQ(r.finished, workload.size());
  // A request enters no earlier than the finish that freed its seat: at
  // most `concurrency` requests are in the system at any time.
  std::vector<std::pair<double, int>> changes;
  for (const RequestMetrics& m : r.per_request) {
    changes.emplace_back(m.arrival_s, 1);
    changes.emplace_back(m.finish_s, -1);  // sorts before an equal entry
  }
  std::sort(changes.begin(), changes.end());
  int in_system = 0;
  for (const auto& [time, change] : changes) {
    in_system += change;
    EXPECT_LE(in_system, 4) << "at " << time;
  }
  for (std::size_t i = 0; i < workload.size(); ++i) {
    if (!workload[i].after) continue;
    EXPECT_GE(r.per_request[i].arrival_s,
              r.per_request[*workload[i].after].finish_s)
        << i;
  }
}

TEST(ClusterTest, OneInstanceIsThePlainEngine) {
  const SimulationResult one = Simulated(Cluster(Router::kHybridPrefix, 1));
  EXPECT_FALSE(one.cluster.has_value());
}

TEST(ClusterTest, BadOptionsAreNamed) {
  SimulationOptions options = Cluster(Router::kPrefix, 0);
  EXPECT_NE(options.Validate().error().message.find("instances"),
            std::string::npos);
  options.instances = 1025;
  EXPECT_FALSE(options.Validate().has_value());
  EXPECT_NE(ParseRouter("nearest").error().message.find("nearest"),
            std::string::npos);
  EXPECT_EQ(*ParseRouter(RouterName(Router::kHybridPrefix)),
            Router::kHybridPrefix);
}

}  // namespace
}  // namespace hkv
