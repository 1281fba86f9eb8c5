#include "core/free_block_queue.h"

#include <algorithm>

#include "check.h"

namespace hkv::internal {

FreeBlockQueue::FreeBlockQueue(std::uint32_t num_blocks,
                               std::span<const std::uint32_t> starts)
    : num_ids_(num_blocks),
      links_(std::size_t{num_blocks} + starts.size()),
      starts_(starts.begin(), starts.end()),
      sizes_(starts.size(), 0) {
  HKV_REQUIRE(!starts.empty() && starts[0] == 0,
              "the free lists start at block 0");
  for (std::size_t l = 1; l < starts.size(); ++l) {
    HKV_REQUIRE(starts[l - 1] < starts[l] && starts[l] < num_blocks,
                "each free list holds at least one block");
  }
  for (std::uint32_t l = 0; l < num_lists(); ++l) {
    links_[Sentinel(l)] = {.prev = Sentinel(l), .next = Sentinel(l)};
  }
  for (std::uint32_t i = 0; i < num_blocks; ++i) {
    InsertBefore(Sentinel(ListOf(BlockId{i})), i, ListOf(BlockId{i}));
  }
}

BlockId FreeBlockQueue::Nth(std::uint32_t list, std::uint32_t n) const {
  HKV_DCHECK(n < sizes_[list]);
  std::uint32_t i = links_[Sentinel(list)].next;
  for (; n > 0; --n) i = links_[i].next;
  return BlockId{i};
}

std::optional<BlockId> FreeBlockQueue::Next(BlockId id) const {
  HKV_DCHECK(Contains(id));
  const std::uint32_t next = links_[ToIndex(id)].next;
  if (next >= num_ids_) return std::nullopt;  // a sentinel
  return BlockId{next};
}

std::optional<BlockId> FreeBlockQueue::Prev(BlockId id) const {
  HKV_DCHECK(Contains(id));
  const std::uint32_t prev = links_[ToIndex(id)].prev;
  if (prev >= num_ids_) return std::nullopt;
  return BlockId{prev};
}

BlockId FreeBlockQueue::PopFront(std::uint32_t list) {
  HKV_DCHECK(sizes_[list] > 0);
  const BlockId id = front(list);
  Remove(id);
  return id;
}

std::vector<BlockId> FreeBlockQueue::Snapshot() const {
  std::vector<BlockId> out;
  out.reserve(total_);
  for (std::uint32_t l = 0; l < num_lists(); ++l) {
    for (std::uint32_t i = links_[Sentinel(l)].next; i != Sentinel(l);
         i = links_[i].next) {
      out.push_back(BlockId{i});
    }
  }
  return out;
}

bool FreeBlockQueue::CheckInvariants() const {
  std::uint32_t total = 0;
  for (std::uint32_t l = 0; l < num_lists(); ++l) {
    std::uint32_t count = 0;
    for (std::uint32_t i = links_[Sentinel(l)].next; i != Sentinel(l);
         i = links_[i].next) {
      if (i >= num_ids_ || links_[links_[i].next].prev != i ||
          ListOf(BlockId{i}) != l || ++count > sizes_[l]) {
        return false;
      }
    }
    if (count != sizes_[l]) return false;
    total += count;
  }
  std::uint32_t queued = 0;
  for (std::uint32_t i = 0; i < num_ids_; ++i) {
    queued += links_[i].next != kNotQueued;
  }
  return total == total_ && queued == total_;
}

}  // namespace hkv::internal
