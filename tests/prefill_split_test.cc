// Spec §8.5 vectors V-86 ... V-91 and V-35's junction: where prefill chunks
// stop so recurrent states land on usable checkpoints.
#include <gtest/gtest.h>

#include "test_util.h"

namespace hkv {
namespace {

using ::hkv::testing::Range;

CacheManager Hybrid(std::uint32_t block, std::uint32_t unit,
                    Speculation speculation = Speculation::kNone) {
  Result<CacheManager> cache = CacheManager::Create(
      {.groups = {{.block_size = block, .speculation = speculation},
                  {.kind = GroupKind::kRecurrent, .block_size = block}},
       .num_blocks = 16,
       .keys = {.hash_unit = unit}});
  EXPECT_TRUE(cache.has_value());
  return std::move(*cache);
}

// Chunks of a whole prompt under a budget, each split.
std::vector<std::uint32_t> Chunks(const CacheManager& cache,
                                  std::uint32_t prompt, PrefillChunk rules) {
  const Request r({.id = RequestId{1}}, Range(0, prompt), cache.key_scheme());
  std::vector<std::uint32_t> chunks;
  for (std::uint32_t done = 0; done < prompt;) {
    std::uint32_t budget =
        std::min(rules.max_num_scheduled_tokens, prompt - done);
    if (rules.long_prefill_threshold > 0) {
      budget = std::min(budget, rules.long_prefill_threshold);
    }
    rules.num_computed_tokens = done;
    rules.num_new_tokens = budget;
    const std::uint32_t n = cache.SplitPrefill(r, rules);
    if (n == 0) break;
    chunks.push_back(n);
    done += n;
  }
  return chunks;
}

TEST(PrefillSplitTest, V86_StopsAtBlockAndCheckpoint) {
  const CacheManager fine = Hybrid(512, 32);
  EXPECT_EQ(Chunks(fine, 10000, {}),
            (std::vector<std::uint32_t>{8192, 1536, 256, 16}));
  const CacheManager coarse = Hybrid(512, 512);
  EXPECT_EQ(Chunks(coarse, 10000, {}),
            (std::vector<std::uint32_t>{8192, 1536, 272}));
}

TEST(PrefillSplitTest, V87_ResumeInsideABlock) {
  const CacheManager cache = Hybrid(512, 32);
  const Request r({.id = RequestId{1}}, Range(0, 12000), cache.key_scheme());
  EXPECT_EQ(cache.SplitPrefill(
                r, {.num_computed_tokens = 9984, .num_new_tokens = 2016}),
            256u);
  EXPECT_EQ(cache.SplitPrefill(
                r, {.num_computed_tokens = 10240, .num_new_tokens = 1000}),
            512u);
}

TEST(PrefillSplitTest, V88_BlockLargerThanTheBudget) {
  const CacheManager cache = Hybrid(11392, 11392);
  const Request r({.id = RequestId{1}}, Range(0, 30000), cache.key_scheme());
  EXPECT_EQ(cache.SplitPrefill(
                r, {.num_new_tokens = 8192, .max_num_scheduled_tokens = 11392}),
            0u);
  EXPECT_EQ(Chunks(cache, 30000, {.max_num_scheduled_tokens = 8192}),
            (std::vector<std::uint32_t>{8192, 3200, 8192, 3200, 7216}));
}

TEST(PrefillSplitTest, V89_LongPrefillThreshold) {
  const CacheManager cache = Hybrid(512, 512);
  EXPECT_EQ(Chunks(cache, 1300, {.long_prefill_threshold = 384}),
            (std::vector<std::uint32_t>{384, 128, 384, 128, 276}));
}

TEST(PrefillSplitTest, V90_EagleCheckpointOneUnitLower) {
  const CacheManager eagle = Hybrid(1536, 128, Speculation::kEagle);
  const Request r({.id = RequestId{1}}, Range(0, 24576), eagle.key_scheme());
  EXPECT_EQ(eagle.SplitPrefill(
                r, {.num_computed_tokens = 23040, .num_new_tokens = 1536}),
            1408u);
  const CacheManager plain = Hybrid(1536, 128);
  const Request r2({.id = RequestId{2}}, Range(0, 24577), plain.key_scheme());
  EXPECT_EQ(plain.SplitPrefill(
                r2, {.num_computed_tokens = 23040, .num_new_tokens = 1537}),
            1536u);
}

TEST(PrefillSplitTest, V35_StopsAtTheSharedPrefixJunction) {
  const CacheManager cache = Hybrid(16, 16);
  const Request r({.id = RequestId{1}}, Range(0, 48), cache.key_scheme());
  EXPECT_EQ(cache.SplitPrefill(
                r, {.num_new_tokens = 48, .shared_prefix_boundary = 32}),
            32u);
}

// Attention blocks finer than the recurrent ones: chunks still end on
// recurrent block boundaries, or a state block would be keyed at its end
// while holding an earlier chunk's state.
TEST(PrefillSplitTest, ChunksEndOnRecurrentBlocks) {
  Result<CacheManager> cache = CacheManager::Create(
      {.groups = {{.block_size = 2},
                  {.kind = GroupKind::kRecurrent, .block_size = 4}},
       .num_blocks = 40,
       .keys = {.hash_unit = 2}});
  ASSERT_TRUE(cache.has_value());
  EXPECT_EQ(Chunks(*cache, 16, {.max_num_scheduled_tokens = 6}),
            (std::vector<std::uint32_t>{4, 4, 4, 2, 2}));
}

// Resend-only retention keeps states only where they were left: chunks also
// stop where a resend or a sibling at the junction would resume.
TEST(PrefillSplitTest, ResendOnlyRetentionStopsAtKeptPositions) {
  const auto chunks = [](std::optional<std::uint32_t> retention) {
    Result<CacheManager> cache = CacheManager::Create(
        {.groups = {{.block_size = 64},
                    {.kind = GroupKind::kRecurrent, .block_size = 64}},
         .num_blocks = 16,
         .keys = {.hash_unit = 16},
         .retention_interval = retention});
    EXPECT_TRUE(cache.has_value());
    return Chunks(
        *cache, 200,
        {.max_num_scheduled_tokens = 256, .shared_prefix_boundary = 100});
  };
  EXPECT_EQ(chunks(std::nullopt), (std::vector<std::uint32_t>{64, 128, 8}));
  EXPECT_EQ(chunks(0), (std::vector<std::uint32_t>{64, 32, 32, 64, 8}));
  EXPECT_EQ(chunks(128), (std::vector<std::uint32_t>{64, 64, 64, 8}));
}

TEST(PrefillSplitTest, AttentionOnlyModelsAreNotSplit) {
  Result<CacheManager> cache =
      CacheManager::Create({.groups = {{.block_size = 512}},
                            .num_blocks = 4,
                            .keys = {.hash_unit = 512}});
  const Request r({.id = RequestId{1}}, Range(0, 1000), cache->key_scheme());
  EXPECT_EQ(cache->SplitPrefill(r, {.num_new_tokens = 1000}), 1000u);
}

// A scheduler's prefill of one prompt: each step's chunk split, allocated,
// committed at its end; returns the steps taken.
std::uint32_t Prefill(CacheManager& cache, const Request& r,
                      std::uint32_t budget) {
  std::uint32_t steps = 0;
  for (std::uint32_t done = 0; done < r.num_tokens(); ++steps) {
    const std::uint32_t n = cache.SplitPrefill(
        r, {.num_computed_tokens = done,
            .num_new_tokens = std::min(budget, r.num_tokens() - done)});
    EXPECT_GT(n, 0u);
    if (n == 0) break;
    EXPECT_TRUE(
        cache.Allocate(r, {.num_computed_tokens = done, .num_new_tokens = n}));
    done += n;
    cache.Commit(r, done);
    cache.FinishStep();
  }
  return steps;
}

CacheManager SemanticReplayCache(std::vector<GroupSpec> groups) {
  Result<CacheManager> cache =
      CacheManager::Create({.groups = std::move(groups),
                            .num_blocks = 400,
                            .keys = {.hash_unit = 256},
                            .retention_interval = 0});
  EXPECT_TRUE(cache.has_value());
  return std::move(*cache);
}

// V-91: h = 256, full attention 2048 feeding an MTP draft, recurrent 256,
// resend-only retention; a 65,536-token prompt split by the scheduler at
// <= 8192 tokens a step, then sent again.
TEST(PrefillSplitTest, V91_SemanticReplay) {
  CacheManager cache = SemanticReplayCache(
      {{.block_size = 2048, .speculation = Speculation::kEagle},
       {.kind = GroupKind::kRecurrent, .block_size = 256}});
  const Request r({.id = RequestId{1}}, Range(0, 65536), cache.key_scheme());
  EXPECT_LE(Prefill(cache, r, 8192), 16u);
  cache.Free(r.id());
  const Request again({.id = RequestId{2}}, Range(0, 65536),
                      cache.key_scheme());
  EXPECT_GE(cache.Lookup(again).num_tokens, 65024u);

  const Request late({.id = RequestId{3}}, Range(0, 8449), cache.key_scheme());
  EXPECT_EQ(cache.SplitPrefill(
                late, {.num_computed_tokens = 6144, .num_new_tokens = 2305}),
            2048u);
}

// V-91 with a sliding-window draft (DFlash) and 4096-token chunks.
TEST(PrefillSplitTest, V91_SemanticReplayWithAWindowDraft) {
  CacheManager cache = SemanticReplayCache(
      {{.block_size = 2048, .speculation = Speculation::kEagle},
       {.kind = GroupKind::kRecurrent, .block_size = 256},
       {.kind = GroupKind::kSlidingWindow,
        .block_size = 2048,
        .speculation = Speculation::kEagle,
        .sliding_window = 4096}});
  const Request r({.id = RequestId{1}}, Range(0, 65536), cache.key_scheme());
  Prefill(cache, r, 4096);
  cache.Free(r.id());
  const Request again({.id = RequestId{2}}, Range(0, 65536),
                      cache.key_scheme());
  EXPECT_GE(cache.Lookup(again).num_tokens, 61440u);
}

}  // namespace
}  // namespace hkv
