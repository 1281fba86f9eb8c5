// The free-block queue: an intrusive doubly linked list over block ids with
// one sentinel, oldest (next to allocate) at the front. O(1) push, pop and
// removal from the middle; never allocates after construction.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

#include "hkv/types.h"

namespace hkv::internal {

class FreeBlockQueue {
 public:
  // Holds ids 0 .. num_blocks-1, in id order.
  explicit FreeBlockQueue(std::uint32_t num_blocks);

  std::uint32_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool Contains(BlockId id) const {
    return links_[ToIndex(id)].next != kNotQueued;
  }
  BlockId front() const { return BlockId{links_[sentinel_].next}; }

  // REQUIRES: !empty().
  BlockId PopFront();
  // REQUIRES: Contains(id).
  void Remove(BlockId id);
  // REQUIRES: !Contains(id).
  void PushBack(BlockId id);
  void PushFront(BlockId id);

  // The queue from front to back. O(size); for tests and diagnostics.
  std::vector<BlockId> Snapshot() const;
  // Returns false when links are inconsistent with size. O(size).
  bool CheckInvariants() const;
  // Bytes of the links (capacity times element size).
  std::size_t MemoryBytes() const { return links_.capacity() * sizeof(Link); }

 private:
  static constexpr std::uint32_t kNotQueued = 0xffffffffu;
  struct Link {
    std::uint32_t prev = kNotQueued;
    std::uint32_t next = kNotQueued;  // kNotQueued <=> not in the queue
  };

  void InsertBefore(std::uint32_t at, std::uint32_t index);

  std::vector<Link> links_;  // one per block, then the sentinel
  std::uint32_t sentinel_;
  std::uint32_t size_ = 0;
};

}  // namespace hkv::internal
