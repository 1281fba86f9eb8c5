// The bounded queue between EventPublisher::Publish and the publisher's
// thread: a full queue drops its oldest batch and counts it, so a slow or
// absent subscriber never blocks the scheduler nor grows memory.
//
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "hkv/events.h"

namespace hkv::internal {

struct PendingBatch {
  std::vector<KvEvent> events = {};
  double timestamp_s = 0.0;
  // Given by Push, from 0: a dropped batch leaves a gap subscribers see.
  std::uint64_t seq = 0;
};

class BatchQueue {
 public:
  // REQUIRES: capacity >= 1.
  explicit BatchQueue(std::size_t capacity) : capacity_(capacity) {}

  void Push(PendingBatch batch);
  // The oldest batch, waiting up to `timeout` for one; none on time-out or
  // once closed and empty.
  std::optional<PendingBatch> Pop(std::chrono::milliseconds timeout);
  // The thread has handled (sent) the batch it popped.
  void MarkDone();
  // Wakes the consumer; Push still queues, Pop drains what is left.
  void Close();
  // Waits until every pushed batch was popped and marked done, or dropped.
  bool WaitDrained(std::chrono::milliseconds timeout);
  std::uint64_t dropped() const;

 private:
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<PendingBatch> batches_;
  std::uint64_t pushed_ = 0;   // the next batch's sequence number
  std::uint64_t handled_ = 0;  // popped and done, or dropped
  std::uint64_t dropped_ = 0;
  bool closed_ = false;
};

}  // namespace hkv::internal
