// Trace replay of hybrid models: group lists, chunked prefill, per-group
// residency.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hkv/group_list.h"
#include "hkv/limits.h"
#include "hkv/mooncake_trace.h"
#include "hkv/replay.h"
#include "replay_test_util.h"

namespace hkv {
namespace {

using ::testing::HasSubstr;

// 5 conversations of 6 turns, interleaved, all opening with the same
// 512-token system block (id 7): turn t of conversation c has ids
// 7, c*100 + 1..t+1 and 512(t + 1) + 100 + 37c tokens. Every request but the
// first hits at least the system block.
std::vector<TraceRequest> SharedPrefixConversations() {
  std::vector<TraceRequest> trace;
  for (std::uint32_t t = 0; t < 6; ++t) {
    for (std::uint32_t c = 0; c < 5; ++c) {
      TraceRequest request{.timestamp_ms = trace.size(),
                           .input_length = 512 * (t + 1) + 100 + 37 * c,
                           .hash_ids = {7}};
      for (std::uint64_t i = 1; i <= t + 1; ++i)
        request.hash_ids.push_back(c * 100 + i);
      trace.push_back(std::move(request));
    }
  }
  return trace;
}

std::vector<GroupSpec> Groups(std::string_view text) {
  Result<std::vector<GroupSpec>> groups = ParseGroupList(text);
  EXPECT_TRUE(groups.has_value()) << groups.error().message;
  return groups.value_or(std::vector<GroupSpec>{});
}

// Each request's hit: the growth of the total as the trace grows by it.
std::vector<std::uint64_t> HitsPerRequest(
    const std::vector<TraceRequest>& trace, const ReplayOptions& options) {
  std::vector<std::uint64_t> hits;
  std::uint64_t before = 0;
  for (std::size_t n = 1; n <= trace.size(); ++n) {
    const std::vector<TraceRequest> prefix(
        trace.begin(), trace.begin() + static_cast<std::ptrdiff_t>(n));
    const std::uint64_t total = testing::Replayed(prefix, options).hit_tokens;
    hits.push_back(total - before);
    before = total;
  }
  return hits;
}

TEST(ReplayGroupsTest, EmptyGroupListIsOneFullGroupOfTheBlockSize) {
  const std::vector<TraceRequest> trace = SharedPrefixConversations();
  const ReplayResult plain = testing::Replayed(trace, {.block_size = 16});
  const ReplayResult listed =
      testing::Replayed(trace, {.groups = Groups("full:16")});
  EXPECT_GT(plain.hit_tokens, 0u);
  EXPECT_EQ(listed.hit_tokens, plain.hit_tokens);
  ASSERT_EQ(plain.groups.size(), 1u);
  EXPECT_EQ(plain.groups[0].kind, "full");
  EXPECT_EQ(plain.groups[0].block_size, 16u);
  EXPECT_EQ(listed.groups[0].cached_blocks, plain.groups[0].cached_blocks);
}

// Request 0 caches 6 blocks; 1 hits 6 and adds 31; 2 hits 36 and recomputes
// the 37th into a second block under the same key; 3 adds 3; 4 hits 32 and
// adds 11: 52 blocks hold a key.
TEST(ReplayGroupsTest, CountsCachedBlocksIncludingRecomputedCopies) {
  const std::vector<TraceRequest> trace = {
      {.input_length = 100, .hash_ids = {0}},
      {.input_length = 600, .hash_ids = {0, 1}},
      {.input_length = 592, .hash_ids = {0, 1}},
      {.input_length = 50, .hash_ids = {2}},
      {.input_length = 700, .hash_ids = {0, 3}}};
  const ReplayResult r = testing::Replayed(trace, {.block_size = 16});
  EXPECT_EQ(r.hit_tokens, 1184u);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].cached_blocks, 52u);
}

TEST(ReplayGroupsTest, ChunkingDoesNotChangeFullAttentionHits) {
  const std::vector<TraceRequest> trace = SharedPrefixConversations();
  const ReplayResult whole = testing::Replayed(trace, {.block_size = 16});
  const ReplayResult chunked = testing::Replayed(
      trace, {.block_size = 16, .max_num_batched_tokens = 100});
  EXPECT_EQ(chunked.hit_tokens, whole.hit_tokens);
  EXPECT_EQ(chunked.groups[0].cached_blocks, whole.groups[0].cached_blocks);
}

