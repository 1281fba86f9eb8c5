// Every misuse of the cache's calls the hardening issue found, and their
// siblings: each is refused with a UsageError naming the argument, and the
// cache's state (tests/misuse_util.h) is what it was before the call.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "misuse_util.h"
#include "test_util.h"

namespace hkv {
namespace {

using ::hkv::testing::Range;
using ::hkv::testing::RefusedUnchanged;
using internal::CacheCore;
using ::testing::HasSubstr;

constexpr std::uint32_t kMax32 = std::numeric_limits<std::uint32_t>::max();

CacheConfig Full16(std::uint32_t num_blocks = 20) {
  return {.groups = {{.block_size = 16}},
          .num_blocks = num_blocks,
          .events = KvEventMode::kEnabled};
}

Request Make(const CacheCore& cache, std::uint64_t id,
             const std::vector<TokenId>& tokens) {
  return Request({.id = RequestId{id}}, tokens, cache.key_scheme());
}

// Runs a request through allocate and commit, then frees it: its blocks
// stay cached.
void Cache(CacheCore& cache, std::uint64_t id, std::vector<TokenId> tokens) {
  const Request r = Make(cache, id, tokens);
  const auto n = static_cast<std::uint32_t>(tokens.size());
  ASSERT_TRUE(cache.Allocate(r, {.num_new_tokens = n}));
  cache.Commit(r, n);
  cache.Free(r.id());
}

// The case: 40 new tokens and 2^32 - 1 lookahead slots took 0
// blocks (the slot count wrapped in BlocksFor).
TEST(CacheMisuseTest, AllocateRefusesLookaheadBeyondMaxModelLen) {
  CacheCore cache(Full16());
  const Request r = Make(cache, 1, Range(0, 40));
  EXPECT_THAT(RefusedUnchanged(cache,
                               [&] {
                                 (void)cache.Allocate(
                                     r, {.num_new_tokens = 40,
                                         .num_lookahead_tokens = kMax32});
                               }),
              HasSubstr("num_lookahead_tokens 4294967295 exceeds "
                        "max_model_len 16777216"));
  // Up to max_model_len it is a lookahead: its blocks are counted, and 2^20
  // of them do not fit 19.
  EXPECT_FALSE(cache.Allocate(
      r, {.num_new_tokens = 40, .num_lookahead_tokens = kMaxTokensPerRequest}));
  EXPECT_FALSE(cache.HoldsBlocks(r.id()));
}

TEST(CacheMisuseTest, LookaheadSlotsStopAtMaxModelLen) {
  CacheConfig config = Full16();
  config.max_model_len = 64;
  CacheCore cache(config);
  const Request r = Make(cache, 1, Range(0, 40));
  EXPECT_THAT(RefusedUnchanged(cache,
                               [&] {
                                 (void)cache.Allocate(
                                     r, {.num_new_tokens = 40,
                                         .num_lookahead_tokens = 65});
                               }),
              HasSubstr("num_lookahead_tokens 65 exceeds max_model_len 64"));
  // 40 + 64 slots, capped at 64 tokens: 4 blocks.
  std::optional<NewBlocks> placed =
      cache.Allocate(r, {.num_new_tokens = 40, .num_lookahead_tokens = 64});
  ASSERT_TRUE(placed);
  EXPECT_EQ(placed->blocks[0].size(), 4u);
}

// Sums of 32-bit token counts wrapped: 16 hit tokens + 2^32 - 16 new ones
// made 0.
TEST(CacheMisuseTest, AllocateRefusesTokenSumsBeyondMaxModelLen) {
  CacheCore cache(Full16());
  Cache(cache, 0, Range(0, 33));
  const Request r = Make(cache, 1, Range(0, 33));
  const CacheHit hit = cache.Lookup(r);
  ASSERT_EQ(hit.num_tokens, 32u);
  EXPECT_THAT(
      RefusedUnchanged(cache,
                       [&] {
                         (void)cache.Allocate(
                             r, {.num_new_tokens = kMax32 - 31, .hit = &hit});
                       }),
      HasSubstr("num_computed_tokens 0 + hit 32 + num_external_computed_tokens "
                "0 + num_new_tokens 4294967264 = 4294967296 tokens exceed "
                "max_model_len 16777216"));
  EXPECT_THAT(RefusedUnchanged(cache,
                               [&] {
                                 (void)cache.Allocate(
                                     r, {.num_external_computed_tokens = kMax32,
                                         .num_new_tokens = 1});
                               }),
              HasSubstr("= 4294967296 tokens exceed max_model_len"));
  EXPECT_TRUE(cache.Allocate(r, {.num_new_tokens = 1, .hit = &hit}));
}

TEST(CacheMisuseTest, AllocateRefusesComputedTokensTheBlocksDoNotCover) {
  CacheCore cache(Full16());
  const Request r = Make(cache, 1, Range(0, 40));
  // A request holding no blocks has computed nothing.
  EXPECT_THAT(
      RefusedUnchanged(cache,
                       [&] {
                         (void)cache.Allocate(r, {.num_computed_tokens = 5,
                                                  .num_new_tokens = 5});
                       }),
      HasSubstr("num_computed_tokens 5 beyond the 0 tokens the request's "
                "blocks cover"));
  ASSERT_TRUE(cache.Allocate(r, {.num_new_tokens = 20}));
  EXPECT_THAT(RefusedUnchanged(cache,
                               [&] {
                                 (void)cache.Allocate(
                                     r, {.num_computed_tokens = 21,
                                         .num_new_tokens = 1});
                               }),
              HasSubstr("num_computed_tokens 21 beyond the 20 tokens"));
  EXPECT_THAT(RefusedUnchanged(cache,
                               [&] {
                                 (void)cache.Allocate(
                                     r, {.num_computed_tokens = 20,
                                         .num_new_tokens = 4,
                                         .num_in_flight_tokens = 21});
                               }),
              HasSubstr("num_in_flight_tokens 21 exceeds the 20 computed"));
}

TEST(CacheMisuseTest, AllocateRefusesAHitOfAnotherRequest) {
  CacheCore cache(Full16());
  Cache(cache, 0, Range(0, 40));
  const Request r1 = Make(cache, 1, Range(0, 40));
  const Request r2 = Make(cache, 2, Range(0, 40));
  const CacheHit hit_of_r2 = cache.Lookup(r2);
  ASSERT_EQ(hit_of_r2.num_tokens, 32u);
  EXPECT_THAT(RefusedUnchanged(cache,
                               [&] {
                                 (void)cache.Allocate(r1, {.num_new_tokens = 8,
                                                           .hit = &hit_of_r2});
                               }),
              HasSubstr("the hit was looked up for request 2, not for "
                        "request 1"));
  EXPECT_TRUE(cache.Allocate(r2, {.num_new_tokens = 8, .hit = &hit_of_r2}));
  // An empty lookup result adopts nothing, but its miss cause and prefix
  // boundary would be counted for the wrong request.
  const Request r3 = Make(cache, 3, Range(500, 540));
  const CacheHit empty_of_r3 = cache.Lookup(r3);
  ASSERT_EQ(empty_of_r3.num_tokens, 0u);
  EXPECT_THAT(
      RefusedUnchanged(cache,
                       [&] {
                         (void)cache.Allocate(
                             r1, {.num_new_tokens = 8, .hit = &empty_of_r3});
                       }),
      HasSubstr("looked up for request 3, not for request 1"));
}

// The same id for another prompt (e.g. a caller reusing ids): the hit's
// prefix is not the request's.
TEST(CacheMisuseTest, AllocateRefusesAHitOfAnotherPromptUnderTheSameId) {
  CacheCore cache(Full16());
  Cache(cache, 0, Range(0, 40));
  const Request looked_up = Make(cache, 1, Range(0, 40));
  const CacheHit hit = cache.Lookup(looked_up);
  ASSERT_EQ(hit.num_tokens, 32u);
  const Request other = Make(cache, 1, Range(100, 140));
  EXPECT_THAT(
      RefusedUnchanged(cache,
                       [&] {
                         (void)cache.Allocate(
                             other, {.num_new_tokens = 8, .hit = &hit});
                       }),
      HasSubstr("request 1 no longer starts with the 32 tokens its hit was "
                "looked up for"));
}

TEST(CacheMisuseTest, AllocateAndTruncateHitRefuseAHitOfAnotherCache) {
  CacheCore cache(Full16());
  CacheCore other(Full16());
  for (CacheCore* c : {&cache, &other}) Cache(*c, 0, Range(0, 40));
  const Request r = Make(cache, 1, Range(0, 40));
  const CacheHit foreign = other.Lookup(r);
  ASSERT_EQ(foreign.num_tokens, 32u);
  EXPECT_THAT(RefusedUnchanged(cache,
                               [&] {
                                 (void)cache.Allocate(
                                     r, {.num_new_tokens = 8, .hit = &foreign});
                               }),
              HasSubstr("the hit comes from another cache's lookup"));
  EXPECT_THROW((void)cache.TruncateHit(foreign, 16), UsageError);
  // Made by hand, not by a lookup.
  const CacheHit forged{.num_tokens = 16, .blocks = {{BlockId{1}}}};
  EXPECT_THAT(RefusedUnchanged(cache,
                               [&] {
                                 (void)cache.Allocate(
                                     r, {.num_new_tokens = 8, .hit = &forged});
                               }),
              HasSubstr("the hit was not made by a lookup"));
  // A truncated hit keeps its origin.
  const CacheHit cut = cache.TruncateHit(cache.Lookup(r), 16);
  EXPECT_TRUE(cache.Allocate(r, {.num_new_tokens = 24, .hit = &cut}));
}

TEST(CacheMisuseTest, StaleHitIsRefusedAndChangesNothing) {
  CacheCore cache(Full16(4));
  Cache(cache, 0, Range(0, 33));
  const Request r = Make(cache, 1, Range(0, 33));
  const CacheHit hit = cache.Lookup(r);
  ASSERT_EQ(hit.num_tokens, 32u);
  Cache(cache, 2, Range(100, 148));  // evicts the hit's blocks
  EXPECT_THAT(
      RefusedUnchanged(
          cache,
          [&] { (void)cache.Allocate(r, {.num_new_tokens = 1, .hit = &hit}); }),
      HasSubstr("look the request up again"));
}

// The case: groups full:8 + recurrent:8, hash unit 2. Commit(14)
// after Commit(16) moved the recurrent group's committed blocks back, and
// the next Commit(16) keyed a block a second time (an invariant of the
// pool). A commit below the last one is refused; the same count again is a
// no-op.
TEST(CacheMisuseTest, CommitBelowCommittedIsRefusedAndRepeatingIsANoOp) {
  CacheCore cache({.groups = {{.block_size = 8},
                              {.kind = GroupKind::kRecurrent, .block_size = 8}},
                   .num_blocks = 20,
                   .keys = {.hash_unit = 2}});
  // A 15-token prompt (its checkpoint at 14) and 3 outputs.
  Request r = Make(cache, 1, Range(0, 15));
  r.AppendTokens(Range(15, 18));
  ASSERT_TRUE(cache.Allocate(r, {.num_new_tokens = 18}));
  cache.Commit(r, 16);
  EXPECT_THAT(RefusedUnchanged(cache, [&] { cache.Commit(r, 14); }),
              HasSubstr("commit of 14 tokens below the 16 the request "
                        "committed (or adopted) before"));
  const std::string before = internal::StateSnapshot(cache);
  cache.Commit(r, 16);
  EXPECT_EQ(internal::StateSnapshot(cache), before);
  cache.Commit(r, 18);
  EXPECT_TRUE(cache.CheckInvariants());
}

TEST(CacheMisuseTest, CommitBelowTheAdoptedHitIsRefused) {
  CacheCore cache(Full16());
  Cache(cache, 0, Range(0, 40));
  const Request r = Make(cache, 1, Range(0, 40));
  const CacheHit hit = cache.Lookup(r);
  ASSERT_TRUE(cache.Allocate(r, {.num_new_tokens = 8, .hit = &hit}));
  EXPECT_THAT(RefusedUnchanged(cache, [&] { cache.Commit(r, 16); }),
              HasSubstr("commit of 16 tokens below the 32"));
}

TEST(CacheMisuseTest, CommitAndFreeRefuseWhatTheCacheDoesNotHold) {
  CacheCore cache(Full16());
  const Request r = Make(cache, 1, Range(0, 40));
  EXPECT_THAT(RefusedUnchanged(cache, [&] { cache.Free(RequestId{7}); }),
              HasSubstr("free of a request that holds no blocks"));
  EXPECT_THAT(RefusedUnchanged(cache, [&] { cache.Commit(r, 16); }),
              HasSubstr("commit for a request that holds no blocks"));
  ASSERT_TRUE(cache.Allocate(r, {.num_new_tokens = 20}));
  EXPECT_THAT(RefusedUnchanged(cache, [&] { cache.Commit(r, 40); }),
              HasSubstr("commit of 40 tokens beyond the blocks allocated"));
  const KeyScheme other = *MakeKeyScheme({.hash_unit = 8});
  const Request foreign({.id = RequestId{1}}, Range(0, 40), other);
  EXPECT_THAT(RefusedUnchanged(cache, [&] { cache.Commit(foreign, 16); }),
              HasSubstr("different key scheme"));
}

TEST(CacheMisuseTest, SplitPrefillRefusesChunksBeyondTheRequest) {
  CacheCore cache(
      {.groups = {{.block_size = 16},
                  {.kind = GroupKind::kRecurrent, .block_size = 16}},
       .num_blocks = 20});
  const Request r = Make(cache, 1, Range(0, 40));
  EXPECT_THAT(
      RefusedUnchanged(
          cache,
          [&] { (void)cache.SplitPrefill(r, {.num_computed_tokens = 41}); }),
      HasSubstr("chunk.num_computed_tokens 41 beyond the request's 40 tokens"));
  EXPECT_THAT(RefusedUnchanged(cache,
                               [&] {
                                 (void)cache.SplitPrefill(
                                     r, {.num_computed_tokens = 16,
                                         .num_new_tokens = kMax32});
                               }),
              HasSubstr("exceeds 2^32 - 1"));
  EXPECT_EQ(cache.SplitPrefill(
                r, {.num_computed_tokens = 16, .num_new_tokens = kMax32 - 16}),
            16u);
}

}  // namespace
}  // namespace hkv
