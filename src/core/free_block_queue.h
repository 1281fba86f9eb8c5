// The free-block queues: intrusive doubly linked lists over block ids, one
// per pool, sharing one array of links (a sentinel per list), oldest (next
// to allocate) at the front. O(1) push, pop and removal from the middle;
// never allocates after construction.
//
// Thread-compatible.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "check.h"
#include "core/block_runs.h"
#include "hkv/types.h"

namespace hkv::internal {

class FreeBlockQueue {
 public:
  // Ids 0 .. num_blocks-1 in id order, ids [starts[l], starts[l + 1]) in
  // list l (the last up to num_blocks). REQUIRES: starts begins with 0 and
  // ascends strictly below num_blocks (else UsageError).
  FreeBlockQueue(std::uint32_t num_blocks,
                 std::span<const std::uint32_t> starts);

  std::uint32_t num_lists() const {
    return static_cast<std::uint32_t>(sizes_.size());
  }
  // The list that holds `id` when it is free.
  std::uint32_t ListOf(BlockId id) const {
    if (starts_.size() == 1) return 0;
    const auto after =
        std::upper_bound(starts_.begin(), starts_.end(), ToIndex(id));
    return static_cast<std::uint32_t>(after - starts_.begin() - 1);
  }
  // Ids on all lists.
  std::uint32_t size() const { return total_; }
  std::uint32_t size(std::uint32_t list) const { return sizes_[list]; }
  bool Contains(BlockId id) const {
    return links_[ToIndex(id)].next != kNotQueued;
  }
  BlockId front(std::uint32_t list) const {
    return BlockId{links_[Sentinel(list)].next};
  }