// A recurrent group keeping a state at every block boundary can resume
// wherever full attention can.
TEST(ReplayGroupsTest, AllModeRecurrentGroupKeepsFullAttentionHits) {
  const std::vector<TraceRequest> trace = SharedPrefixConversations();
  const ReplayResult full =
      testing::Replayed(trace, {.groups = Groups("full:16")});
  const ReplayResult hybrid = testing::Replayed(
      trace, {.groups = Groups("full:16,recurrent:16:mode=all")});
  EXPECT_EQ(hybrid.hit_tokens, full.hit_tokens);
  ASSERT_EQ(hybrid.groups.size(), 2u);
  EXPECT_EQ(hybrid.groups[1].kind, "recurrent");
  EXPECT_EQ(hybrid.groups[1].block_size, 16u);
  EXPECT_EQ(hybrid.groups[1].cached_blocks, hybrid.groups[0].cached_blocks);
}

// Aligned recurrent states exist only at chunk ends: with a one-block budget
// every block ends a chunk, as in kAll; with a large one the hits shrink.
TEST(ReplayGroupsTest, AlignModeKeepsStatesAtChunkEnds) {
  const std::vector<TraceRequest> trace = SharedPrefixConversations();
  const ReplayResult full =
      testing::Replayed(trace, {.groups = Groups("full:16")});
  const ReplayResult per_block = testing::Replayed(
      trace,
      {.groups = Groups("full:16,recurrent:16"), .max_num_batched_tokens = 16});
  const ReplayResult whole =
      testing::Replayed(trace, {.groups = Groups("full:16,recurrent:16")});
  EXPECT_EQ(per_block.hit_tokens, full.hit_tokens);
  EXPECT_LT(whole.hit_tokens, full.hit_tokens);
  EXPECT_LT(whole.groups[1].cached_blocks, per_block.groups[1].cached_blocks);
}

// One 4,097-token prompt sent twice, 2048-token blocks and hash unit, the
// attention group feeding a draft model: the resend's lookup proves 4096
// and rewinds one block, so it resumes from the state at 2048. Spec §7.3
// stops the first chunk there under every retention, whether the recurrent
// kernel exports the prompt's checkpoint or not (with dense retention an
// exported checkpoint needs no stop).
TEST(ReplayGroupsTest, ResendReusesTheRewoundCheckpointUnderEveryRetention) {
  const TraceRequest prompt{.input_length = 4097,
                            .hash_ids = {1, 2, 3, 4, 5, 6, 7, 8, 9}};
  const std::vector<TraceRequest> trace = {prompt, prompt};
  for (const char* groups : {"full:2048:eagle,recurrent:2048:export",
                             "full:2048:eagle,recurrent:2048"}) {
    for (const std::optional<std::uint32_t> retention :
         {std::optional<std::uint32_t>{}, std::optional<std::uint32_t>{0},
          std::optional<std::uint32_t>{4096}}) {
      const ReplayResult result =
          testing::Replayed(trace, {.hash_unit = 2048,
                                    .groups = Groups(groups),
                                    .retention_interval = retention});
      EXPECT_EQ(result.hit_tokens, 2048u)
          << groups << ", retention " << retention.value_or(~0u);
    }
  }
}

TEST(ReplayGroupsTest, EagleLowersEveryNonZeroHitByOneUnit) {
  const std::vector<TraceRequest> trace = SharedPrefixConversations();
  const std::vector<std::uint64_t> plain = HitsPerRequest(
      trace, {.groups = Groups("full:16,recurrent:16:mode=all")});
  const std::vector<std::uint64_t> eagle = HitsPerRequest(
      trace, {.groups = Groups("full:16:eagle,recurrent:16:mode=all")});
  ASSERT_EQ(eagle.size(), plain.size());
  for (std::size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(eagle[i], plain[i] > 0 ? plain[i] - 16 : 0) << "request " << i;
  }
  EXPECT_EQ(plain[0], 0u);
  EXPECT_GT(plain[1], 0u);
}

TEST(ReplayGroupsTest, CountsHitsShortOfTheChainByCause) {
  const std::vector<TraceRequest> trace = SharedPrefixConversations();
  const ReplayResult eagle = testing::Replayed(
      trace, {.groups = Groups("full:16:eagle,recurrent:16:mode=all")});
  EXPECT_GT(eagle.speculative_rewind.requests, 0u);
  EXPECT_EQ(eagle.speculative_rewind.tokens,
            16 * eagle.speculative_rewind.requests);
  EXPECT_EQ(eagle.no_checkpoint.requests, 0u);
  const ReplayResult plain = testing::Replayed(
      trace, {.groups = Groups("full:16,recurrent:16:mode=all")});
  EXPECT_EQ(plain.speculative_rewind.requests + plain.no_checkpoint.requests +
                plain.window_not_covered.requests + plain.evicted.requests,
            0u);
}

