// FreeBlockQueue alone (src/core/free_block_queue.h): the intrusive lists
// against a model of one std::deque per list, under random pushes (one at
// a time and in batches), pops and removals from the middle.
#include "core/free_block_queue.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <deque>
#include <vector>

namespace hkv::internal {
namespace {

TEST(FreeBlockQueueTest, StartsWithEveryIdOnItsListInIdOrder) {
  const std::vector<std::uint32_t> starts = {0, 3};
  const FreeBlockQueue q(5, starts);
  EXPECT_EQ(q.num_lists(), 2u);
  EXPECT_EQ(q.size(), 5u);
  EXPECT_EQ(q.size(0), 3u);
  EXPECT_EQ(q.size(1), 2u);
  EXPECT_EQ(q.ListOf(BlockId{2}), 0u);
  EXPECT_EQ(q.ListOf(BlockId{3}), 1u);
  EXPECT_EQ(q.front(1), BlockId{3});
  EXPECT_EQ(q.Nth(0, 2), BlockId{2});
  EXPECT_EQ(q.Next(BlockId{2}), std::nullopt);  // the list's end
  EXPECT_EQ(q.Prev(BlockId{3}), std::nullopt);
  EXPECT_TRUE(q.CheckInvariants());
}

RC_GTEST_PROP(FreeBlockQueueTest, BehavesAsOneDequePerList, ()) {
  const auto num_blocks = *rc::gen::inRange<std::uint32_t>(1, 40);
  const auto num_lists = *rc::gen::inRange<std::uint32_t>(1, num_blocks + 1);
  // Strictly ascending starts from 0.
  std::vector<std::uint32_t> starts = {0};
  auto cuts = *rc::gen::unique<std::vector<std::uint32_t>>(
      num_lists - 1, rc::gen::inRange<std::uint32_t>(1, num_blocks));
  std::sort(cuts.begin(), cuts.end());
  starts.insert(starts.end(), cuts.begin(), cuts.end());
  FreeBlockQueue q(num_blocks, starts);
  std::vector<std::deque<std::uint32_t>> model(starts.size());
  std::vector<std::uint32_t> list_of(num_blocks);
  for (std::uint32_t l = 0; l < starts.size(); ++l) {
    const std::uint32_t end =
        l + 1 < starts.size() ? starts[l + 1] : num_blocks;
    for (std::uint32_t id = starts[l]; id < end; ++id) {
      model[l].push_back(id);
      list_of[id] = l;
    }
  }
  std::vector<bool> queued(num_blocks, true);
  const auto steps = *rc::gen::inRange(1, 200);
  for (int s = 0; s < steps; ++s) {
    const auto id = *rc::gen::inRange<std::uint32_t>(0, num_blocks);
    const std::uint32_t l = list_of[id];
    auto& list = model[l];
    const int op = *rc::gen::inRange(0, 5);
    if (op == 0 && !list.empty()) {
      RC_ASSERT(q.PopFront(l) == BlockId{list.front()});
      queued[list.front()] = false;
      list.pop_front();
    } else if (op == 1 && queued[id]) {
      q.Remove(BlockId{id});
      list.erase(std::find(list.begin(), list.end(), id));
      queued[id] = false;
    } else if (op == 2 && !queued[id]) {
      q.PushBack(BlockId{id});
      list.push_back(id);
      queued[id] = true;
    } else if (op == 3 && !queued[id]) {
      q.PushFront(BlockId{id});
      list.push_front(id);
      queued[id] = true;
    } else if (op == 4 && starts.size() == 1) {
      // A batch of appends: the unqueued ids from `id` on, shuffled.
      std::vector<std::uint32_t> batch;
      for (std::uint32_t b = id; b < num_blocks; ++b) {
        if (!queued[b]) batch.push_back(b);
      }
      for (std::size_t i = batch.size(); i > 1; --i) {
        std::swap(batch[i - 1], batch[*rc::gen::inRange<std::size_t>(0, i)]);
      }
      FreeBlockQueue::Appender appender = q.StartAppend();
      for (std::uint32_t b : batch) {
        q.Append(appender, BlockId{b});
        list.push_back(b);
        queued[b] = true;
      }
      q.FinishAppend(appender);
      RC_ASSERT(q.CheckInvariants());
    }
    RC_ASSERT(q.Contains(BlockId{id}) == queued[id]);
    RC_ASSERT(q.size(l) == list.size());
    if (!list.empty()) {
      RC_ASSERT(q.front(l) == BlockId{list.front()});
      const auto n = *rc::gen::inRange<std::size_t>(0, list.size());
      RC_ASSERT(q.Nth(l, static_cast<std::uint32_t>(n)) == BlockId{list[n]});
      const std::uint32_t at = list[n];
      RC_ASSERT(q.Next(BlockId{at}) ==
                (n + 1 < list.size() ? std::optional(BlockId{list[n + 1]})
                                     : std::nullopt));
      RC_ASSERT(q.Prev(BlockId{at}) ==
                (n > 0 ? std::optional(BlockId{list[n - 1]}) : std::nullopt));
    }
  }
  std::vector<BlockId> want;
  std::uint32_t total = 0;
  for (const auto& list : model) {
    for (std::uint32_t id : list) want.push_back(BlockId{id});
    total += static_cast<std::uint32_t>(list.size());
  }
  RC_ASSERT(q.Snapshot() == want);
  RC_ASSERT(q.size() == total);
  RC_ASSERT(q.CheckInvariants());
}

}  // namespace
}  // namespace hkv::internal
