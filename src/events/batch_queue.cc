#include "events/batch_queue.h"

#include <utility>

namespace hkv::internal {

void BatchQueue::Push(PendingBatch batch) {
  {
    std::lock_guard lock(mutex_);
    if (batches_.size() == capacity_) {
      batches_.pop_front();
      ++dropped_;
      ++handled_;
    }
    batch.seq = pushed_++;
    batches_.push_back(std::move(batch));
  }
  changed_.notify_all();
}

std::optional<PendingBatch> BatchQueue::Pop(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout,
                    [this] { return !batches_.empty() || closed_; });
  if (batches_.empty()) return std::nullopt;
  PendingBatch batch = std::move(batches_.front());
  batches_.pop_front();
  return batch;
}

void BatchQueue::MarkDone() {
  {
    std::lock_guard lock(mutex_);
    ++handled_;
  }
  changed_.notify_all();
}

void BatchQueue::Close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  changed_.notify_all();
}

bool BatchQueue::WaitDrained(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout,
                           [this] { return handled_ == pushed_; });
}

std::uint64_t BatchQueue::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

}  // namespace hkv::internal
