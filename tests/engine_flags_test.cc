// The reference engine's flags for a configuration (hkv/engine_flags.h):
// the argv for what the engine at kEngineCommit runs, and the rule named
// for what it does not. python/tests/vllm_compat/test_engine_flags.py
// feeds the argv to the engine's own argument parser.
#include "hkv/engine_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace hkv {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

GroupSpec Group(GroupKind kind, std::uint32_t block) {
  return {.kind = kind, .block_size = block};
}

CacheConfig Cache(std::vector<GroupSpec> groups, std::uint32_t unit) {
  CacheConfig c;
  c.groups = std::move(groups);
  c.keys.hash_unit = unit;
  c.num_blocks = 100;
  return c;
}

CacheConfig Hybrid(RecurrentMode mode) {
  CacheConfig c = Cache({Group(GroupKind::kFullAttention, 2048),
                         Group(GroupKind::kRecurrent, 2048)},
                        2048);
  c.groups[1].recurrent_mode = mode;
  return c;
}

TEST(EngineFlags, OneAttentionGroupIsItsBlockAndTheDeployment) {
  const EngineFlags e =
      EngineFlagsFor(Cache({Group(GroupKind::kFullAttention, 256)}, 256),
                     {.tp = 2, .context_tokens = 131072});
  ASSERT_TRUE(e.runs()) << e.why_not;
  EXPECT_THAT(e.argv, ElementsAre("--block-size", "256",
                                  "--enable-prefix-caching", "--max-model-len",
                                  "131072", "--tensor-parallel-size", "2"));
  EXPECT_EQ(JoinedFlags({"--block-size", "256"}), "--block-size 256");
}

TEST(EngineFlags, RecurrentGroupsGetTheMambaBlockAndTheirCacheMode) {
  for (const auto& [mode, name] : {std::pair{RecurrentMode::kAlign, "align"},
                                   std::pair{RecurrentMode::kAll, "all"}}) {
    const EngineFlags e = EngineFlagsFor(Hybrid(mode), {});
    ASSERT_TRUE(e.runs()) << e.why_not;
    EXPECT_THAT(
        e.argv,
        ElementsAre("--block-size", "2048", "--mamba-block-size", "2048",
                    "--mamba-cache-mode", name, "--enable-prefix-caching",
                    "--tensor-parallel-size", "1"));
  }
  const EngineFlags none = EngineFlagsFor(Hybrid(RecurrentMode::kNone), {});
  EXPECT_FALSE(none.runs());
  EXPECT_TRUE(none.argv.empty());
}

TEST(EngineFlags, OneShardedGroupHashesInItsBlockTimesTheDcpWidth) {
  CacheConfig c = Cache({Group(GroupKind::kFullAttention, 64)}, 256);
  c.dcp = 4;
  const EngineFlags e = EngineFlagsFor(c, {});
  ASSERT_TRUE(e.runs()) << e.why_not;
  EXPECT_THAT(e.argv,
              ElementsAre("--block-size", "64", "--enable-prefix-caching",
                          "--tensor-parallel-size", "1",
                          "--decode-context-parallel-size", "4"));
  c.keys.hash_unit = 64;
  EXPECT_THAT(EngineFlagsFor(c, {}).why_not, HasSubstr("units of 256"));
}

TEST(EngineFlags, WhatTheEngineCannotRunNamesItsRule) {
  CacheConfig pools = Hybrid(RecurrentMode::kAlign);
  pools.group_pool_blocks = {50, 50};
  CacheConfig placement = Hybrid(RecurrentMode::kAlign);
  placement.retention = Retention::kPlacement;
  CacheConfig interval = Hybrid(RecurrentMode::kAlign);
  interval.retention_interval = 0;
  CacheConfig split_blocks = Cache({Group(GroupKind::kFullAttention, 2048),
                                    Group(GroupKind::kRecurrent, 256)},
                                   256);
  CacheConfig dcp = Hybrid(RecurrentMode::kAlign);
  dcp.dcp = 2;
  CacheConfig unit = Hybrid(RecurrentMode::kAlign);
  unit.keys.hash_unit = 256;
  const std::vector<std::pair<EngineFlags, const char*>> cases = {
      {EngineFlagsFor(pools, {}), "one block pool"},
      {EngineFlagsFor(placement, {}), "placement"},
      {EngineFlagsFor(interval, {}), "no retention interval"},
      {EngineFlagsFor(Hybrid(RecurrentMode::kAlign),
                      {.layout = Layout::kSplit}),
       "_align_hybrid_block_size"},
      {EngineFlagsFor(split_blocks, {}), "--mamba-block-size"},
      {EngineFlagsFor(dcp, {}), "context parallelism"},
      {EngineFlagsFor(unit, {}), "hash_block_size has no command-line flag"},
  };
  for (const auto& [flags, rule] : cases) {
    EXPECT_FALSE(flags.runs()) << rule;
    EXPECT_TRUE(flags.argv.empty()) << rule;
    EXPECT_THAT(flags.why_not, HasSubstr(rule));
  }
}

}  // namespace
}  // namespace hkv
