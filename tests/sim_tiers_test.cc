// The simulator's modelled offload tiers (SimulationOptions::tiers,
// docs/tiers.md): a prompt the GPU evicted comes back through a tier with
// the hit the GPU would have given, a tier too small for an object group
// holds nothing, a cluster's redis tier serves every instance, and the
// chain's text is parsed or refused with its reason.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hkv/group_list.h"
#include "hkv/simulator.h"
#include "hkv/workload.h"

namespace hkv {
namespace {

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

// Full attention and a recurrent group, 256-token units; each block priced.
SimulationOptions Options(std::uint32_t num_blocks) {
  Result<std::vector<GroupSpec>> groups =
      ParseGroupList("full:256,recurrent:256");
  EXPECT_TRUE(groups.has_value());
  return {.cache = {.groups = groups.value_or(std::vector<GroupSpec>{}),
                    .num_blocks = num_blocks,
                    .keys = {.function = KeyFunction::kXxh3_128Cbor,
                             .hash_unit = 256}},
          .cost = {.step_s = 0.01,
                   .prefill_token_s = 1e-4,
                   .decode_token_s = 2e-4,
                   .request_s = 1e-4},
          .limits = {.max_num_batched_tokens = 1024},
          .arrivals = ArrivalMode::kClosedLoop,
          .concurrency = 1,
          .page_bytes = {64 << 10, 1 << 20}};
}

// A prompt, three others that push it off a small GPU pool, the prompt
// again (last).
std::vector<SimRequest> Resend() {
  std::vector<SimRequest> w;
  w.push_back({.prompt = {{.id = 1, .length = 2100}}, .output_length = 4});
  for (std::uint64_t i = 0; i < 3; ++i) {
    w.push_back({.prompt = {{.id = 10 + i, .length = 2100}},
                 .output_length = 4,
                 .output_id = 100 + i});
  }
  w.push_back({.prompt = {{.id = 1, .length = 2100}},
               .output_length = 4,
               .output_id = 200});
  return w;
}

SimulationResult Simulated(const std::vector<SimRequest>& workload,
                           const SimulationOptions& options) {
  Result<SimulationResult> r = Simulate(workload, options);
  EXPECT_TRUE(r.has_value()) << r.error().message;
  return r.value_or(SimulationResult{});
}

double Ttft(const SimulationResult& r, std::size_t i) {
  return r.per_request[i].first_token_s - r.per_request[i].arrival_s;
}

TEST(SimTiersTest, AResendAfterEvictionHitsThroughTheHostTier) {
  const std::vector<SimRequest> w = Resend();
  const std::size_t last = w.size() - 1;
  const SimulationResult roomy = Simulated(w, Options(2000));
  const SimulationResult small = Simulated(w, Options(40));
  SimulationOptions tiered = Options(40);
  tiered.tiers = {{.kind = TierKind::kHost, .capacity_bytes = kGiB}};
  const SimulationResult r = Simulated(w, tiered);
  const std::uint32_t gpu_hit = roomy.per_request[last].reused_tokens;
  ASSERT_GT(gpu_hit, 0u);
  // The small pool lost the prompt; the tier brings back the GPU's hit.
  EXPECT_LT(small.per_request[last].reused_tokens, gpu_hit);
  EXPECT_EQ(r.per_request[last].reused_tokens, gpu_hit);
  ASSERT_EQ(r.tiers.size(), 1u);
  const TierFigures& host = r.tiers[0];
  EXPECT_EQ(host.name, "host");
  EXPECT_EQ(host.hit_tokens, r.reused_tokens - small.reused_tokens);
  EXPECT_GT(host.hit_tokens, 0u);
  EXPECT_EQ(host.loads, r.tier_loads);
  EXPECT_GT(host.load_bytes, 0u);
  EXPECT_GT(host.stored_groups, 0u);
  EXPECT_DOUBLE_EQ(host.load_s, r.tier_load_s);
  EXPECT_GT(r.tier_load_s, 0.0);
  EXPECT_EQ(r.reused_tokens + r.computed_tokens, r.prompt_tokens);
  // The load is in the TTFT, and loading beats recomputing here.
  EXPECT_GE(Ttft(r, last), Ttft(roomy, last));
  EXPECT_LT(Ttft(r, last), Ttft(small, last));
  EXPECT_EQ(r.finished, w.size());
}

TEST(SimTiersTest, ATierTooSmallForAGroupHoldsNothing) {
  const std::vector<SimRequest> w = Resend();
  const SimulationResult small = Simulated(w, Options(40));
  SimulationOptions tiered = Options(40);
  tiered.tiers = {{.kind = TierKind::kHost, .capacity_bytes = 1024}};
  const SimulationResult r = Simulated(w, tiered);
  ASSERT_EQ(r.tiers.size(), 1u);
  EXPECT_EQ(r.tiers[0].stored_groups, 0u);
  EXPECT_EQ(r.tiers[0].hit_tokens, 0u);
  EXPECT_EQ(r.tier_loads, 0u);
  EXPECT_EQ(r.reused_tokens, small.reused_tokens);
}

TEST(SimTiersTest, AReadFromADeeperTierCountsThereAndCopiesUp) {
  const std::vector<SimRequest> w = Resend();
  SimulationOptions tiered = Options(40);
  // A host tier that holds about one request's groups: the prompt's are
  // gone from it by the resend, the redis tier still has them.
  tiered.tiers = {{.kind = TierKind::kHost, .capacity_bytes = 4 << 20},
                  {.kind = TierKind::kRemote, .capacity_bytes = kGiB}};
  const SimulationResult r = Simulated(w, tiered);
  ASSERT_EQ(r.tiers.size(), 2u);
  EXPECT_GT(r.tiers[1].hit_tokens, 0u);
  EXPECT_GT(r.tiers[0].evicted_groups, 0u);
  EXPECT_EQ(r.tiers[1].evicted_groups, 0u);
  // Copied up: the host tier stored the groups read from redis too.
  EXPECT_GT(r.tiers[1].load_groups, 0u);
}

TEST(SimTiersTest, ASharedRedisTierServesAnotherInstance) {
  std::vector<SimRequest> w = {
      {.prompt = {{.id = 1, .length = 2100}}, .output_length = 4},
      {.prompt = {{.id = 1, .length = 2100}},
       .output_length = 4,
       .output_id = 9,
       .after = 0,
       .delay_s = 0.01}};
  SimulationOptions options = Options(2000);
  options.arrivals = ArrivalMode::kOpenLoop;
  options.instances = 2;  // round robin: one request each
  options.tiers = {{.kind = TierKind::kHost, .capacity_bytes = kGiB}};
  const SimulationResult hosts = Simulated(w, options);
  EXPECT_EQ(hosts.per_request[1].reused_tokens, 0u);
  options.tiers.push_back({.kind = TierKind::kRemote, .capacity_bytes = kGiB});
  const SimulationResult shared = Simulated(w, options);
  EXPECT_GT(shared.per_request[1].reused_tokens, 0u);
  ASSERT_EQ(shared.tiers.size(), 2u);
  EXPECT_EQ(shared.tiers[1].hit_tokens, shared.per_request[1].reused_tokens);
  EXPECT_EQ(shared.tiers[0].hit_tokens, 0u);
}

TEST(SimTiersTest, ChainsParseAndRealTiersAreRefused) {
  Result<std::vector<TierSpec>> chain = ParseTierChain("host:64GiB+redis:1TB");
  ASSERT_TRUE(chain.has_value()) << chain.error().message;
  ASSERT_EQ(chain->size(), 2u);
  EXPECT_EQ((*chain)[0].kind, TierKind::kHost);
  EXPECT_EQ((*chain)[0].capacity_bytes, 64 * kGiB);
  EXPECT_EQ((*chain)[1].kind, TierKind::kRemote);
  EXPECT_EQ((*chain)[1].capacity_bytes, std::uint64_t{1'000'000'000'000});
  EXPECT_EQ(ParseTierChain("disk:1TiB")->at(0).kind, TierKind::kDisk);
  EXPECT_EQ(ParseTierChain("file:1TiB")->at(0).kind, TierKind::kDisk);
  EXPECT_TRUE(ParseTierChain("none")->empty());
  const auto refused = [](const std::string& text, const std::string& why) {
    Result<std::vector<TierSpec>> r = ParseTierChain(text);
    ASSERT_FALSE(r.has_value()) << text;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message.find(why), std::string::npos)
        << r.error().message;
  };
  refused("redis://localhost:6379", "capacity");
  refused("file:/var/cache/kv", "file:DIR");
  refused("tape:1TiB", "unknown kind");
  refused("host", "KIND:SIZE");
  refused("host:0", "size");
  refused("host:64GiB+", "KIND:SIZE");
}

TEST(SimTiersTest, TiersNeedPageBytes) {
  SimulationOptions options = Options(40);
  options.tiers = {{.kind = TierKind::kHost, .capacity_bytes = kGiB}};
  options.page_bytes.clear();
  Result<void> ok = options.Validate();
  ASSERT_FALSE(ok.has_value());
  EXPECT_NE(ok.error().message.find("deployment"), std::string::npos);
  options.page_bytes = {1, 1};
  options.tiers[0].capacity_bytes = 0;
  EXPECT_FALSE(options.Validate().has_value());
}

}  // namespace
}  // namespace hkv
