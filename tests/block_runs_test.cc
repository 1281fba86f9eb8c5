// Runs of consecutive block ids: FindRun's and FindLinkedRun's answers on
// crafted tables, and BlockPool's Free, TouchAll, NumUnreferenced and
// AllKeyedIn (which take runs sixteen at a time) against a model that takes
// one block at a time, under random allocations, hits, keys and frees in
// either walk and either free order.
#include "core/block_runs.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <vector>

#include "core/block_pool.h"
#include "key_number.h"

namespace hkv::internal {
namespace {

std::vector<BlockId> Ids(std::uint32_t first, int step) {
  std::vector<BlockId> ids;
  for (std::uint32_t k = 0; k < kRunWidth; ++k) {
    ids.push_back(BlockId{first + static_cast<std::uint32_t>(step) * k});
  }
  return ids;
}

// Words for ids 0..63: one reference each, a key each.
std::vector<BlockWords> HeldKeyed() {
  return std::vector<BlockWords>(64,
                                 {.ref_count = 1, .primary_num_tokens = 16});
}

TEST(BlockRunsTest, FindsConsecutiveIdsEitherWay) {
  if (!FindsRuns())
    GTEST_SKIP() << "no AVX-512: Free takes one block at a time";
  const std::vector<BlockWords> words = HeldKeyed();
  EXPECT_EQ(FindRun(Ids(5, 1).data(), words.data(), 1, true),
            RunStep::kAscending);
  EXPECT_EQ(FindRun(Ids(40, -1).data(), words.data(), 1, true),
            RunStep::kDescending);
  EXPECT_EQ(RunLowest(40, RunStep::kDescending), 25u);
  EXPECT_EQ(RunLowest(5, RunStep::kAscending), 5u);
  // The lowest run that leaves the null block out, both ways.
  EXPECT_EQ(FindRun(Ids(1, 1).data(), words.data(), 1, true),
            RunStep::kAscending);
  EXPECT_EQ(FindRun(Ids(16, -1).data(), words.data(), 1, true),
            RunStep::kDescending);
}

TEST(BlockRunsTest, RefusesGapsTheNullBlockAndWraps) {
  const std::vector<BlockWords> words = HeldKeyed();
  std::vector<BlockId> gap = Ids(5, 1);
  gap[9] = BlockId{30};
  EXPECT_EQ(FindRun(gap.data(), words.data(), 1, true), RunStep::kNone);
  EXPECT_EQ(FindRun(Ids(0, 1).data(), words.data(), 1, true), RunStep::kNone);
  EXPECT_EQ(FindRun(Ids(15, -1).data(), words.data(), 1, true), RunStep::kNone);
  // Ids that wrap past 2^32 - 1 through 0: refused before any word is read
  // (the words of ids that large do not exist).
  EXPECT_EQ(FindRun(Ids(UINT32_MAX - 3, 1).data(), words.data(), 1, true),
            RunStep::kNone);
  EXPECT_EQ(FindRun(Ids(UINT32_MAX - 14, 1).data(), nullptr, 1, true),
            RunStep::kNone);
}

TEST(BlockRunsTest, EveryBlockMustHoldTheCountAndAKeyWhenAsked) {
  if (!FindsRuns()) GTEST_SKIP() << "no AVX-512";
  for (std::uint32_t lane = 0; lane < kRunWidth; ++lane) {
    std::vector<BlockWords> words = HeldKeyed();
    words[20 + lane].ref_count = 2;
    EXPECT_EQ(FindRun(Ids(20, 1).data(), words.data(), 1, false),
              RunStep::kNone)
        << lane;
    EXPECT_EQ(FindRun(Ids(20, 1).data(), words.data(), 2, false),
              RunStep::kNone);
    words = HeldKeyed();
    words[20 + lane].primary_num_tokens = 0;
    EXPECT_EQ(FindRun(Ids(35, -1).data(), words.data(), 1, true),
              RunStep::kNone)
        << lane;
    EXPECT_EQ(FindRun(Ids(35, -1).data(), words.data(), 1, false),
              RunStep::kDescending)
        << lane;
  }
}

TEST(BlockRunsTest, SettingReferencesKeepsKeys) {
  std::vector<BlockWords> words = HeldKeyed();
  words[3].ref_count = 7;
  words[4].primary_num_tokens = 0;
  SetReferences(&words[3], 0);
  for (std::uint32_t i = 0; i < 64; ++i) {
    const bool in_run = i >= 3 && i < 3 + kRunWidth;
    EXPECT_EQ(words[i].ref_count, in_run ? 0u : 1u) << i;
    EXPECT_EQ(words[i].primary_num_tokens, i == 4 ? 0u : 16u) << i;
  }
}

// Links of ids 0..63 as a list 0, 1, ..., 63 (ends linked to 1000).
std::vector<LinkWords> Ascending() {
  std::vector<LinkWords> links(64);
  for (std::uint32_t i = 0; i < 64; ++i)
    links[i] = {.prev = i - 1, .next = i + 1};
  links[0].prev = 1000;
  links[63].next = 1000;
  return links;
}

TEST(BlockRunsTest, FindsIdsThatFollowEachOtherOnAList) {
  if (!FindsRuns()) GTEST_SKIP() << "no AVX-512";
  std::vector<LinkWords> up = Ascending();
  EXPECT_EQ(FindLinkedRun(&up[10], 10), RunStep::kAscending);
  std::vector<LinkWords> down(64);
  for (std::uint32_t i = 0; i < 64; ++i) {
    down[i] = {.prev = up[i].next, .next = up[i].prev};
  }
  EXPECT_EQ(FindLinkedRun(&down[10], 10), RunStep::kDescending);
  // The run's outer links may be anything.
  up[10].prev = 7777;
  up[25].next = 7777;
  down[10].next = 7777;
  down[25].prev = 7777;
  EXPECT_EQ(FindLinkedRun(&up[10], 10), RunStep::kAscending);
  EXPECT_EQ(FindLinkedRun(&down[10], 10), RunStep::kDescending);
  // Any inner link broken: no run.
  for (std::uint32_t k = 0; k < kRunWidth; ++k) {
    for (const bool next : {false, true}) {
      if ((k == 0 && !next) || (k == kRunWidth - 1 && next)) continue;
      std::vector<LinkWords> broken = Ascending();
      (next ? broken[10 + k].next : broken[10 + k].prev) = 3;
      EXPECT_EQ(FindLinkedRun(&broken[10], 10), RunStep::kNone) << k << next;
    }
  }
  // The right links for another lowest id: no run.
  EXPECT_EQ(FindLinkedRun(&Ascending()[10], 11), RunStep::kNone);
}

using testing::KeyNumber;

// The pool as the spec states it, one block at a time: reference counts,
// which blocks carry a key, and the free queue.
struct PoolModel {
  std::vector<std::uint32_t> refs;
  std::vector<bool> keyed;
  std::deque<BlockId> queue;

