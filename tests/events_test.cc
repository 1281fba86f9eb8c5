// Spec §8.1 vectors V-20 ... V-22: KV events.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
  internal::FullAttentionManager manager(
      pool,
      {.block_size = 1, .hash_unit = 1, .alignment = 1, .scheduler_block = 1});
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

}  // namespace
}  // namespace hkv
