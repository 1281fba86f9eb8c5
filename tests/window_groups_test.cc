// Spec §8.3 vectors V-37 ... V-41, V-43, V-44: sliding-window and
// chunked-local groups at manager level.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string_view>

#include "groups/chunked_local.h"
#include "groups/full_attention.h"
#include "groups/sliding_window.h"
#include "test_util.h"

namespace hkv {
namespace {

using ::hkv::internal::BlockPool;
using ::hkv::internal::GroupGeometry;
using ::hkv::internal::GroupHit;
using ::hkv::internal::GroupTable;
using ::testing::ElementsAreArray;

constexpr GroupId kMembers[] = {GroupId{0}};

// A group of `block`-token blocks alone in a cache: the cache's facts and
// the group's.
struct Layout {
  internal::CacheFacts cache;
  GroupGeometry group;
};

Layout Geometry(std::uint32_t block, std::uint32_t unit,
                std::uint32_t alignment) {
  return {.cache = {.hash_unit = unit,
                    .alignment = alignment,
                    .scheduler_block = block},
          .group = {.block_size = block}};
}

// A request of 2-token blocks (plus `extra` tokens) whose blocks marked 'T'
// in `pattern` are cached in `pool`.
Request CachePattern(BlockPool& pool, std::string_view pattern,
                     std::uint32_t extra) {
  const KeyScheme scheme = *MakeKeyScheme({.hash_unit = 2});
  const auto tokens = 2 * static_cast<TokenId>(pattern.size()) + extra;
  Request r({.id = RequestId{1}}, testing::Range(0, tokens), scheme);
  for (std::uint32_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == 'T') {
      pool.CacheFull(pool.AllocateOne(), {.hash = r.keys()[i]}, 2 * (i + 1));
    }
  }
  return r;
}

GroupHit Find(const internal::GroupManager& manager, const Request& r,
              std::uint32_t max_length) {
  return manager.FindLongestHit(
      {.keys = r.keys(), .max_length = max_length, .members = kMembers});
}

TEST(WindowGroupsTest, V37_WindowHitIsTheLastFullWindow) {
  const std::vector<std::pair<std::string_view, std::uint32_t>> cases = {
      {"FFFFFFFFFF", 0},  {"T", 1},           {"TF", 1},   {"TT", 2},
      {"TTF", 2},         {"TTT", 3},         {"TTTF", 3}, {"TTFTFFTTFTTT", 12},
      {"TTFTFFTTFFF", 8}, {"TTFTFFTTFFFT", 8}};
  for (const auto& [pattern, expected] : cases) {
    BlockPool pool(64, internal::Caching::kEnabled);
    const Layout window_layout = Geometry(2, 2, 2);
    internal::SlidingWindowManager window(
        pool, window_layout.cache, window_layout.group,
        {.kind = GroupKind::kSlidingWindow, .sliding_window = 4});
    const Request r = CachePattern(pool, pattern, 0);
    const GroupHit hit =
        Find(window, r, 2 * static_cast<std::uint32_t>(pattern.size()));
    EXPECT_EQ(hit.num_tokens, 2 * expected) << pattern;
    ASSERT_EQ(hit.blocks[0].size(), expected) << pattern;
    for (std::uint32_t i = 0; i + 2 < expected; ++i) {
      EXPECT_EQ(hit.blocks[0][i], kNullBlock) << pattern;  // outside the window
    }
  }
}

TEST(WindowGroupsTest, V38_ChunkedLocalHitStartsAtTheCurrentChunk) {
  struct Case {
    std::string_view pattern;
    std::uint32_t tail;
    std::uint32_t expected;
  };
  const std::vector<Case> cases = {
      {"T", 0, 1},           {"T", 1, 1},           {"TF", 0, 2},
      {"TF", 1, 2},          {"TT", 0, 2},          {"TT", 1, 2},
      {"TTF", 0, 2},         {"TTF", 1, 2},         {"TTT", 0, 3},
      {"TTT", 1, 3},         {"TTTF", 0, 4},        {"TTTF", 1, 4},
      {"FFFFFFFFT", 1, 9},   {"TTTTTTTTT", 1, 9},   {"TTTTTTTTF", 1, 8},
      {"FFFFFFFFTT", 1, 10}, {"FFFFFFFFTF", 0, 10}, {"TTTTTTTTTF", 1, 10},
      {"FFFFFFFFFT", 0, 10}, {"TTTTTTTTFT", 1, 10}, {"FFFFFFFFFF", 0, 10},
      {"FFFFFFFFFF", 1, 10}};
  for (const Case& c : cases) {
    BlockPool pool(64, internal::Caching::kEnabled);
    const Layout chunked_layout = Geometry(2, 2, 2);
    internal::ChunkedLocalManager chunked(
        pool, chunked_layout.cache, chunked_layout.group,
        {.kind = GroupKind::kChunkedLocal, .chunk_size = 4});
    const Request r = CachePattern(pool, c.pattern, c.tail);
    const auto max_length =
        2 * static_cast<std::uint32_t>(c.pattern.size()) + c.tail;
    EXPECT_EQ(Find(chunked, r, max_length).num_tokens, 2 * c.expected)
        << c.pattern << " tail " << c.tail;
  }
}

TEST(WindowGroupsTest, V39_FineWindowHitEndsOnAUnitBoundary) {
  BlockPool pool(16, internal::Caching::kEnabled);
  const Layout window_layout = Geometry(4, 2, 2);
  internal::SlidingWindowManager window(
      pool, window_layout.cache, window_layout.group,
      {.kind = GroupKind::kSlidingWindow, .sliding_window = 8});
  const KeyScheme scheme = *MakeKeyScheme({.hash_unit = 2});
  const Request r({.id = RequestId{1}}, testing::Range(0, 8), scheme);
  const BlockId b10 = pool.AllocateOne();
  const BlockId b11 = pool.AllocateOne();
  pool.CacheFull(b10, {.hash = r.keys()[1]}, 4);
  pool.CacheFull(b11, {.hash = r.keys()[3]}, 8);
  const GroupHit hit = Find(window, r, 8);
  EXPECT_EQ(hit.num_tokens, 8u);
  EXPECT_THAT(hit.blocks[0], ElementsAreArray({b10, b11}));
}

internal::AllocationDemand Demand(std::uint32_t tokens,
                                  std::span<const BlockId> hit,
                                  std::uint32_t local) {
  return {.num_slots = tokens,
          .num_main = tokens,
          .num_local_computed = local,
          .num_computed = local,
          .hit = hit};
}

// A table of `n` fresh blocks.
GroupTable FreshTable(BlockPool& pool, std::uint32_t n) {
  GroupTable table;
  pool.Allocate(n, table.blocks);
  return table;
}

std::size_t NumNull(const GroupTable& table) {
  return static_cast<std::size_t>(
      std::count(table.blocks.begin(), table.blocks.end(), kNullBlock));
}

TEST(WindowGroupsTest, V40_WindowReleasesBlocksThatLeftIt) {
  BlockPool pool(16, internal::Caching::kEnabled);
  const Layout window_layout = Geometry(2, 2, 2);
  internal::SlidingWindowManager window(
      pool, window_layout.cache, window_layout.group,
      {.kind = GroupKind::kSlidingWindow, .sliding_window = 4});
  GroupTable table = FreshTable(pool, 11);
  const std::vector<BlockId> original = table.blocks;
  const std::vector<std::pair<std::uint32_t, std::size_t>> steps = {
      {0, 0}, {4, 0}, {5, 1}, {6, 1}, {7, 2}, {11, 4}};
  for (const auto& [processed, nulls] : steps) {
    window.RemoveSkippedBlocks(table, processed);
    EXPECT_EQ(NumNull(table), nulls) << processed;
    for (std::size_t i = 0; i < nulls; ++i)
      EXPECT_EQ(table.blocks[i], kNullBlock);
  }
  // The last call freed blocks 3 then 2: both uncached, so both went to the
  // front of the queue in that order.
  const std::vector<BlockId> queue = pool.FreeQueueSnapshot();
  EXPECT_EQ(queue[0], original[3]);
  EXPECT_EQ(queue[1], original[2]);
}

TEST(WindowGroupsTest, V41_ChunkedLocalReleasesEarlierChunks) {
  BlockPool pool(16, internal::Caching::kEnabled);
  const Layout chunked_layout = Geometry(2, 2, 2);
  internal::ChunkedLocalManager chunked(
      pool, chunked_layout.cache, chunked_layout.group,
      {.kind = GroupKind::kChunkedLocal, .chunk_size = 4});
  GroupTable table = FreshTable(pool, 8);
  const std::vector<std::pair<std::uint32_t, std::size_t>> steps = {
      {0, 0}, {4, 2}, {6, 2}, {12, 6}};
  for (const auto& [processed, nulls] : steps) {
    chunked.RemoveSkippedBlocks(table, processed);
    EXPECT_EQ(NumNull(table), nulls) << processed;
  }
}

// R-SWA: full attention whose decode reads the prompt (16 tokens) and the
// last 8 outputs; b = 4.
TEST(WindowGroupsTest, V42_OutputWindowReleasesTheGapAfterThePrompt) {
  BlockPool pool(16, internal::Caching::kEnabled);
  const Layout attention_layout = Geometry(4, 4, 4);
  internal::FullAttentionManager attention(
      pool, attention_layout.cache, attention_layout.group,
      {.kind = GroupKind::kFullAttention, .output_window = 8});
  GroupTable table = FreshTable(pool, 10);
  table.num_prompt_tokens = 16;
  attention.RemoveSkippedBlocks(table, 24);  // outputs 16-23 are read
  EXPECT_EQ(NumNull(table), 0u);
  attention.RemoveSkippedBlocks(table, 28);
  EXPECT_EQ(NumNull(table), 1u);
  EXPECT_EQ(table.blocks[4], kNullBlock);
  attention.RemoveSkippedBlocks(table, 36);
  EXPECT_EQ(NumNull(table), 3u);
  EXPECT_EQ(table.blocks[5], kNullBlock);
  EXPECT_EQ(table.blocks[6], kNullBlock);
  // Plain full attention releases nothing.
  const Layout plain_layout = Geometry(4, 4, 4);
  internal::FullAttentionManager plain(
      pool, plain_layout.cache, plain_layout.group,
      {.kind = GroupKind::kFullAttention, .output_window = 0});
  GroupTable whole = FreshTable(pool, 4);
  whole.num_prompt_tokens = 4;
  plain.RemoveSkippedBlocks(whole, 16);
  EXPECT_EQ(NumNull(whole), 0u);
}

// Through the cache: the released output blocks stay cached, so a later
// request carrying the same conversation still hits them.
TEST(WindowGroupsTest, OutputWindowBlocksStayCachedAfterRelease) {
  internal::CacheCore cache({.groups = {{.block_size = 4, .output_window = 8}},
                             .num_blocks = 32,
                             .keys = {.hash_unit = 4}});
  Request r({.id = RequestId{1}}, ::hkv::testing::Range(0, 16),
            cache.key_scheme());
  ASSERT_TRUE(cache.Allocate(r, {.num_new_tokens = 16}));
  cache.Commit(r, 16);
  std::uint32_t computed = 16;
  for (TokenId t = 100; t < 120; ++t) {
    r.AppendTokens(std::vector<TokenId>{t});
    ASSERT_TRUE(cache.Allocate(
        r, {.num_computed_tokens = computed, .num_new_tokens = 1}));
    cache.Commit(r, ++computed);
  }
  // 36 tokens computed: outputs [16, 28) are out of the window.
  const std::vector<BlockId> table = ::hkv::testing::Table(cache, r.id());
  EXPECT_NE(table[3], kNullBlock);
  EXPECT_EQ(table[4], kNullBlock);
  EXPECT_EQ(table[5], kNullBlock);
  EXPECT_NE(table[7], kNullBlock);
  EXPECT_TRUE(cache.CheckInvariants());
  const Request next({.id = RequestId{2}},
                     std::vector<TokenId>(r.tokens().begin(), r.tokens().end()),
                     cache.key_scheme());
  EXPECT_EQ(cache.Lookup(next).num_tokens, 32u);
}

TEST(WindowGroupsTest, V43_PredictorCountsEvictableHitBlocks) {
  BlockPool pool(64, internal::Caching::kEnabled);
  const Layout window_layout = Geometry(2, 2, 2);
  internal::SlidingWindowManager window(
      pool, window_layout.cache, window_layout.group,
      {.kind = GroupKind::kSlidingWindow, .sliding_window = 4});
  std::vector<BlockId> real;
  pool.Allocate(10, real);
  pool.Free(real);  // cached nowhere, but free (ref 0): evictable
  const GroupTable empty;
  EXPECT_EQ(window.NumBlocksToAllocate(empty, Demand(40, real, 0)), 20u);
  std::vector<BlockId> half(5, kNullBlock);
  half.insert(half.end(), real.begin(), real.begin() + 5);
  EXPECT_EQ(window.NumBlocksToAllocate(empty, Demand(40, half, 0)), 15u);
}

TEST(WindowGroupsTest, V44_AllocatorTakesWhatThePredictorCounted) {
  BlockPool pool(8, internal::Caching::kEnabled);
  const Layout window_layout = Geometry(2, 2, 2);
  internal::SlidingWindowManager window(
      pool, window_layout.cache, window_layout.group,
      {.kind = GroupKind::kSlidingWindow, .sliding_window = 4});
  const BlockId hit_block = pool.AllocateOne();
  pool.Free(std::vector<BlockId>{hit_block});
  const std::vector<BlockId> hit = {hit_block};
  GroupTable table;
  EXPECT_EQ(window.NumBlocksToAllocate(table, Demand(4, hit, 2)), 2u);
  const std::uint32_t free_before = pool.num_free_blocks();
  window.AdoptHit(table, Demand(4, hit, 2));
  std::vector<BlockId> placed;
  internal::CopyLog log;
  window.AllocateNew(table, Demand(4, {}, 2), placed, log);
  EXPECT_EQ(placed.size(), 1u);
  EXPECT_EQ(table.blocks.size(), 2u);
  EXPECT_EQ(free_before - pool.num_free_blocks(), 2u);
}

TEST(WindowGroupsTest, V46_ScratchRingReusesFreedPagesFirst) {
  internal::CacheCore cache(CacheConfig{.groups = {{.kind = GroupKind::kScratch,
                                                    .block_size = 16,
                                                    .scratch_blocks = 1}},
                                        .num_blocks = 8,
                                        .keys = {.hash_unit = 16}});
  Request r0({.id = RequestId{0}}, testing::Range(0, 16), cache.key_scheme());
  const Request r1({.id = RequestId{1}}, testing::Range(0, 16),
                   cache.key_scheme());
  const auto b0 = cache.Allocate(r0, {.num_new_tokens = 16})->blocks[0];
  const auto b1 = cache.Allocate(r1, {.num_new_tokens = 16})->blocks[0];
  ASSERT_EQ(b0.size(), 1u);
  ASSERT_EQ(b1.size(), 1u);
  EXPECT_NE(b0[0], b1[0]);
  r0.AppendTokens(testing::Range(16, 48));
  EXPECT_TRUE(
      cache.Allocate(r0, {.num_computed_tokens = 16, .num_new_tokens = 32})
          ->blocks[0]
          .empty());
  cache.Commit(r0, 48);
  cache.Free(r0.id());
  const Request r2({.id = RequestId{2}}, testing::Range(0, 16),
                   cache.key_scheme());
  EXPECT_EQ(cache.Lookup(r2).num_tokens, 0u);
  EXPECT_EQ(cache.Allocate(r2, {.num_new_tokens = 16})->blocks[0],
            std::vector<BlockId>{b0[0]});
}

}  // namespace
}  // namespace hkv