TEST(ReplayGroupsTest, HashUnitDefaultsToTheSmallestScaledBlock) {
  const std::vector<TraceRequest> trace = SharedPrefixConversations();
  const std::vector<GroupSpec> groups = Groups("full:16,recurrent:32");
  const ReplayResult by_default =
      testing::Replayed(trace, {.groups = groups, .dcp = 4});
  const ReplayResult explicit_unit =
      testing::Replayed(trace, {.hash_unit = 32, .groups = groups, .dcp = 4});
  ASSERT_EQ(by_default.groups.size(), 2u);
  EXPECT_EQ(by_default.groups[0].block_size, 64u);  // sharded over 4 ranks
  EXPECT_EQ(by_default.groups[1].block_size, 32u);  // states: never sharded
  EXPECT_GT(by_default.hit_tokens, 0u);
  EXPECT_EQ(by_default.hit_tokens, explicit_unit.hit_tokens);
  EXPECT_EQ(by_default.groups[0].cached_blocks,
            explicit_unit.groups[0].cached_blocks);
}

// Capacity 160 tokens: 10 blocks per group, 20 in all. 200 tokens need 13
// full-attention blocks, within the pool, but 26 with the window's: chunks
// of 64 fit twice, the third fails, and the request is rejected. Its two
// committed chunks stay cached, so a 100-token prompt then hits 96 tokens.
TEST(ReplayGroupsTest, RejectsARequestWhoseChunkDoesNotFitTheIdlePool) {
  const ReplayResult r =
      testing::Replayed({{.input_length = 200, .hash_ids = {0}},
                         {.input_length = 100, .hash_ids = {0}}},
                        {.capacity_tokens = 160,
                         .groups = Groups("full:16,sliding:16:window=1000"),
                         .max_num_batched_tokens = 64});
  EXPECT_EQ(r.rejected_requests, 1u);
  EXPECT_EQ(r.hit_tokens, 96u);
  EXPECT_EQ(r.groups[0].cached_blocks, 8u);
  EXPECT_EQ(r.groups[1].cached_blocks, 8u);
}

TEST(ReplayGroupsTest, RejectsAnInvalidGroupListNamingTheGroup) {
  const std::vector<TraceRequest> trace = SharedPrefixConversations();
  Error e = testing::ReplayFailure(
      trace, {.groups = Groups("full:16,sliding:16:window=64"), .dcp = 2});
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("group 1: a sliding-window group cannot "
                                   "be DCP-sharded"));
  e = testing::ReplayFailure(trace,
                             {.hash_unit = 48, .groups = Groups("full:64")});
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("hash unit 48"));
  e = testing::ReplayFailure(trace, {.max_num_batched_tokens = 0});
  EXPECT_THAT(e.message, HasSubstr("max_num_batched_tokens"));
  e = testing::ReplayFailure(
      trace, {.capacity_tokens = 100, .groups = Groups("full:16,full:128")});
  EXPECT_THAT(e.message,
              HasSubstr("capacity of 100 tokens is below one block of 128"));
}

// A pool beyond the limit: the capacity's fault (an argument), or the
// trace's when every block is kept.
TEST(ReplayGroupsTest, APoolBeyondTheLimitNamesItsCause) {
  const std::vector<TraceRequest> trace = {
      {.input_length = 16, .hash_ids = {0}}};
  Error e = testing::ReplayFailure(
      trace, {.block_size = 16, .capacity_tokens = 1ull << 40});
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("capacity_tokens 1099511627776 makes a "
                                   "pool of 68719476736 blocks"));
  // One request of the most tokens, one block per token.
  TraceRequest longest{.input_length = kMaxTokensPerRequest};
  for (std::uint64_t id = 0; id < kMaxTokensPerRequest / 512; ++id) {
    longest.hash_ids.push_back(id);
  }
  e = testing::ReplayFailure({longest}, {.block_size = 1});
  EXPECT_EQ(e.code, ErrorCode::kInfeasible);
  EXPECT_THAT(e.message, HasSubstr("keeping every block of the trace"));
}

}  // namespace
}  // namespace hkv
