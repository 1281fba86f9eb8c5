// Spec §8.1 vectors V-20 ... V-22 and §8.4 V-80: KV events.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "core/digest.h"
#include "groups/full_attention.h"
#include "test_util.h"

namespace hkv {
namespace {

using ::hkv::testing::AllocateAndCommit;
using ::hkv::testing::Range;

internal::CacheCore MakeCache(std::uint32_t num_blocks) {
  return internal::CacheCore(CacheConfig{.groups = {{.block_size = 16}},
                                         .num_blocks = num_blocks,
                                         .keys = {.hash_unit = 16},
                                         .events = KvEventMode::kEnabled});
}

class EventsTest : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(EventsTest, V20_StoredRemovedAndCleared) {
  const std::uint32_t n = GetParam();
  internal::CacheCore cache = MakeCache(n + 1);
  const Request r0({.id = RequestId{0}}, Range(0, 16 * n), cache.key_scheme());
  AllocateAndCommit(cache, r0, 16 * n);
  std::vector<KvEvent> events = cache.TakeEvents();
  ASSERT_FALSE(events.empty());
  const auto* stored = std::get_if<BlockStored>(&events.back());
  ASSERT_NE(stored, nullptr);
  EXPECT_EQ(stored->block_hashes.size(), n);
  EXPECT_EQ(stored->token_ids.size(), 16u * n);
  EXPECT_EQ(stored->block_size, 16u);
  EXPECT_EQ(stored->spec_kind, "full_attention");
  EXPECT_FALSE(stored->parent_block_hash.has_value());

  cache.Free(r0.id());
  const Request r1({.id = RequestId{1}}, Range(0, 16 * n), cache.key_scheme());
  AllocateAndCommit(cache, r1,
                    16 * n);  // no lookup: every cached block is evicted
  events = cache.TakeEvents();
  ASSERT_EQ(events.size(), n + 1);
  for (std::uint32_t i = 0; i < n; ++i) {
    const auto* removed = std::get_if<BlockRemoved>(&events[i]);
    ASSERT_NE(removed, nullptr);
    EXPECT_EQ(removed->block_hashes.size(), 1u);
  }
  stored = std::get_if<BlockStored>(&events.back());
  ASSERT_NE(stored, nullptr);
  EXPECT_EQ(stored->block_hashes.size(), n);

