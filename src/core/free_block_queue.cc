#include "core/free_block_queue.h"

#include "check.h"

namespace hkv::internal {

FreeBlockQueue::FreeBlockQueue(std::uint32_t num_blocks)
    : links_(std::size_t{num_blocks} + 1), sentinel_(num_blocks) {
  links_[sentinel_] = {.prev = sentinel_, .next = sentinel_};
  for (std::uint32_t i = 0; i < num_blocks; ++i) InsertBefore(sentinel_, i);
}

void FreeBlockQueue::InsertBefore(std::uint32_t at, std::uint32_t index) {
  const std::uint32_t prev = links_[at].prev;
  links_[index] = {.prev = prev, .next = at};
  links_[prev].next = index;
  links_[at].prev = index;
  ++size_;
}

BlockId FreeBlockQueue::PopFront() {
  HKV_DCHECK(size_ > 0);
  const BlockId id = front();
  Remove(id);
  return id;
}

void FreeBlockQueue::Remove(BlockId id) {
  const std::uint32_t i = ToIndex(id);
  HKV_DCHECK(Contains(id));
  links_[links_[i].prev].next = links_[i].next;
  links_[links_[i].next].prev = links_[i].prev;
  links_[i] = Link{};
  --size_;
}

void FreeBlockQueue::PushBack(BlockId id) {
  HKV_DCHECK(!Contains(id));
  InsertBefore(sentinel_, ToIndex(id));
}

void FreeBlockQueue::PushFront(BlockId id) {
  HKV_DCHECK(!Contains(id));
  InsertBefore(links_[sentinel_].next, ToIndex(id));
}

std::vector<BlockId> FreeBlockQueue::Snapshot() const {
  std::vector<BlockId> out;
  out.reserve(size_);
  for (std::uint32_t i = links_[sentinel_].next; i != sentinel_;
       i = links_[i].next) {
    out.push_back(BlockId{i});
  }
  return out;
}

bool FreeBlockQueue::CheckInvariants() const {
  std::uint32_t count = 0;
  for (std::uint32_t i = links_[sentinel_].next; i != sentinel_;
       i = links_[i].next) {
    if (i >= sentinel_ || links_[links_[i].next].prev != i || ++count > size_) {
      return false;
    }
  }
  std::uint32_t queued = 0;
  for (std::uint32_t i = 0; i < sentinel_; ++i)
    queued += links_[i].next != kNotQueued;
  return count == size_ && queued == size_;
}

}  // namespace hkv::internal
