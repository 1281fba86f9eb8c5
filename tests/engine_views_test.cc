// The engine's views of the cache (CacheManager's inspection calls), the
// engine's allocate_slots return (NewBlocks::table_starts) and
// Behaviour::kEngine: what hkv.vllm reads to stand in for the reference
// engine's block pool.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hkv/cache_manager.h"
#include "test_util.h"

namespace hkv {
namespace {

using ::hkv::testing::Range;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

CacheManager Make(std::vector<GroupSpec> groups, std::uint32_t num_blocks,
                  std::uint32_t hash_unit,
                  Behaviour behaviour = Behaviour::kEngine) {
  Result<CacheManager> cache =
      CacheManager::Create({.groups = std::move(groups),
                            .num_blocks = num_blocks,
                            .keys = {.hash_unit = hash_unit},
                            .events = KvEventMode::kEnabled,
                            .free_order = FreeOrder::kAppendAll,
                            .behaviour = behaviour});
  EXPECT_TRUE(cache.has_value());
  return std::move(*cache);
}

std::vector<BlockId> Ids(std::initializer_list<std::uint32_t> ids) {
  std::vector<BlockId> out;
  for (std::uint32_t i : ids) out.push_back(BlockId{i});
  return out;
}

std::vector<BlockId> Table(const CacheManager& cache, RequestId id,
                           GroupId group = GroupId{0}) {
  const auto t = cache.block_table(id, group);
  return {t.begin(), t.end()};
}

// Allocates and commits the whole request after its lookup.
void Admit(CacheManager& cache, const Request& r) {
  const CacheHit hit = cache.Lookup(r);
  ASSERT_TRUE(cache.Allocate(
      r, {.num_new_tokens = r.num_tokens() - hit.num_tokens, .hit = &hit}));
  cache.Commit(r, r.num_tokens());
}

TEST(EngineViewsTest, RefCountsKeysFreeQueueAndLookups) {
  CacheManager cache = Make({{.block_size = 16}}, 8, 16);
  const Request a({.id = RequestId{1}}, Range(0, 40), cache.key_scheme());
  Admit(cache, a);
  EXPECT_EQ(Table(cache, a.id()), Ids({1, 2, 3}));
  EXPECT_EQ(cache.ref_count(BlockId{1}), 1u);
  EXPECT_EQ(cache.FreeQueue(), Ids({4, 5, 6, 7}));
  ASSERT_TRUE(cache.BlockKey(BlockId{2}).has_value());
  EXPECT_EQ(cache.BlockKey(BlockId{2})->second, a.keys()[1]);
  EXPECT_FALSE(cache.BlockKey(BlockId{3}).has_value());  // partial block
  EXPECT_EQ(cache.FindCached(GroupId{0}, a.keys()[0]), BlockId{1});
  EXPECT_EQ(cache.num_cached_entries(), 2u);

  const Request b({.id = RequestId{2}}, Range(0, 36), cache.key_scheme());
  Admit(cache, b);
  EXPECT_EQ(cache.ref_count(BlockId{1}), 2u);
  EXPECT_EQ(cache.NumCommonPrefixBlocks(a.id(), GroupId{0}), 2u);
  cache.Free(a.id());
  cache.Free(b.id());
  // The engine's order: every block whose last holder lets go appended, a
  // table's last block first (b took block 4 for its tokens past the hit).
  EXPECT_EQ(cache.FreeQueue(), Ids({5, 6, 7, 3, 4, 2, 1}));
  EXPECT_EQ(cache.ref_count(BlockId{1}), 0u);
  EXPECT_THAT([&] { static_cast<void>(cache.ref_count(BlockId{8})); },
              ::testing::Throws<UsageError>());
}

TEST(EngineViewsTest, EvictBlocksDropsKeysAndChecksEveryIdFirst) {
  CacheManager cache = Make({{.block_size = 16}}, 8, 16);
  const Request a({.id = RequestId{1}}, Range(0, 32), cache.key_scheme());
  Admit(cache, a);
  static_cast<void>(cache.TakeEvents());
  const std::vector<BlockId> bad = Ids({1, 9});
  EXPECT_THROW(cache.EvictBlocks(bad), UsageError);
  EXPECT_EQ(cache.num_cached_entries(), 2u);  // nothing evicted
  const std::vector<BlockId> first = Ids({1});
  cache.EvictBlocks(first);
  EXPECT_EQ(cache.num_cached_entries(), 1u);
  EXPECT_FALSE(cache.BlockKey(BlockId{1}).has_value());
  EXPECT_EQ(Table(cache, a.id()), Ids({1, 2}));  // the block stays
  const std::vector<KvEvent> events = cache.TakeEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<BlockRemoved>(events[0]));
}

TEST(EngineViewsTest, TableStartsMarkWhatTheEngineReturnsWithNullPadding) {
  CacheManager cache = Make({{.block_size = 16},
                             {.kind = GroupKind::kRecurrent,
                              .block_size = 16,
                              .recurrent_mode = RecurrentMode::kAlign}},
                            32, 16);
  const Request a({.id = RequestId{1}}, Range(0, 64), cache.key_scheme());
  const std::optional<NewBlocks> first =
      cache.Allocate(a, {.num_new_tokens = 48});
  ASSERT_TRUE(first.has_value());
  EXPECT_THAT(first->table_starts, ElementsAre(0u, 0u));
  const std::vector<BlockId> state = Table(cache, a.id(), GroupId{1});
  ASSERT_EQ(state.size(), 3u);
  EXPECT_EQ(state[0], kNullBlock);
  EXPECT_EQ(state[1], kNullBlock);
  EXPECT_NE(state[2], kNullBlock);
  const std::optional<NewBlocks> next =
      cache.Allocate(a, {.num_computed_tokens = 48, .num_new_tokens = 16});
  ASSERT_TRUE(next.has_value());
  EXPECT_THAT(next->table_starts, ElementsAre(3u, 3u));
}

TEST(EngineViewsTest, RemoveSkippedBlocksReleasesWhatAWindowNoLongerReads) {
  CacheManager cache = Make({{.block_size = 16},
                             {.kind = GroupKind::kSlidingWindow,
                              .block_size = 16,
                              .sliding_window = 16}},
                            32, 16);
  const Request a({.id = RequestId{1}}, Range(0, 64), cache.key_scheme());
  ASSERT_TRUE(cache.Allocate(a, {.num_new_tokens = 64}));
  const std::uint32_t free_before = cache.num_free_blocks();
  cache.RemoveSkippedBlocks(a.id(), 64);
  EXPECT_GT(cache.num_free_blocks(), free_before);
  EXPECT_EQ(Table(cache, a.id(), GroupId{1})[0], kNullBlock);
  EXPECT_EQ(Table(cache, a.id(), GroupId{0}).size(), 4u);  // full: kept
  cache.RemoveSkippedBlocks(RequestId{7}, 64);  // holds nothing: no-op
}

TEST(EngineViewsTest, EngineBehaviourHitsWholeBlocksOnly) {
  // Hash units finer than the block: the engine's hits still end on blocks.
  CacheManager cache = Make({{.block_size = 32}}, 16, 16);
  Admit(cache, Request({.id = RequestId{1}}, Range(0, 80), cache.key_scheme()));
  for (std::uint32_t n : {40u, 60u, 64u, 65u}) {
    const Request b({.id = RequestId{2}}, Range(0, n), cache.key_scheme());
    const CacheHit hit = cache.Lookup(b);
    EXPECT_EQ(hit.num_tokens % 32, 0u) << n;
    EXPECT_EQ(hit.num_tokens, (n - 1) / 32 * 32) << n;
  }
}

TEST(EngineViewsTest, EngineBehaviourAllocatesForComputedTokensPastItsSlots) {
  for (const Behaviour behaviour : {Behaviour::kEngine, Behaviour::kSpec}) {
    CacheManager cache = Make({{.block_size = 16}}, 16, 16, behaviour);
    const Request a({.id = RequestId{1}}, Range(0, 40), cache.key_scheme());
    ASSERT_TRUE(cache.Allocate(a, {.num_new_tokens = 32}));
    // A step that returned more tokens than it scheduled.
    const AllocationRequest past{.num_computed_tokens = 34,
                                 .num_new_tokens = 1};
    if (behaviour == Behaviour::kSpec) {
      EXPECT_THROW(static_cast<void>(cache.Allocate(a, past)), UsageError);
      continue;
    }
    ASSERT_TRUE(cache.Allocate(a, past));
    EXPECT_EQ(Table(cache, a.id()).size(), 3u);
  }
}

TEST(EngineViewsTest, EngineRecurrentGroupsKeepTheEnginesBlocks) {
  // The engine takes num_speculative_blocks (2) off the token count before
  // it releases states, and stops at the first null slot.
  CacheManager cache = Make({{.block_size = 16},
                             {.kind = GroupKind::kRecurrent,
                              .block_size = 16,
                              .recurrent_mode = RecurrentMode::kAll,
                              .speculative_blocks = 2}},
                            64, 16);
  const Request a({.id = RequestId{1}}, Range(0, 80), cache.key_scheme());
  ASSERT_TRUE(cache.Allocate(a, {.num_new_tokens = 64}));
  EXPECT_EQ(Table(cache, a.id(), GroupId{1}).size(), 6u);  // 4 + 2 drafts
  cache.RemoveSkippedBlocks(a.id(), 50);  // (50 - 2 - 1) / 16 = 2 released
  const std::vector<BlockId> state = Table(cache, a.id(), GroupId{1});
  EXPECT_EQ(state[0], kNullBlock);
  EXPECT_EQ(state[1], kNullBlock);
  EXPECT_NE(state[2], kNullBlock);
}

TEST(EngineViewsTest, EngineWholeSequenceAdmissionCountsRecurrentBlocks) {
  // Outside align mode the engine's recurrent group needs a block per 16
  // tokens of the whole prompt: 8 + 8 here, with 12 free.
  CacheManager cache = Make({{.block_size = 16},
                             {.kind = GroupKind::kRecurrent,
                              .block_size = 16,
                              .recurrent_mode = RecurrentMode::kAll}},
                            13, 16);
  const Request a({.id = RequestId{1}}, Range(0, 128), cache.key_scheme());
  EXPECT_FALSE(cache.Allocate(
      a, {.num_new_tokens = 32, .gate = AdmissionGate::kWholeSequence}));
  EXPECT_TRUE(cache.Allocate(a, {.num_new_tokens = 32}));
}

TEST(EngineViewsTest, EngineCommitBelowTheLastRegistersNothing) {
  // The engine's scheduler rolls a request back past blocks that failed to
  // load and schedules it again from there: its cache_blocks then caches
  // nothing below what it cached (hkv's own rules refuse the call:
  // CacheMisuseTest.CommitBelowCommittedIsRefusedAndRepeatingIsANoOp).
  CacheManager cache = Make({{.block_size = 16}}, 8, 16);
  const Request a({.id = RequestId{1}}, Range(0, 64), cache.key_scheme());
  Admit(cache, a);
  cache.EvictBlocks(Ids({3}));
  cache.Commit(a, 32);
  EXPECT_FALSE(cache.BlockKey(BlockId{3}).has_value());
  EXPECT_TRUE(cache.BlockKey(BlockId{2}).has_value());
  EXPECT_EQ(cache.Lookup(a).num_tokens, 32u);
  cache.Commit(a, 64);  // as many as before: nothing either
  EXPECT_FALSE(cache.BlockKey(BlockId{3}).has_value());
}

TEST(EngineViewsTest, BehaviourOutOfRangeIsRefused) {
  const Result<CacheManager> cache =
      CacheManager::Create({.groups = {{.block_size = 16}},
                            .num_blocks = 8,
                            .behaviour = static_cast<Behaviour>(7)});
  ASSERT_FALSE(cache.has_value());
  EXPECT_THAT(cache.error().message, HasSubstr("behaviour"));
}

}  // namespace
}  // namespace hkv
