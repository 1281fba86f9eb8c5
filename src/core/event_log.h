// The queue of KV events the pool and the group managers produce, drained by
// the cache manager. Recording is a no-op when events are off.
//
// Thread-compatible.
#pragma once

#include <type_traits>
#include <utility>
#include <vector>

#include "hkv/events.h"

namespace hkv::internal {

enum class Events { kDisabled, kEnabled };

class EventLog {
 public:
  explicit EventLog(Events mode) : enabled_(mode == Events::kEnabled) {}

  bool enabled() const { return enabled_; }
  template <typename Event>
  void Record(Event&& event) {
    if (enabled_) {
      events_.emplace_back(std::in_place_type<std::decay_t<Event>>,
                           std::forward<Event>(event));
    }
  }
  std::vector<KvEvent> Take() { return std::exchange(events_, {}); }
  // The events recorded and not yet taken, oldest first.
  const std::vector<KvEvent>& pending() const { return events_; }

 private:
  bool enabled_;
  std::vector<KvEvent> events_;
};

}  // namespace hkv::internal
