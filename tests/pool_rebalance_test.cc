// Rebalancing per-group pools (CacheConfig::pool_slot_bytes): the pools share
// one byte arena; an allocation one pool cannot meet parks other pools'
// oldest free blocks and unparks ids of its own. No block is lost or shared
// across pools, a refused allocation changes nothing, and TakePoolMoves tells
// the engine exactly which ids gave up their memory and which took it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "cache/cache_core.h"
#include "cache/state_snapshot.h"
#include "core/block_pool.h"
#include "gen.h"
#include "hkv/cache_manager.h"
#include "misuse_util.h"
#include "test_util.h"

namespace hkv {
namespace {

using ::testing::ElementsAre;
using testing::Ids;
using testing::Range;

constexpr std::uint32_t kBlocks[] = {3, 2};
constexpr std::uint64_t kSlots[] = {4, 6};  // arena: 3 x 4 + 2 x 6 = 24

internal::BlockPool RebalancingPool() {
  return internal::BlockPool(6, internal::Caching::kEnabled,
                             internal::Events::kEnabled,
                             FreeOrder::kPrependUncached, kBlocks, kSlots);
}

TEST(PoolRebalanceTest, EachRangeHoldsTheWholeArenaAtItsSlotSize) {
  EXPECT_THAT(internal::RebalancedPoolIds(kBlocks, kSlots), ElementsAre(6, 4));
  internal::BlockPool pool = RebalancingPool();
  EXPECT_EQ(pool.num_blocks(), 11u);  // null, 1..6, 7..10
  EXPECT_EQ(pool.num_usable_blocks(), 5u);
  EXPECT_EQ(pool.PoolOf(BlockId{6}), 0u);
  EXPECT_EQ(pool.PoolOf(BlockId{7}), 1u);
  // Each pool starts with its blocks; the rest of its range is parked.
  EXPECT_EQ(pool.FreeQueueSnapshot(), Ids({1, 2, 3, 7, 8}));
  EXPECT_TRUE(pool.parked(BlockId{4}));
  EXPECT_TRUE(pool.parked(BlockId{10}));
  EXPECT_FALSE(pool.parked(BlockId{8}));
  EXPECT_EQ(pool.num_parked_blocks(0), 3u);
  EXPECT_EQ(pool.spare_bytes(), 0u);
  EXPECT_TRUE(pool.CheckInvariants());
}

TEST(PoolRebalanceTest, ParkedBytesPayForUnparkedIds) {
  internal::BlockPool pool = RebalancingPool();
  std::vector<BlockId> parked;
  pool.Park(1, 1, parked);  // 6 bytes spare
  EXPECT_EQ(parked, Ids({7}));
  EXPECT_EQ(pool.spare_bytes(), 6u);
  std::vector<BlockId> unparked;
  pool.Unpark(0, 1, unparked);  // 4 of them
  EXPECT_EQ(unparked, Ids({4}));
  EXPECT_EQ(pool.spare_bytes(), 2u);
  EXPECT_EQ(pool.FreeQueueSnapshot(), Ids({4, 1, 2, 3, 8}));  // used first
  EXPECT_EQ(pool.num_usable_blocks(), 5u);
  EXPECT_EQ(pool.stats().parked_blocks, 1u);
  EXPECT_TRUE(pool.CheckInvariants());
  // The parked id comes back first when its pool grows again.
  pool.Unpark(0, 0, unparked);
  pool.Park(0, 2, parked);  // 8 more bytes: 10 spare
  pool.Unpark(1, 1, unparked);
  EXPECT_EQ(unparked.back(), BlockId{7});
  EXPECT_EQ(pool.spare_bytes(), 4u);
  EXPECT_TRUE(pool.CheckInvariants());
}

TEST(PoolRebalanceTest, ParkingEvictsTheBlocksKeys) {
  internal::BlockPool pool = RebalancingPool();
  const BlockId cached = pool.AllocateOne(1);
  const internal::PrefixKey key{.hash = {}, .group = GroupId{1}};
  pool.CacheFull(cached, key, 16);
  pool.Free(std::vector<BlockId>{cached});
  pool.events().Take();
  std::vector<BlockId> parked;
  pool.Park(1, 2, parked);  // the uncached block first, then the cached one
  EXPECT_EQ(parked, Ids({8, 7}));
  EXPECT_FALSE(pool.FindCached(key).has_value());
  EXPECT_EQ(pool.stats().evicted_blocks, 1u);
  EXPECT_EQ(pool.events().Take().size(), 1u);  // its BlockRemoved
  EXPECT_TRUE(pool.CheckInvariants());
}

TEST(PoolRebalanceTest, ResetNeedsEveryUsableBlockFree) {
  internal::BlockPool pool = RebalancingPool();
  std::vector<BlockId> parked;
  pool.Park(1, 1, parked);
  EXPECT_TRUE(pool.Reset());
  const BlockId held = pool.AllocateOne(0);
  EXPECT_FALSE(pool.Reset());
  pool.Free(std::vector<BlockId>{held});
  EXPECT_TRUE(pool.Reset());
}

// Full attention and recurrent groups of 4-token blocks.
CacheConfig TwoPools(std::uint32_t attention, std::uint32_t states,
                     std::vector<std::uint64_t> slots) {
  return {.groups = {{.block_size = 4},
                     {.kind = GroupKind::kRecurrent, .block_size = 4}},
          .num_blocks = 1 + attention + states,
          .group_pool_blocks = {attention, states},
          .pool_slot_bytes = std::move(slots),
          .keys = {.hash_unit = 4}};
}

TEST(PoolRebalanceTest, ADryPoolTakesAnotherPoolsFreeBytes) {
  // 16 tokens need 4 attention blocks; the attention pool has 3. A state
  // slot is worth two attention slots, so one state block pays for it.
  Result<CacheManager> cache = CacheManager::Create(TwoPools(3, 4, {1, 2}));
  ASSERT_TRUE(cache.has_value());
  EXPECT_EQ(cache->num_block_ids(), 1u + 11u + 5u);  // arena 11 bytes
  const Request r({.id = RequestId{1}}, Range(0, 16), cache->key_scheme());
  ASSERT_TRUE(cache->Allocate(r, {.num_new_tokens = 16}).has_value());
  const std::span<const BlockId> attention =
      cache->block_table(RequestId{1}, GroupId{0});
  EXPECT_EQ(std::vector<BlockId>(attention.begin(), attention.end()),
            Ids({4, 1, 2, 3}));  // the unparked id is used first
  const PoolMoves moves = cache->TakePoolMoves();
  EXPECT_EQ(moves.unparked, Ids({4}));
  ASSERT_EQ(moves.parked.size(), 1u);
  EXPECT_GE(ToIndex(moves.parked[0]), 12u);  // from the state pool's range
  EXPECT_TRUE(cache->TakePoolMoves().empty());
  EXPECT_EQ(cache->counters().parked_blocks, 1u);
  // One byte stays spare: the next attention block needs no move.
  const Request next({.id = RequestId{2}}, Range(100, 104),
                     cache->key_scheme());
  ASSERT_TRUE(cache->Allocate(next, {.num_new_tokens = 4}).has_value());
  EXPECT_THAT(cache->TakePoolMoves().unparked, ElementsAre(BlockId{5}));
}

// Two full-attention groups of 4- and 8-token blocks, one byte a slot.
CacheConfig TwoAttentionPools(std::vector<std::uint64_t> slots) {
  return {.groups = {{.block_size = 4}, {.block_size = 8}},
          .num_blocks = 1 + 4 + 8,
          .group_pool_blocks = {4, 8},
          .pool_slot_bytes = std::move(slots),
          .keys = {.hash_unit = 4}};
}

// Request 1's prefix fills the first pool; request 2 needs the whole first
// pool again while the second has empty blocks. Fixed pools evict request
// 1's blocks; rebalancing ones take the other pool's empty slots instead.
std::uint32_t ResendHitAfterAnotherPrompt(const CacheConfig& config) {
  Result<CacheManager> cache = CacheManager::Create(config);
  EXPECT_TRUE(cache.has_value());
  const Request first({.id = RequestId{1}}, Range(0, 16), cache->key_scheme());
  EXPECT_TRUE(cache->Allocate(first, {.num_new_tokens = 16}).has_value());
  cache->Commit(first, 16);
  cache->Free(first.id());
  const Request second({.id = RequestId{2}}, Range(100, 116),
                       cache->key_scheme());
  EXPECT_TRUE(cache->Allocate(second, {.num_new_tokens = 16}).has_value());
  const Request again({.id = RequestId{3}}, Range(0, 16), cache->key_scheme());
  return cache->Lookup(again).num_tokens;
}

TEST(PoolRebalanceTest, APoolThatWouldEvictTakesOlderBytesElsewhere) {
  EXPECT_EQ(ResendHitAfterAnotherPrompt(TwoAttentionPools({})), 0u);
  EXPECT_EQ(ResendHitAfterAnotherPrompt(TwoAttentionPools({1, 1})), 8u);
}

TEST(PoolRebalanceTest, FixedPoolsRefuseWhatRebalancingOnesServe) {
  Result<CacheManager> fixed = CacheManager::Create(TwoPools(3, 4, {}));
  ASSERT_TRUE(fixed.has_value());
  const Request r({.id = RequestId{1}}, Range(0, 16), fixed->key_scheme());
  EXPECT_FALSE(fixed->Allocate(r, {.num_new_tokens = 16}).has_value());
  EXPECT_EQ(fixed->num_block_ids(), 8u);
  EXPECT_TRUE(fixed->TakePoolMoves().empty());
}

TEST(PoolRebalanceTest, WhatTheArenaCannotHoldIsRefusedUnchanged) {
  // 24 tokens need 6 attention blocks, 3 (3 bytes) more than the pool has;
  // the state pool keeps one of its 2 blocks for the request's state and
  // can give the other, 2 bytes.
  internal::CacheCore core(TwoPools(3, 2, {1, 2}));
  const Request r({.id = RequestId{1}}, Range(0, 24), core.key_scheme());
  const std::string before = internal::StateSnapshot(core);
  EXPECT_FALSE(core.Allocate(r, {.num_new_tokens = 24}).has_value());
  EXPECT_EQ(internal::StateSnapshot(core), before);
  EXPECT_TRUE(core.TakePoolMoves().empty());
  EXPECT_TRUE(core.Allocate(r, {.num_new_tokens = 16}).has_value());
  EXPECT_TRUE(core.CheckInvariants());
}

TEST(PoolRebalanceTest, AHitNamingAParkedIdIsRefusedUnchanged) {
  internal::CacheCore core(TwoPools(3, 4, {1, 2}));
  const Request first({.id = RequestId{1}}, Range(0, 8), core.key_scheme());
  ASSERT_TRUE(testing::AllocateAndCommit(core, first, 8).has_value());
  core.Free(first.id());
  const Request again({.id = RequestId{2}}, Range(0, 9), core.key_scheme());
  CacheHit hit = core.Lookup(again);
  ASSERT_EQ(hit.num_tokens, 8u);
  ASSERT_TRUE(core.pool().parked(BlockId{4}));
  hit.blocks[0].back() = BlockId{4};  // in range, parked
  EXPECT_THAT(
      testing::RefusedUnchanged(
          core,
          [&] { core.Allocate(again, {.num_new_tokens = 1, .hit = &hit}); }),
      ::testing::StartsWith(
          "hit block 4 of group 0 holds no key of that group's pool"));
}

TEST(PoolRebalanceTest, ConfigsNameWhatIsWrong) {
  const auto error = [](const CacheConfig& c) {
    return c.Validate().error().message;
  };
  EXPECT_EQ(error(TwoPools(3, 4, {1})),
            "pool_slot_bytes has 1 sizes for 2 groups");
  EXPECT_EQ(error(TwoPools(3, 4, {1, 0})),
            "group 1: pool_slot_bytes 0 is outside [1, 2^32]");
  EXPECT_EQ(error(TwoPools(3, 4, {1, kMaxSlotBytes + 1})),
            "group 1: pool_slot_bytes 4294967297 is outside [1, 2^32]");
  CacheConfig shared = TwoPools(3, 4, {1, 2});
  shared.group_pool_blocks.clear();
  EXPECT_EQ(error(shared),
            "pool_slot_bytes needs per-group pools (group_pool_blocks)");
  EXPECT_EQ(error(TwoPools(1 << 20, 8, {1, kMaxSlotBytes})),
            "rebalancing pools need at least 34360786945 block ids, more "
            "than 2^24: "
            "the smallest slot is too small for the arena");
  EXPECT_TRUE(TwoPools(3, 4, {1, 2}).Validate().has_value());
}

// Random traffic on random rebalancing caches. After every call: the
// invariants (refs against tables, each group's blocks in its own range,
// parked ids keyless and unqueued, the arena's bytes all accounted); a
// refused allocation leaves the state snapshot as it was; and an engine that
// maps memory by the moves it takes always agrees with the pool on which
// ids are parked, never mapping more than the arena.
RC_GTEST_PROP(PoolRebalanceTest, NoBlockIsLostOrSharedAndRefusalsChangeNothing,
              ()) {
  const std::uint32_t unit = *rc::gen::element(1u, 2u, 4u);
  CacheConfig config{
      .groups = {{.block_size = unit * 2},
                 {.kind = GroupKind::kRecurrent, .block_size = unit * 2}},
      .keys = {.hash_unit = unit}};
  if (*rc::gen::arbitrary<bool>()) {
    config.groups.push_back({.kind = GroupKind::kSlidingWindow,
                             .block_size = unit,
                             .sliding_window = *rc::gen::inRange(1u, 9u)});
  }
  config.num_blocks = 1;
  for (std::size_t g = 0; g < config.groups.size(); ++g) {
    config.group_pool_blocks.push_back(*rc::gen::inRange(2u, 12u));
    config.pool_slot_bytes.push_back(*rc::gen::inRange(1u, 9u));
    config.num_blocks += config.group_pool_blocks.back();
  }
  internal::CacheCore core(config);
  const internal::BlockPool& pool = core.pool();
  std::uint64_t arena = 0;
  for (std::size_t g = 0; g < config.groups.size(); ++g) {
    arena +=
        std::uint64_t{config.group_pool_blocks[g]} * config.pool_slot_bytes[g];
  }
  // The engine's view: which ids have memory.
  std::vector<bool> mapped(pool.num_blocks());
  for (std::uint32_t i = 1; i < pool.num_blocks(); ++i) {
    mapped[i] = !pool.parked(BlockId{i});
  }
  const auto take_moves = [&] {
    const PoolMoves moves = core.TakePoolMoves();
    for (BlockId id : moves.parked) {
      RC_ASSERT(mapped[ToIndex(id)]);
      mapped[ToIndex(id)] = false;
    }
    for (BlockId id : moves.unparked) {
      RC_ASSERT(!mapped[ToIndex(id)]);
      mapped[ToIndex(id)] = true;
    }
    std::uint64_t mapped_bytes = 0;
    for (std::uint32_t i = 1; i < pool.num_blocks(); ++i) {
      RC_ASSERT(mapped[i] == !pool.parked(BlockId{i}));
      if (mapped[i]) {
        mapped_bytes += config.pool_slot_bytes[pool.PoolOf(BlockId{i})];
      }
    }
    RC_ASSERT(mapped_bytes + pool.spare_bytes() == arena);
  };
  std::map<std::uint64_t, Request> live;
  std::uint64_t next_id = 1;
  const int steps = *rc::gen::inRange(10, 60);
  for (int step = 0; step < steps; ++step) {
    if (!live.empty() && *rc::gen::inRange(0, 3) == 0) {
      auto it = live.begin();
      std::advance(it, *rc::gen::inRange<std::size_t>(0, live.size()));
      core.Free(it->second.id());
      live.erase(it);
    } else {
      // Prompts share prefixes: a few stems, random lengths.
      const TokenId stem = *rc::gen::inRange<TokenId>(0, 3) * 1000;
      const std::uint32_t length = *rc::gen::inRange(1u, 12u * unit * 2);
      const Request r({.id = RequestId{next_id++}}, Range(stem, stem + length),
                      core.key_scheme());
      const CacheHit hit = core.Lookup(r);
      const std::string before = internal::StateSnapshot(core);
      if (core.Allocate(
              r, {.num_new_tokens = length - hit.num_tokens, .hit = &hit})) {
        core.Commit(r, length);
        live.emplace(static_cast<std::uint64_t>(r.id()), r);
      } else {
        RC_ASSERT(internal::StateSnapshot(core) == before);
      }
    }
    if (*rc::gen::arbitrary<bool>()) take_moves();
    core.FinishStep();
    RC_ASSERT(core.CheckInvariants());
  }
  take_moves();
  RC_CLASSIFY(pool.stats().parked_blocks > 0, "pools moved blocks");
}

}  // namespace
}  // namespace hkv