  cache.Free(r1.id());
  ASSERT_TRUE(cache.ResetPrefixCache());
  events = cache.TakeEvents();
  ASSERT_FALSE(events.empty());
  EXPECT_TRUE(std::holds_alternative<AllBlocksCleared>(events.back()));
}

INSTANTIATE_TEST_SUITE_P(Sizes, EventsTest, ::testing::Values(2u, 3u, 10u));

TEST(EventsTest, V21_RunAfterNullSlotNamesItsLogicalParent) {
  internal::BlockPool pool(8, internal::Caching::kEnabled,
                           internal::Events::kEnabled);
  const internal::CacheFacts facts{
      .hash_unit = 1, .alignment = 1, .scheduler_block = 1};
  internal::FullAttentionManager manager(pool, facts, {.block_size = 1}, {});
  const KeyScheme scheme = *MakeKeyScheme({.hash_unit = 1});
  const Request r({.id = RequestId{0}}, std::vector<TokenId>{10, 11, 12, 13},
                  scheme);
  std::vector<BlockId> blocks;
  pool.Allocate(3, blocks);
  internal::GroupTable table{
      .blocks = {blocks[0], kNullBlock, blocks[1], blocks[2]},
      .num_committed_blocks = 2};
  manager.Commit(table, r, 4, {});
  const std::vector<KvEvent> events = pool.events().Take();
  ASSERT_EQ(events.size(), 1u);
  const auto& stored = std::get<BlockStored>(events[0]);
  EXPECT_EQ(stored.parent_block_hash, r.keys()[1]);
  EXPECT_THAT(stored.block_hashes,
              ::testing::ElementsAre(r.keys()[2], r.keys()[3]));
  EXPECT_THAT(stored.token_ids, ::testing::ElementsAre(12u, 13u));
  EXPECT_EQ(stored.group, GroupId{0});
  EXPECT_FALSE(
      stored.spec_kind.has_value());  // pool-level events carry no kind
}

TEST(EventsTest, V22_LoraIdIsReported) {
  for (std::optional<std::uint32_t> lora :
       {std::optional<std::uint32_t>(42), std::optional<std::uint32_t>()}) {
    internal::CacheCore cache = MakeCache(4);
    const Request r({.id = RequestId{0}, .lora_id = lora}, Range(0, 32),
                    cache.key_scheme());
    AllocateAndCommit(cache, r, 32);
    const std::vector<KvEvent> events = cache.TakeEvents();
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(std::get<BlockStored>(events[0]).lora_id, lora);
  }
}

TEST(EventsTest, StoredEventsNameTheirGroupKind) {
  internal::CacheCore cache(
      CacheConfig{.groups = {{.block_size = 16},
                             {.kind = GroupKind::kSlidingWindow,
                              .block_size = 16,
                              .sliding_window = 64},
                             {.kind = GroupKind::kRecurrent, .block_size = 16}},
                  .num_blocks = 20,
                  .keys = {.hash_unit = 16},
                  .events = KvEventMode::kEnabled});
  const Request r({.id = RequestId{0}}, Range(0, 32), cache.key_scheme());
  AllocateAndCommit(cache, r, 32);
  std::vector<std::string> kinds;
  for (const KvEvent& event : cache.TakeEvents()) {
    const auto& stored = std::get<BlockStored>(event);
    kinds.push_back(*stored.spec_kind);
    EXPECT_EQ(stored.sliding_window.has_value(), stored.group == GroupId{1});
  }
  EXPECT_THAT(kinds, ::testing::ElementsAre("full_attention", "sliding_window",
                                            "mamba"));
}

// V-80: h = 2, [full attention b 4 (x dcp), recurrent b 16]; an owner of 47
// tokens leaves entries at 46; a 49-token request in "full" report mode
// adopts the 46-token hit, and its reuse is re-announced: the full-attention
// run from the root, then the last unit of each group's partial entry.
class FullReportTest : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(FullReportTest, V80_ReusedBlocksAreReannounced) {
  const std::uint32_t dcp = GetParam();
  internal::CacheCore cache(
      CacheConfig{.groups = {{.block_size = 4},
                             {.kind = GroupKind::kRecurrent, .block_size = 16}},
                  .num_blocks = 60,
                  .keys = {.hash_unit = 2},
                  .dcp = dcp,
                  .events = KvEventMode::kEnabled});
  const Request owner({.id = RequestId{0}}, Range(0, 47), cache.key_scheme());
  ASSERT_TRUE(cache.Allocate(owner, {.num_new_tokens = 46}));
  cache.Commit(owner, 46);
  cache.Free(owner.id());
  cache.FinishStep();
  static_cast<void>(cache.TakeEvents());

