// Chain runs: the runs themselves (appending, branching, cutting, sealing,
// stale links), and BlockPool::FindCachedRun against a walk of the index key
// by key, under random chained commits, duplicates, eviction by allocation,
// explicit eviction and resets.
#include "core/chain_runs.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstring>
#include <optional>
#include <vector>

#include "core/block_pool.h"

namespace hkv::internal {
namespace {

constexpr BlockId B(std::uint32_t i) { return BlockId{i}; }

std::vector<BlockId> Chain(const ChainRuns& runs, BlockId tip,
                           std::uint32_t depth) {
  // Appended after what `out` holds already, which it keeps.
  std::vector<BlockId> out = {B(9)};
  runs.AppendChain(tip, depth, out);
  EXPECT_EQ(out.front(), B(9));
  out.erase(out.begin());
  return out;
}

TEST(ChainRunsTest, AppendsAtTheEndAndBranchesIntoLinkedRuns) {
  ChainRuns runs(16);
  runs.Append(B(1), 0, kNullBlock);
  runs.Append(B(2), 1, B(1));
  runs.Append(B(3), 2, B(2));
  EXPECT_EQ(runs.num_runs(), 1u);
  // Another chain leaves depth 1: a run linked to the first.
  runs.Append(B(4), 2, B(2));
  runs.Append(B(5), 3, B(4));
  EXPECT_EQ(runs.num_runs(), 2u);
  EXPECT_TRUE(runs.Certified(B(5), 3));
  EXPECT_EQ(Chain(runs, B(5), 3),
            (std::vector<BlockId>{B(1), B(2), B(4), B(5)}));
  EXPECT_EQ(Chain(runs, B(3), 2), (std::vector<BlockId>{B(1), B(2), B(3)}));
  EXPECT_FALSE(runs.Certified(B(5), 2));  // not at that depth
  EXPECT_TRUE(runs.CheckInvariants());
}

TEST(ChainRunsTest, ACutBelowALinkBreaksTheBranchOneAboveDoesNot) {
  ChainRuns runs(16);
  runs.Append(B(1), 0, kNullBlock);
  runs.Append(B(2), 1, B(1));
  runs.Append(B(3), 2, B(2));
  runs.Append(B(4), 2, B(2));  // branch linked at depth 1
  runs.Forget(B(3));           // above the link
  EXPECT_TRUE(runs.Certified(B(4), 2));
  EXPECT_FALSE(runs.IsMember(B(3)));
  // The cut run is sealed: depth 2 after block 2 starts a new run.
  runs.Append(B(6), 2, B(2));
  EXPECT_EQ(runs.num_runs(), 3u);
  runs.Forget(B(2));  // at the link: the branches lose depth 1
  EXPECT_FALSE(runs.IsMember(B(2)));
  EXPECT_FALSE(runs.Certified(B(4), 2));
  EXPECT_FALSE(runs.Certified(B(6), 2));
  EXPECT_TRUE(runs.Certified(B(1), 0));
  EXPECT_TRUE(runs.CheckInvariants());
}

TEST(ChainRunsTest, ACutLetsGoOfTheMembersAfterIt) {
  ChainRuns runs(16);
  runs.Append(B(1), 0, kNullBlock);
  runs.Append(B(2), 1, B(1));
  runs.Append(B(3), 2, B(2));
  runs.Forget(B(2));
  EXPECT_TRUE(runs.IsMember(B(1)));
  EXPECT_FALSE(runs.IsMember(B(3)));
  EXPECT_FALSE(runs.Certified(B(3), 2));
  // Nothing follows a block that is in no run.
  runs.Append(B(4), 3, B(3));
  EXPECT_FALSE(runs.IsMember(B(4)));
  EXPECT_TRUE(runs.CheckInvariants());
}

TEST(ChainRunsTest, AFreedParentsReusedSlotCertifiesNothing) {
  ChainRuns runs(16);
  runs.Append(B(1), 0, kNullBlock);
  runs.Append(B(2), 1, B(1));  // same run
  runs.Append(B(3), 1, B(1));  // depth 1 again: a branch at depth 0
  runs.Forget(B(1));           // the first run goes, with block 2
  EXPECT_EQ(runs.num_runs(), 1u);
  // A new root takes the freed slot; the branch's link must not see it.
  runs.Append(B(7), 0, kNullBlock);
  EXPECT_FALSE(runs.Certified(B(3), 1));
  EXPECT_TRUE(runs.Certified(B(7), 0));
  EXPECT_TRUE(runs.CheckInvariants());
}

// A hot first block keeps each long run alive while its tail is evicted
// deepest first: the cut runs must give their room back.
TEST(ChainRunsTest, CutRunsGiveTheirRoomBack) {
  constexpr std::uint32_t kRuns = 50;
  constexpr std::uint32_t kLength = 400;
  ChainRuns runs(kRuns * kLength + 1);
  const std::size_t empty = runs.MemoryBytes();
  for (std::uint32_t r = 0; r < kRuns; ++r) {
    const std::uint32_t first = 1 + r * kLength;
    runs.Append(B(first), 0, kNullBlock);
    for (std::uint32_t d = 1; d < kLength; ++d) {
      runs.Append(B(first + d), d, B(first + d - 1));
    }
    for (std::uint32_t d = kLength; d-- > 1;) runs.Forget(B(first + d));
  }
  EXPECT_EQ(runs.num_runs(), kRuns);
  // One member each: at most 4 ids of room a run, plus the run records.
  EXPECT_LE(runs.MemoryBytes() - empty, kRuns * (4 * sizeof(BlockId) + 128));
  EXPECT_TRUE(runs.CheckInvariants());
}

TEST(ChainRunsTest, ClearDropsEverything) {
  ChainRuns runs(8);
  runs.Append(B(1), 0, kNullBlock);
  runs.Append(B(2), 1, B(1));
  runs.Clear();
  EXPECT_TRUE(runs.empty());
  EXPECT_FALSE(runs.IsMember(B(1)));
  EXPECT_FALSE(runs.Certified(B(2), 1));
  EXPECT_TRUE(runs.CheckInvariants());
}

// A chained key: depth and path (tokens over a small alphabet) folded into a
// digest-like first word, the path repeated in the tail so keys are exact.
BlockHash ChainKey(const std::vector<int>& path, std::size_t depth) {
  constexpr std::uint64_t kMul = 0x9e3779b97f4a7c15;
  std::uint64_t word = 0x243f6a8885a308d3;
  std::uint64_t tail = 0;
  for (std::size_t i = 0; i <= depth; ++i) {
    word = (word ^ static_cast<std::uint64_t>(path[i] + 1)) * kMul;
    word ^= word >> 29;
    tail = tail * 4 + static_cast<std::uint64_t>(path[i]);
  }
  BlockHash hash;
  std::memcpy(hash.bytes.data(), &word, sizeof word);
  std::memcpy(hash.bytes.data() + 8, &tail, sizeof tail);
  const std::uint64_t length = depth + 1;
  std::memcpy(hash.bytes.data() + 16, &length, sizeof length);
  return hash;
}

std::vector<BlockHash> ChainKeys(const std::vector<int>& path) {
  std::vector<BlockHash> keys;
  for (std::size_t d = 0; d < path.size(); ++d)
    keys.push_back(ChainKey(path, d));
  return keys;
}

// What a lookup must return: FindCached key by key, up to the first miss.
std::vector<BlockId> Walk(const BlockPool& pool,
                          const std::vector<BlockHash>& keys, GroupId group) {
  std::vector<BlockId> out;
  for (const BlockHash& key : keys) {
    const std::optional<BlockId> block =
        pool.FindCached({.hash = key, .group = group});
    if (!block) break;
    out.push_back(*block);
  }
  return out;
}

struct Held {
  std::vector<int> path;
  std::vector<BlockId> blocks;  // depth 0 .. blocks.size() - 1
  std::size_t committed = 0;
};

// Commits held.blocks [held.committed, end) the way a full-attention group
// does (GroupManager::CommitFullBlocks).
void CommitUpTo(BlockPool& pool, Held& held, std::size_t end, GroupId group) {
  const std::vector<BlockHash> keys = ChainKeys(held.path);
  BlockId previous = kNullBlock;
  if (held.committed > 0) {
    previous =
        pool.FindCached({.hash = keys[held.committed - 1], .group = group})
            .value_or(kNullBlock);
  }
  for (std::size_t d = held.committed; d < end; ++d) {
    previous =
        pool.CacheChained(held.blocks[d], {.hash = keys[d], .group = group},
                          static_cast<std::uint32_t>(16 * (d + 1)),
                          static_cast<std::uint32_t>(d), previous);
  }
  held.committed = end;
}

RC_GTEST_PROP(ChainRunsTest, FindCachedRunAgreesWithTheWalk, ()) {
  const auto num_blocks = *rc::gen::inRange<std::uint32_t>(4, 40);
  BlockPool pool(num_blocks, Caching::kEnabled);
  const GroupId group{*rc::gen::inRange<std::uint32_t>(0, 2)};
  std::vector<Held> running;
  std::vector<std::vector<int>> seen;
  const auto num_steps = *rc::gen::inRange(1, 120);
  for (int step = 0; step < num_steps; ++step) {
    const int op = *rc::gen::inRange(0, 10);
    if (op < 4) {
      // A request: often an earlier path's prefix, extended; adopts its
      // hit (one probe short, sometimes), allocates the rest, commits some.
      std::vector<int> path;
      if (!seen.empty() && *rc::gen::inRange(0, 4) > 0) {
        const auto& base = seen[*rc::gen::inRange<std::size_t>(0, seen.size())];
        path.assign(base.begin(),
                    base.begin() + *rc::gen::inRange<std::ptrdiff_t>(
                                       0, std::ssize(base) + 1));
      }
      const auto extra = *rc::gen::inRange(path.empty() ? 1 : 0, 12);
      for (int i = 0; i < extra; ++i) path.push_back(*rc::gen::inRange(0, 2));
      seen.push_back(path);
      const std::vector<BlockHash> keys = ChainKeys(path);
      std::vector<BlockId> hit;
      pool.FindCachedRun(keys, 1, keys.size(), group, hit);
      if (!hit.empty() && *rc::gen::inRange(0, 4) == 0) hit.pop_back();
      Held held;
      held.path = path;
      for (BlockId b : hit) pool.Touch(b);
      held.blocks = hit;
      held.committed = hit.size();
      const std::size_t want = path.size() - hit.size();
      if (want > pool.num_free_blocks()) {
        pool.Free(
            std::vector<BlockId>(held.blocks.rbegin(), held.blocks.rend()));
        continue;
      }
      pool.Allocate(static_cast<std::uint32_t>(want), held.blocks);
      CommitUpTo(pool, held, *rc::gen::inRange(held.committed, path.size() + 1),
                 group);
      running.push_back(std::move(held));
    } else if (op < 5 && !running.empty()) {
      // More of a running request's blocks committed.
      Held& held = running[*rc::gen::inRange<std::size_t>(0, running.size())];
      CommitUpTo(pool, held,
                 *rc::gen::inRange(held.committed, held.blocks.size() + 1),
                 group);
    } else if (op < 7 && !running.empty()) {
      const auto i = *rc::gen::inRange<std::size_t>(0, running.size());
      const Held& held = running[i];
      pool.Free(std::vector<BlockId>(held.blocks.rbegin(), held.blocks.rend()));
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (op < 8) {
      pool.EvictKeys(BlockId{*rc::gen::inRange<std::uint32_t>(1, num_blocks)});
    } else if (op < 9 && running.empty() && *rc::gen::inRange(0, 4) == 0) {
      RC_ASSERT(pool.Reset());
    } else if (!seen.empty()) {
      const auto& path = seen[*rc::gen::inRange<std::size_t>(0, seen.size())];
      const std::vector<BlockHash> keys = ChainKeys(path);
      const auto count = *rc::gen::inRange<std::size_t>(0, keys.size() + 1);
      // Block keys every `stride` keys (finer hash units), after ids the
      // output holds already.
      const auto stride = *rc::gen::inRange<std::size_t>(1, 3);
      std::vector<BlockHash> unit_keys;
      for (const BlockHash& key : keys) {
        for (std::size_t u = 1; u < stride; ++u) unit_keys.push_back({});
        unit_keys.push_back(key);
      }
      std::vector<BlockId> found = {B(7)};
      pool.FindCachedRun(unit_keys, stride, count, group, found);
      std::vector<BlockId> walked = Walk(pool, keys, group);
      if (walked.size() > count) walked.resize(count);
      walked.insert(walked.begin(), B(7));
      RC_ASSERT(found == walked);
    }
    RC_ASSERT(pool.CheckInvariants());
  }
}

TEST(ChainRunsTest, AWholeCommittedChainIsCertifiedFromItsDeepestKey) {
  BlockPool pool(64, Caching::kEnabled);
  const GroupId group{0};
  Held held;
  held.path.assign(40, 1);
  pool.Allocate(40, held.blocks);
  CommitUpTo(pool, held, 20, group);  // two commits: one run
  CommitUpTo(pool, held, 40, group);
  const std::vector<BlockHash> keys = ChainKeys(held.path);
  std::vector<BlockId> found;
  pool.FindCachedRun(keys, 1, keys.size(), group, found);
  EXPECT_EQ(found, held.blocks);
  EXPECT_EQ(found, Walk(pool, keys, group));
  EXPECT_EQ(pool.num_chain_runs(), 1u);
}

}  // namespace
}  // namespace hkv::internal
