// The connector between the cache and its offload tiers: a resend after
// the GPU copy is gone reaches, through a tier, exactly the tokens the GPU
// hit reached (partial tails, window pages and recurrent states included),
// and loads place every part where it belongs.
#include "hkv/tier_connector.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "hkv/deployment.h"
#include "redis_server.h"
#include "tier_test_util.h"

namespace hkv {
namespace {

using testing::ChainOf;
using testing::Content;
using testing::Driver;
using testing::Prompt;

struct GeometryCase {
  std::string preset;
  std::string geometry;
  DraftRewind rewind;
};

void PrintTo(const GeometryCase& c, std::ostream* out) {
  *out << c.preset << " at " << c.geometry
       << (c.rewind == DraftRewind::kOneUnit ? " with" : " without")
       << " a draft's rewind";
}

std::string Name(const ::testing::TestParamInfo<GeometryCase>& info) {
  std::string name =
      info.param.preset + "_" + info.param.geometry +
      (info.param.rewind == DraftRewind::kOneUnit ? "_draft" : "_nodraft");
  for (char& c : name) {
    if (c == '-' || c == '/') c = '_';
  }
  return name;
}

CacheConfig ConfigOf(const GeometryCase& c) {
  Result<DeploymentPreset> preset = LoadDeploymentPreset(c.preset);
  EXPECT_TRUE(preset.has_value());
  DeploymentSpec spec = preset->spec;
  EXPECT_TRUE(ParsePageGeometry(c.geometry, spec).has_value());
  spec.draft_rewind = c.rewind;
  Result<CacheConfig> config = ResolveCacheConfig(spec);
  EXPECT_TRUE(config.has_value()) << (config ? "" : config.error().message);
  return *config;
}

// Every (preset, geometry) pair of the calibration file, with the presets'
// draft and without.
std::vector<GeometryCase> CalibrationGeometries() {
  std::vector<GeometryCase> cases;
  for (auto [preset, geometry] :
       std::vector<std::pair<const char*, const char*>>{
           {"glm53-flash-gb10x4", "256/256/256"},
           {"glm53-flash-gb10x4", "2048/256/256"},
           {"glm53-flash-rtx6000x4-dcp1-mtp", "2048/256/256"},
           {"glm53-flash-rtx6000x4-dcp4-dflash", "2048/256/256"},
           {"glm53-flash-rtx6000x4-dcp4-dflash", "2048/2048/256"}}) {
    for (DraftRewind rewind : {DraftRewind::kOneUnit, DraftRewind::kNone})
      cases.push_back({preset, geometry, rewind});
  }
  return cases;
}

class ResendThroughTierTest : public ::testing::TestWithParam<GeometryCase> {
 protected:
  // Sends `prompt`, stores it, drops every GPU copy and resends it: the
  // tiers must give exactly the GPU's hit, and the load must place every
  // part of it.
  void ExpectResendReuses(TierChain& chain, std::uint32_t prompt_tokens) {
    const CacheConfig config = ConfigOf(GetParam());
    Result<CacheManager> cache = CacheManager::Create(config);
    ASSERT_TRUE(cache.has_value());
    Result<TierConnector> connector = TierConnector::Create(config, chain);
    ASSERT_TRUE(connector.has_value());
    Driver driver(config, *cache, *connector);
    const std::vector<TokenId> prompt = Prompt(prompt_tokens, 7);

    ASSERT_TRUE(driver.Run(prompt, /*store=*/true).has_value());
    const std::uint32_t gpu_hit = driver.GpuHit(prompt);
    ASSERT_GT(gpu_hit, 0u);
    ASSERT_TRUE(cache->ResetPrefixCache());
    ASSERT_EQ(driver.GpuHit(prompt), 0u);

    std::optional<testing::Served> resend = driver.Run(prompt, false);
    ASSERT_TRUE(resend.has_value());
    EXPECT_EQ(resend->gpu_tokens, 0u);
    EXPECT_EQ(resend->reused_tokens, gpu_hit) << "prompt of " << prompt_tokens;
    EXPECT_EQ(resend->load, LoadState::kDone);
    // And again: through the GPU, or the tiers where the GPU did not
    // register the loaded state again.
    std::optional<testing::Served> again = driver.Run(prompt, false);
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again->reused_tokens, gpu_hit);
  }
};

TEST_P(ResendThroughTierTest, ThroughTheHostTier) {
  for (std::uint32_t tokens : {5000u, 4097u, 2048u + 700u, 700u}) {
    TierChain chain = ChainOf(MakeHostStore(std::uint64_t{1} << 30));
    ExpectResendReuses(chain, tokens);
  }
}

TEST_P(ResendThroughTierTest, ThroughRedis) {
  hkv::testing::RedisServer server;
  ASSERT_TRUE(server.Start());
  for (std::uint32_t tokens : {5000u, 2048u + 700u}) {
    Result<std::unique_ptr<ObjectStore>> redis = MakeRedisStore(
        {.port = server.port(), .timeout = std::chrono::milliseconds(1000)});
    ASSERT_TRUE(redis.has_value());
    TierChain chain = ChainOf(std::move(*redis));
    ExpectResendReuses(chain, tokens);
  }
}

INSTANTIATE_TEST_SUITE_P(CalibrationGeometries, ResendThroughTierTest,
                         ::testing::ValuesIn(CalibrationGeometries()), Name);

// A small hybrid: full attention in 64-token pages, a window of 128 and a
// recurrent state every 64 tokens, hashed at 16 (partial tails).
CacheConfig SmallHybrid() {
  return {.groups = {{.block_size = 64},
                     {.kind = GroupKind::kSlidingWindow,
                      .block_size = 64,
                      .sliding_window = 128},
                     {.kind = GroupKind::kRecurrent, .block_size = 64}},
          .num_blocks = 4096,
          .keys = {.hash_unit = 16}};
}

// Redis killed in the middle of a run: the run finishes, lookups that the
// directory still extends fail their loads and fall back to what the GPU
// holds, and nothing wrong is reused (the driver checks every loaded part).
// Restarted, the tier takes objects again and serves them.
TEST(TierFaultTest, RedisKilledMidRunThenRestarted) {
  hkv::testing::RedisServer server;
  ASSERT_TRUE(server.Start());
  Result<std::unique_ptr<ObjectStore>> redis =
      MakeRedisStore({.port = server.port(),
                      .timeout = std::chrono::milliseconds(200),
                      .reconnect_interval = std::chrono::milliseconds(20)});
  ASSERT_TRUE(redis.has_value());
  TierChain chain = ChainOf(std::move(*redis));
  const CacheConfig config = SmallHybrid();
  Result<CacheManager> cache = CacheManager::Create(config);
  Result<TierConnector> connector = TierConnector::Create(config, chain);
  ASSERT_TRUE(cache && connector);
  Driver driver(config, *cache, *connector);

  std::vector<std::vector<TokenId>> prompts;
  std::vector<std::uint32_t> gpu_hits;
  for (std::uint32_t i = 0; i < 8; ++i) {
    if (i == 4) server.Kill();
    prompts.push_back(Prompt(300 + 37 * i, i + 1));
    ASSERT_TRUE(driver.Run(prompts.back(), /*store=*/true).has_value());
    gpu_hits.push_back(driver.GpuHit(prompts.back()));
  }
  ASSERT_TRUE(cache->ResetPrefixCache());
  for (std::uint32_t i = 0; i < 8; ++i) {
    std::optional<testing::Served> served = driver.Run(prompts[i], false);
    ASSERT_TRUE(served.has_value());
    EXPECT_EQ(served->reused_tokens, 0u) << "prompt " << i;
  }
  EXPECT_GE(connector->counters().loads_failed, 4u);  // stored before the kill
  EXPECT_EQ(connector->counters().loads_done, 0u);
  EXPECT_GT(chain.counters()[0].store_errors, 0u);

  ASSERT_TRUE(server.Restart());
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  ASSERT_TRUE(cache->ResetPrefixCache());
  ASSERT_TRUE(driver.Run(prompts[0], /*store=*/true).has_value());
  ASSERT_TRUE(cache->ResetPrefixCache());
  std::optional<testing::Served> served = driver.Run(prompts[0], false);
  ASSERT_TRUE(served.has_value());
  EXPECT_EQ(served->reused_tokens, gpu_hits[0]);
  EXPECT_EQ(served->load, LoadState::kDone);
  EXPECT_GE(chain.counters()[0].store.reconnects, 1u);
}

// An object dropped between the lookup and the load (evicted, or refused
// by its checks) fails the load; the retry's lookup no longer counts it.
TEST(TierFaultTest, AGroupGoneBeforeTheLoadFailsItAndIsForgotten) {
  std::unique_ptr<ObjectStore> host = MakeHostStore(std::uint64_t{1} << 30);
  ObjectStore* raw = host.get();
  TierChain chain = ChainOf(std::move(host));
  const CacheConfig config = SmallHybrid();
  Result<CacheManager> cache = CacheManager::Create(config);
  Result<TierConnector> connector = TierConnector::Create(config, chain);
  ASSERT_TRUE(cache && connector);
  Driver driver(config, *cache, *connector);
  const std::vector<TokenId> prompt = Prompt(1000, 3);
  ASSERT_TRUE(driver.Run(prompt, true).has_value());
  const std::uint32_t gpu_hit = driver.GpuHit(prompt);
  ASSERT_TRUE(cache->ResetPrefixCache());
  // Flip a byte in every stored object past the first 512 tokens.
  Result<std::vector<std::string>> names = raw->List("hkv-", 1000);
  ASSERT_TRUE(names.has_value());
  Request probe({.id = RequestId{77}}, prompt, cache->key_scheme());
  for (std::uint32_t end = 512 + 16; end <= 1000; end += 16) {
    const std::string name =
        ObjectName(chain.namespace_digest(), probe.keys()[end / 16 - 1]);
    ObjectRead read = raw->Get(name);
    if (read.status != StoreStatus::kOk) continue;
    read.bytes.back() ^= 1;
    raw->Put(name, read.bytes);
  }
  std::optional<testing::Served> served = driver.Run(prompt, false);
  ASSERT_TRUE(served.has_value());
  EXPECT_EQ(connector->counters().loads_failed, 1u);
  EXPECT_EQ(served->load, LoadState::kDone);  // the retry
  // The recurrent states kept lie past 512 (the prompt's last checkpoints):
  // with those refused, nothing before them is resumable.
  EXPECT_EQ(served->reused_tokens, 0u);
  EXPECT_GT(gpu_hit, 512u);
  EXPECT_GT(chain.counters()[0]
                .defects[static_cast<std::size_t>(ObjectDefect::kBadChecksum)],
            0u);
}

// A part of another size than the group's blocks hold (a well-formed
// object another engine wrote in this namespace with other pages) fails
// its load and its group is dropped: an engine never writes it.
TEST(TierFaultTest, APartOfTheWrongSizeFailsTheLoad) {
  std::unique_ptr<ObjectStore> host = MakeHostStore(std::uint64_t{1} << 30);
  ObjectStore* raw = host.get();
  TierChain chain = ChainOf(std::move(host));
  const CacheConfig config = SmallHybrid();
  Result<CacheManager> cache = CacheManager::Create(config);
  Result<TierConnector> connector = TierConnector::Create(
      config, chain, {.part_bytes = {48, 48, 48}});  // Content's size
  ASSERT_TRUE(cache && connector);
  Driver driver(config, *cache, *connector);
  const std::vector<TokenId> prompt = Prompt(700, 5);
  ASSERT_TRUE(driver.Run(prompt, true).has_value());
  const std::uint32_t gpu_hit = driver.GpuHit(prompt);
  ASSERT_TRUE(cache->ResetPrefixCache());
  // The sizes check: a resend reuses everything.
  std::optional<testing::Served> served = driver.Run(prompt, false);
  ASSERT_TRUE(served.has_value());
  EXPECT_EQ(served->reused_tokens, gpu_hit);
  ASSERT_TRUE(cache->ResetPrefixCache());
  // Re-encode the first page's object with a shorter attention part.
  const Request probe({.id = RequestId{70}}, prompt, cache->key_scheme());
  const BlockHash key = probe.keys()[64 / 16 - 1];
  const std::string name = ObjectName(chain.namespace_digest(), key);
  DecodedObject decoded =
      DecodeObjectGroup(raw->Get(name).bytes, chain.namespace_digest(), key);
  ASSERT_EQ(decoded.defect, ObjectDefect::kNone);
  decoded.group.parts[0].bytes.resize(40);
  ASSERT_EQ(raw->Put(name, EncodeObjectGroup(decoded.group,
                                             chain.namespace_digest())),
            StoreStatus::kOk);
  served = driver.Run(prompt, false);
  ASSERT_TRUE(served.has_value());
  EXPECT_EQ(connector->counters().wrong_size_parts, 1u);
  EXPECT_EQ(served->reused_tokens, 0u);  // the chain breaks at 64
  EXPECT_EQ(raw->Get(name).status, StoreStatus::kAbsent);
  EXPECT_EQ(chain.Find(key), nullptr);
  EXPECT_FALSE(
      TierConnector::Create(config, chain, {.part_bytes = {48}}).has_value());
}

// A follow-up turn (the stored prompt, then more) on a recurrent group that
// exports the prompt's checkpoint from inside the chunk: the loaded state
// goes into the block the step advances, not the export's block.
TEST(TierConnectorTest, AFollowUpTurnWithACheckpointExportLoadsTheState) {
  CacheConfig config = SmallHybrid();
  config.groups[2].checkpoint_blocks = 1;
  config.groups[2].speculative_blocks = 2;
  TierChain chain = ChainOf(MakeHostStore(std::uint64_t{1} << 30));
  Result<CacheManager> cache = CacheManager::Create(config);
  Result<TierConnector> connector = TierConnector::Create(config, chain);
  ASSERT_TRUE(cache && connector);
  Driver driver(config, *cache, *connector);
  const std::vector<TokenId> first = Prompt(700, 9);
  ASSERT_TRUE(driver.Run(first, true).has_value());
  std::vector<TokenId> follow_up = first;
  const std::vector<TokenId> more = Prompt(1300, 10);
  follow_up.insert(follow_up.end(), more.begin(), more.end());
  const std::uint32_t gpu_hit = driver.GpuHit(follow_up);
  ASSERT_GT(gpu_hit, 0u);
  ASSERT_TRUE(cache->ResetPrefixCache());
  std::optional<testing::Served> served = driver.Run(follow_up, false);
  ASSERT_TRUE(served.has_value());
  EXPECT_EQ(served->reused_tokens, gpu_hit);
  EXPECT_EQ(served->load, LoadState::kDone);
}

// A GPU hit past the cut to a scheduler block: what lies between the cut and
// the GPU's hit counts only if the tier holds it (the load reads only the
// tier), so a tier missing it adds nothing rather than failing every load.
TEST(TierConnectorTest, WhatOnlyTheGpuHoldsPastTheCutIsNotCounted) {
  const CacheConfig config = {
      .groups = {{.block_size = 64},
                 {.kind = GroupKind::kSlidingWindow,
                  .block_size = 64,
                  .sliding_window = 128},
                 {.kind = GroupKind::kRecurrent, .block_size = 256}},
      .num_blocks = 4096,
      .keys = {.hash_unit = 16}};
  TierChain chain = ChainOf(MakeHostStore(std::uint64_t{1} << 30));
  Result<CacheManager> cache = CacheManager::Create(config);
  Result<TierConnector> connector = TierConnector::Create(config, chain);
  ASSERT_TRUE(cache && connector);
  Driver driver(config, *cache, *connector);
  const std::vector<TokenId> prompt = Prompt(1500, 4);
  ASSERT_TRUE(driver.Run(prompt, true).has_value());
  const Request probe({.id = RequestId{80}}, prompt, cache->key_scheme());
  for (std::uint32_t end = 16; end <= 1400; end += 16)
    chain.Drop(probe.keys()[end / 16 - 1]);
  std::vector<TokenId> longer = prompt;
  const std::vector<TokenId> more = Prompt(500, 5);
  longer.insert(longer.end(), more.begin(), more.end());
  const std::uint32_t gpu_hit = driver.GpuHit(longer);
  ASSERT_GT(gpu_hit % 256, 0u);  // the GPU's hit is past the cut
  std::optional<testing::Served> served = driver.Run(longer, false);
  ASSERT_TRUE(served.has_value());
  EXPECT_EQ(served->reused_tokens, gpu_hit);
  EXPECT_EQ(connector->counters().loads_failed, 0u);
}

// A request that must compute every prompt position (prompt logprobs) takes
// nothing from the tiers.
TEST(TierConnectorTest, ARequestSkippingTheCacheTakesNothingFromTheTiers) {
  const CacheConfig config = SmallHybrid();
  TierChain chain = ChainOf(MakeHostStore(std::uint64_t{1} << 30));
  Result<CacheManager> cache = CacheManager::Create(config);
  Result<TierConnector> connector = TierConnector::Create(config, chain);
  ASSERT_TRUE(cache && connector);
  Driver driver(config, *cache, *connector);
  const std::vector<TokenId> prompt = Prompt(600, 6);
  ASSERT_TRUE(driver.Run(prompt, true).has_value());
  ASSERT_TRUE(cache->ResetPrefixCache());
  const Request skipping(
      {.id = RequestId{90}, .cache_read = CacheRead::kSkipped}, prompt,
      cache->key_scheme());
  const TierHit th = connector->Lookup(*cache, skipping);
  EXPECT_EQ(th.hit.num_tokens + th.num_external_tokens, 0u);
  const Request reading({.id = RequestId{91}}, prompt, cache->key_scheme());
  EXPECT_GT(connector->Lookup(*cache, reading).num_external_tokens, 0u);
}

// Misuse is refused before anything changes.
TEST(TierConnectorMisuseTest, RefusesCallsOutOfOrderOrForAnotherCache) {
  TierChain chain = ChainOf(MakeHostStore(std::uint64_t{1} << 20));
  const CacheConfig config = SmallHybrid();
  Result<CacheManager> cache = CacheManager::Create(config);
  Result<TierConnector> connector = TierConnector::Create(config, chain);
  ASSERT_TRUE(cache && connector);
  Driver driver(config, *cache, *connector);
  const std::vector<TokenId> prompt = Prompt(500, 1);
  ASSERT_TRUE(driver.Run(prompt, true).has_value());
  ASSERT_TRUE(cache->ResetPrefixCache());
  const Request r({.id = RequestId{50}}, prompt, cache->key_scheme());
  const TierHit th = connector->Lookup(*cache, r);
  ASSERT_GT(th.num_external_tokens, 0u);
  // A load before the allocation that places its blocks.
  EXPECT_THROW((void)connector->Load(*cache, r, th, NewBlocks{}), UsageError);
  EXPECT_EQ(
      connector->counters().loads_done + connector->counters().loads_failed,
      0u);
  // A request keyed for another cache.
  Result<KeyScheme> other = MakeKeyScheme({.hash_unit = 32});
  ASSERT_TRUE(other.has_value());
  const Request foreign({.id = RequestId{51}}, prompt, *other);
  EXPECT_THROW((void)connector->Lookup(*cache, foreign), UsageError);
  // An invalid config.
  EXPECT_FALSE(TierConnector::Create(CacheConfig{}, chain).has_value());
  // A hit without external tokens loads nothing.
  const TierHit plain{};
  EXPECT_EQ(connector->Load(*cache, r, plain, NewBlocks{}).state,
            LoadState::kDone);
}

}  // namespace
}  // namespace hkv