  const Request r({.id = RequestId{1}, .event_report = EventReport::kFull},
                  Range(0, 49), cache.key_scheme());
  const CacheHit hit = cache.Lookup(r);
  ASSERT_EQ(hit.num_tokens, 46u);
  EXPECT_EQ(hit.blocks[1][0], kNullBlock);
  EXPECT_TRUE(cache.TakeEvents().empty());  // the lookup changes nothing
  ASSERT_TRUE(cache.Allocate(r, {.num_new_tokens = 3, .hit = &hit}));
  const std::vector<KvEvent> events = cache.TakeEvents();
  ASSERT_EQ(events.size(), 3u);
  const std::uint32_t b = 4 * dcp;
  const auto& run = std::get<BlockStored>(events[0]);
  EXPECT_EQ(run.group, GroupId{0});
  EXPECT_EQ(run.block_size, b);
  EXPECT_EQ(run.token_ids, Range(0, 46 / b * b));
  EXPECT_FALSE(run.parent_block_hash.has_value());
  for (std::size_t i = 1; i < 3; ++i) {
    const auto& partial = std::get<BlockStored>(events[i]);
    EXPECT_EQ(partial.group, GroupId{static_cast<std::uint32_t>(i - 1)});
    EXPECT_THAT(partial.block_hashes, ::testing::ElementsAre(r.keys()[22]));
    EXPECT_EQ(partial.parent_block_hash, r.keys()[21]);
    EXPECT_EQ(partial.token_ids, Range(44, 46));
    EXPECT_EQ(partial.block_size, 2u);
    EXPECT_THAT(partial.extra_keys, ::testing::ElementsAre(std::nullopt));
  }
}

INSTANTIATE_TEST_SUITE_P(Dcp, FullReportTest, ::testing::Values(1u, 2u, 4u));

// A group that caches nothing (recurrent "none") has no blocks in any hit:
// "full" report mode re-announces the other groups' reuse and nothing of
// it. (It read the empty list's first blocks: the cache_ops fuzzer's
// full_report_reuse_of_uncached_group.)
TEST(EventsTest, FullReportSkipsAGroupThatCachesNothing) {
  internal::CacheCore cache(
      CacheConfig{.groups = {{.block_size = 4},
                             {.kind = GroupKind::kRecurrent,
                              .block_size = 4,
                              .recurrent_mode = RecurrentMode::kNone}},
                  .num_blocks = 20,
                  .keys = {.hash_unit = 4},
                  .events = KvEventMode::kEnabled});
  const Request owner({.id = RequestId{0}}, Range(0, 16), cache.key_scheme());
  AllocateAndCommit(cache, owner, 16);
  cache.Free(owner.id());
  static_cast<void>(cache.TakeEvents());
  const Request r({.id = RequestId{1}, .event_report = EventReport::kFull},
                  Range(0, 17), cache.key_scheme());
  const CacheHit hit = cache.Lookup(r);
  ASSERT_EQ(hit.num_tokens, 16u);
  ASSERT_TRUE(hit.blocks[1].empty());
  ASSERT_TRUE(cache.Allocate(r, {.num_new_tokens = 1, .hit = &hit}));
  const std::vector<KvEvent> events = cache.TakeEvents();
  ASSERT_EQ(events.size(), 1u);
  const auto& run = std::get<BlockStored>(events[0]);
  EXPECT_EQ(run.group, GroupId{0});
  EXPECT_EQ(run.token_ids, Range(0, 16));
  EXPECT_EQ(run.block_hashes.size(), 4u);
}

TEST(EventsTest, IncrementalReportAnnouncesNoReuse) {
  internal::CacheCore cache(CacheConfig{.groups = {{.block_size = 4}},
                                        .num_blocks = 20,
                                        .keys = {.hash_unit = 4},
                                        .events = KvEventMode::kEnabled});
  const Request owner({.id = RequestId{0}}, Range(0, 16), cache.key_scheme());
  AllocateAndCommit(cache, owner, 16);
  cache.Free(owner.id());
  static_cast<void>(cache.TakeEvents());
  const Request r({.id = RequestId{1}}, Range(0, 16), cache.key_scheme());
  const CacheHit hit = cache.Lookup(r);
  ASSERT_EQ(hit.num_tokens, 12u);
  ASSERT_TRUE(cache.Allocate(r, {.num_new_tokens = 4, .hit = &hit}));
  EXPECT_TRUE(cache.TakeEvents().empty());
}

// A recurrent group keys only the states its chunks ended on: each event
// carries the tokens since the group's last announced run, so a router can
// chain it to its prefix.
TEST(EventsTest, StoredEventsCarryTheSkippedContext) {
  internal::CacheCore cache(
      CacheConfig{.groups = {{.block_size = 4},
                             {.kind = GroupKind::kRecurrent, .block_size = 4}},
                  .num_blocks = 20,
                  .keys = {.hash_unit = 4},
                  .events = KvEventMode::kEnabled});
  const Request r({.id = RequestId{0}}, Range(0, 17), cache.key_scheme());
  ASSERT_TRUE(cache.Allocate(r, {.num_new_tokens = 8}));
  cache.Commit(r, 8);
  ASSERT_TRUE(
      cache.Allocate(r, {.num_computed_tokens = 8, .num_new_tokens = 8}));
  cache.Commit(r, 16);
  std::vector<BlockStored> states;
  for (const KvEvent& event : cache.TakeEvents()) {
    const auto& stored = std::get<BlockStored>(event);
    if (stored.group == GroupId{1}) states.push_back(stored);
    // Full attention announces every block: nothing skipped.
    if (stored.group == GroupId{0}) {
      EXPECT_TRUE(stored.skipped_token_ids.empty());
    }
  }
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(states[0].token_ids, Range(4, 8));  // the state at 8
  EXPECT_EQ(states[0].skipped_token_ids, Range(0, 4));
  EXPECT_FALSE(states[0].skipped_parent_block_hash.has_value());
  EXPECT_EQ(states[0].skipped_extra_keys.size(), 1u);
  EXPECT_EQ(states[1].token_ids, Range(12, 16));  // the state at 16
  EXPECT_EQ(states[1].skipped_token_ids, Range(8, 12));
  EXPECT_EQ(states[1].skipped_parent_block_hash, r.keys()[1]);
  EXPECT_EQ(states[1].parent_block_hash, r.keys()[2]);
}

// Spec §6.1: events carry a block's extra keys untagged, in the keys' order
// (LoRA name, (identifier, offset) per item, salt, embeddings digest), and
// never the LoRA path.
TEST(EventsTest, StoredEventsCarryUntaggedExtraKeys) {
  internal::CacheCore cache = MakeCache(4);
  std::vector<std::uint8_t> embeds(40);
  std::iota(embeds.begin(), embeds.end(), std::uint8_t{0});
  const Request r(
      {.id = RequestId{0},
       .extras = {.lora_name = "x",
                  .lora_path = "/a/x",
                  .multimodal = {{"img", 10, 10}},
                  .cache_salt = "s",
                  .prompt_embeds = {.bytes = embeds, .bytes_per_token = 1}}},
      Range(0, 40), cache.key_scheme());
  AllocateAndCommit(cache, r, 40);
  const std::vector<KvEvent> events = cache.TakeEvents();
  ASSERT_EQ(events.size(), 1u);
  const auto& stored = std::get<BlockStored>(events[0]);
  const auto digest = [&](std::size_t from) {
    const BlockHash d = internal::Sha256(std::span(embeds).subspan(from, 16));
    EmbedsDigest out;
    std::copy_n(d.bytes.begin(), out.size(), out.begin());
    return EventExtraKey(out);
  };
  using Keys = std::vector<EventExtraKey>;
  EXPECT_EQ(stored.lora_name, "x");
  EXPECT_THAT(
      stored.extra_keys,
      ::testing::ElementsAre(
          Keys{std::string("x"), EventItemOffset{"img", 10}, std::string("s"),
               digest(0)},
          Keys{std::string("x"), EventItemOffset{"img", -6}, digest(16)}));
}

// The skipped context's extra keys take the same untagged form.
TEST(EventsTest, SkippedExtraKeysAreUntaggedToo) {
  internal::CacheCore cache(
      CacheConfig{.groups = {{.block_size = 4},
                             {.kind = GroupKind::kRecurrent, .block_size = 4}},
                  .num_blocks = 20,
                  .keys = {.hash_unit = 4},
                  .events = KvEventMode::kEnabled});
  const Request r(
      {.id = RequestId{0}, .extras = {.lora_name = "x", .cache_salt = "s"}},
      Range(0, 9), cache.key_scheme());
  AllocateAndCommit(cache, r, 8);
  std::optional<BlockStored> state;
  for (const KvEvent& event : cache.TakeEvents()) {
    const auto& stored = std::get<BlockStored>(event);
    if (stored.group == GroupId{1}) state = stored;
  }
  ASSERT_TRUE(state.has_value());
  using Keys = std::vector<EventExtraKey>;
  EXPECT_THAT(state->skipped_extra_keys,
              ::testing::ElementsAre(
                  Keys{std::string("x"), std::string("s")}));  // tokens 0-3
  EXPECT_THAT(state->extra_keys,
              ::testing::ElementsAre(Keys{std::string("x")}));  // tokens 4-7
}

}  // namespace
}  // namespace hkv