  // The id `n` places behind the front of `list`. REQUIRES: n < size(list).
  // O(n).
  BlockId Nth(std::uint32_t list, std::uint32_t n) const;
  // The ids after and before `id` on its list; none past either end.
  // REQUIRES: Contains(id).
  std::optional<BlockId> Next(BlockId id) const;
  // The block after `id`, unchecked and inline (a sentinel's index past the
  // last). REQUIRES: Contains(id).
  std::uint32_t RawNext(BlockId id) const { return links_[ToIndex(id)].next; }
  std::optional<BlockId> Prev(BlockId id) const;
  // REQUIRES: size(list) > 0.
  BlockId PopFront(std::uint32_t list);
  // REQUIRES: Contains(id).
  void Remove(BlockId id) {
    const std::uint32_t i = ToIndex(id);
    HKV_DCHECK(Contains(id));
    links_[links_[i].prev].next = links_[i].next;
    links_[links_[i].next].prev = links_[i].prev;
    links_[i] = Link{};
    --sizes_[ListOf(id)];
    --total_;
  }
  // Removes ids lowest .. lowest + kLength - 1 when they follow each other
  // on one list, either way, and returns true; else changes nothing and
  // returns false. REQUIRES: the ids exist.
  template <std::uint32_t kLength>
  bool RemoveRun(std::uint32_t lowest) {
    static_assert(kLength == kRunWidth, "FindLinkedRun's width");
    Link* run = &links_[lowest];
    // The same two words; FindLinkedRun reads them only through vector
    // loads, which may alias anything.
    static_assert(sizeof(Link) == sizeof(LinkWords) &&
                  offsetof(Link, prev) == offsetof(LinkWords, prev) &&
                  offsetof(Link, next) == offsetof(LinkWords, next));
    const RunStep step =
        FindLinkedRun(reinterpret_cast<const LinkWords*>(run), lowest);
    if (step == RunStep::kNone) return false;
    const bool up = step == RunStep::kAscending;
    const std::uint32_t highest = lowest + kLength - 1;
    const std::uint32_t before = up ? run[0].prev : links_[highest].prev;
    const std::uint32_t after = up ? links_[highest].next : run[0].next;
    links_[before].next = after;
    links_[after].prev = before;
    for (std::uint32_t k = 0; k < kLength; ++k) run[k] = Link{};
    sizes_[ListOf(BlockId{lowest})] -= kLength;
    total_ -= kLength;
    return true;
  }
  // Onto ListOf(id). REQUIRES: !Contains(id).
  void PushBack(BlockId id) {
    HKV_DCHECK(!Contains(id));
    const std::uint32_t list = ListOf(id);
    InsertBefore(Sentinel(list), ToIndex(id), list);
  }
  // PushBack calls in a batch, on a queue of one list: each id is linked as
  // it comes, the list's tail and size are written once, by FinishAppend
  // (nothing else may use the queue in between). REQUIRES: num_lists() == 1;
  // no id appended Contains(), none twice.
  struct Appender {
    std::uint32_t tail;
    std::uint32_t count = 0;
  };
  Appender StartAppend() const {
    HKV_DCHECK(num_lists() == 1);
    return {.tail = links_[Sentinel(0)].prev};
  }
  void Append(Appender& batch, BlockId id) {
    HKV_DCHECK(!Contains(id));
    const std::uint32_t i = ToIndex(id);
    links_[batch.tail].next = i;
    links_[i].prev = batch.tail;
    batch.tail = i;
    ++batch.count;
  }
  // Append for each id of the run first, first + 1, ... (first - 1, ...
  // when `descending`), kLength of them, in that order, linked in one pass.
  // The run's last link forward is left for the next append or FinishAppend.
  // REQUIRES: the ids exist.
  template <std::uint32_t kLength>
  void AppendRun(Appender& batch, std::uint32_t first, bool descending) {
    static_assert(kLength >= 2);
    links_[batch.tail].next = first;
    // The run's links in the order of their ids, from `lowest`: each id's
    // neighbours are the ids either side of it.
    const std::uint32_t lowest = descending ? first - (kLength - 1) : first;
    Link* run = &links_[lowest];
    for (std::uint32_t k = 0; k < kLength; ++k) {
      HKV_DCHECK(!Contains(BlockId{lowest + k}));
      run[k] = descending
                   ? Link{.prev = lowest + k + 1, .next = lowest + k - 1}
                   : Link{.prev = lowest + k - 1, .next = lowest + k + 1};
    }
    links_[first].prev = batch.tail;
    batch.tail = descending ? lowest : first + (kLength - 1);
    batch.count += kLength;
  }
  void FinishAppend(const Appender& batch) {
    links_[batch.tail].next = Sentinel(0);
    links_[Sentinel(0)].prev = batch.tail;
    sizes_[0] += batch.count;
    total_ += batch.count;
  }
  void PushFront(BlockId id) {
    HKV_DCHECK(!Contains(id));
    const std::uint32_t list = ListOf(id);
    InsertBefore(links_[Sentinel(list)].next, ToIndex(id), list);
  }

  // The lists from front to back, one after the other. O(size); for tests
  // and diagnostics.
  std::vector<BlockId> Snapshot() const;
  // Returns false when links are inconsistent with the sizes or an id sits
  // on another list than its own. O(num_blocks).
  bool CheckInvariants() const;
  // Bytes of the links and list bounds (capacities times element sizes).
  std::size_t MemoryBytes() const {
    return links_.capacity() * sizeof(Link) +
           (starts_.capacity() + sizes_.capacity()) * sizeof(std::uint32_t);
  }

 private:
  static constexpr std::uint32_t kNotQueued = 0xffffffffu;
  struct Link {
    std::uint32_t prev = kNotQueued;
    std::uint32_t next = kNotQueued;  // kNotQueued <=> not in a list
  };

  std::uint32_t Sentinel(std::uint32_t list) const { return num_ids_ + list; }
  void InsertBefore(std::uint32_t at, std::uint32_t index, std::uint32_t list) {
    const std::uint32_t prev = links_[at].prev;
    links_[index] = {.prev = prev, .next = at};
    links_[prev].next = index;
    links_[at].prev = index;
    ++sizes_[list];
    ++total_;
  }

  std::uint32_t num_ids_;
  std::vector<Link> links_;  // one per block, then one sentinel per list
  std::vector<std::uint32_t> starts_;  // first id of each list
  std::vector<std::uint32_t> sizes_;   // per list
  std::uint32_t total_ = 0;
};

}  // namespace hkv::internal