  explicit PoolModel(std::uint32_t num_blocks)
      : refs(num_blocks, 0), keyed(num_blocks, false) {
    for (std::uint32_t i = 1; i < num_blocks; ++i) queue.push_back(BlockId{i});
  }
  BlockId Allocate() {
    const BlockId id = queue.front();
    queue.pop_front();
    refs[ToIndex(id)] = 1;
    keyed[ToIndex(id)] = false;  // evicted
    return id;
  }
  void Touch(BlockId id) {
    if (refs[ToIndex(id)]++ == 0) {
      queue.erase(std::find(queue.begin(), queue.end(), id));
    }
  }
  void Free(std::vector<BlockId> ordered, FreeOrder order) {
    std::vector<BlockId> front;
    for (BlockId id : ordered) {
      if (id == kNullBlock || --refs[ToIndex(id)] > 0) continue;
      if (keyed[ToIndex(id)] || order == FreeOrder::kAppendAll) {
        queue.push_back(id);
      } else {
        front.push_back(id);
      }
    }
    queue.insert(queue.begin(), front.begin(), front.end());
  }
};

TEST(BlockRunsTest, AFreedPromptIsAdoptedWhole) {
  for (const bool last_first : {false, true}) {
    BlockPool pool(100, Caching::kEnabled);
    std::vector<BlockId> table;
    pool.Allocate(64, table);
    for (std::uint64_t i = 0; i < table.size(); ++i) {
      pool.CacheFull(table[i], KeyNumber(i), 16);
    }
    pool.Free(table, last_first ? BlockPool::Walk::kLastToFirst
                                : BlockPool::Walk::kFirstToLast);
    ASSERT_EQ(pool.num_free_blocks(), 99u);
    EXPECT_EQ(pool.NumUnreferenced(table), 64u);
    EXPECT_TRUE(pool.AllKeyedIn(table, 0));
    pool.TouchAll(std::span<const BlockId>(table).subspan(8, 40));
    // The untouched 35 free blocks, then the table's 24 in the order freed.
    std::vector<BlockId> expected;
    for (std::uint32_t i = 65; i < 100; ++i) expected.push_back(BlockId{i});
    std::vector<BlockId> rest(table.begin(), table.begin() + 8);
    rest.insert(rest.end(), table.begin() + 48, table.end());
    if (last_first) std::reverse(rest.begin(), rest.end());
    expected.insert(expected.end(), rest.begin(), rest.end());
    EXPECT_EQ(pool.FreeQueueSnapshot(), expected) << last_first;
    for (std::size_t i = 0; i < table.size(); ++i) {
      EXPECT_EQ(pool.ref_count(table[i]), i >= 8 && i < 48 ? 1u : 0u) << i;
    }
    EXPECT_TRUE(pool.CheckInvariants());
  }
}

RC_GTEST_PROP(BlockRunsTest, FreeAndAdoptMatchOneBlockAtATime, ()) {
  const auto num_blocks = *rc::gen::inRange<std::uint32_t>(2, 200);
  const FreeOrder order =
      *rc::gen::element(FreeOrder::kAppendAll, FreeOrder::kPrependUncached);
  BlockPool pool(num_blocks, Caching::kEnabled, Events::kDisabled, order);
  PoolModel model(num_blocks);
  std::vector<std::vector<BlockId>> held;  // tables, each a reference
  std::vector<std::vector<BlockId>> freed;
  std::uint64_t next_key = 0;
  // Frees `table` in the pool and the model, first to last or last first.
  const auto free_either_way = [&](const std::vector<BlockId>& table) {
    const bool last_first = *rc::gen::arbitrary<bool>();
    pool.Free(table, last_first ? BlockPool::Walk::kLastToFirst
                                : BlockPool::Walk::kFirstToLast);
    std::vector<BlockId> ordered = table;
    if (last_first) std::reverse(ordered.begin(), ordered.end());
    model.Free(ordered, order);
  };
  const auto num_steps = *rc::gen::inRange(1, 60);
  for (int step = 0; step < num_steps; ++step) {
    // 4: a table allocated, keyed, freed and hit at once (the cycle of a
    // prompt cached and found again, where runs are likeliest).
    const int op = *rc::gen::inRange(0, 5);
    if (op == 4 && pool.num_free_blocks() > 0) {
      std::vector<BlockId> table;
      pool.Allocate(
          *rc::gen::inRange<std::uint32_t>(1, pool.num_free_blocks() + 1),
          table);
      for (BlockId id : table) {
        RC_ASSERT(model.Allocate() == id);
        pool.CacheFull(id, KeyNumber(next_key++), 16);
        model.keyed[ToIndex(id)] = true;
      }
      free_either_way(table);
      table.resize(*rc::gen::inRange<std::size_t>(0, table.size() + 1));
      RC_ASSERT(pool.NumUnreferenced(table) == table.size());
      pool.TouchAll(table);
      for (BlockId id : table) model.Touch(id);
      held.push_back(std::move(table));
    } else if (op == 0 && pool.num_free_blocks() > 0) {  // a new table
      const auto n =
          *rc::gen::inRange<std::uint32_t>(1, pool.num_free_blocks() + 1);
      std::vector<BlockId> table;
      pool.Allocate(n, table);
      // Mostly whole tables keyed, as committed prompts are (a block
      // without a key breaks a run where uncached blocks go to the front).
      const bool all_keyed = *rc::gen::inRange(0, 4) > 0;
      for (BlockId id : table) {
        RC_ASSERT(model.Allocate() == id);
        if (all_keyed || *rc::gen::inRange(0, 2) > 0) {
          pool.CacheFull(id, KeyNumber(next_key++), 16);
          model.keyed[ToIndex(id)] = true;
        }
      }
      if (*rc::gen::inRange(0, 4) == 0) {  // null padding, as windows have
        table.insert(table.begin(), *rc::gen::inRange<std::size_t>(1, 20),
                     kNullBlock);
      }
      held.push_back(std::move(table));
    } else if ((op == 1 || op == 2) && !(op == 1 ? freed : held).empty()) {
      // A hit on part of a freed table (its blocks free, or taken since) or
      // of a held one, adopted in bulk; first the counts adoption reads.
      const auto& tables = op == 1 ? freed : held;
      // Often the last table freed, whose blocks are likeliest still free.
      const std::vector<BlockId>& source =
          *rc::gen::arbitrary<bool>()
              ? tables.back()
              : tables[*rc::gen::inRange<std::size_t>(0, tables.size())];
      const auto n = *rc::gen::inRange<std::size_t>(0, source.size() + 1);
      std::vector<BlockId> table(
          source.begin(), source.begin() + static_cast<std::ptrdiff_t>(n));
      std::uint32_t unreferenced = 0;
      bool keyed = true;
      for (BlockId id : table) {
        if (id == kNullBlock) continue;
        unreferenced += model.refs[ToIndex(id)] == 0;
        keyed = keyed && model.keyed[ToIndex(id)];
      }
      RC_ASSERT(pool.NumUnreferenced(table) == unreferenced);
      RC_ASSERT(pool.AllKeyedIn(table, 0) == keyed);
      pool.TouchAll(table);
      for (BlockId id : table) {
        if (id != kNullBlock) model.Touch(id);
      }
      held.push_back(std::move(table));
    } else if (op == 3 && !held.empty()) {  // a table freed, either way
      const std::size_t i = *rc::gen::inRange<std::size_t>(0, held.size());
      const std::vector<BlockId> table = std::move(held[i]);
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
      freed.push_back(table);
      free_either_way(table);
    }
    RC_ASSERT(pool.FreeQueueSnapshot() ==
              std::vector<BlockId>(model.queue.begin(), model.queue.end()));
    for (std::uint32_t i = 1; i < num_blocks; ++i) {
      RC_ASSERT(pool.ref_count(BlockId{i}) == model.refs[i]);
    }
  }
  RC_ASSERT(pool.CheckInvariants());
}

}  // namespace
}  // namespace hkv::internal
