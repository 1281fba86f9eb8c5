#include "engine/arrivals.h"

namespace hkv::internal {

Arrivals::Arrivals(std::span<const SimRequest> workload, ArrivalMode mode,
                   std::uint32_t concurrency)
    : mode_(mode),
      concurrency_(concurrency),
      workload_(workload),
      followers_(workload.size()) {
  for (std::size_t i = 0; i < workload.size(); ++i) {
    if (workload[i].after) {
      followers_[*workload[i].after].push_back(i);
    } else if (mode_ == ArrivalMode::kOpenLoop) {
      timed_.emplace(workload[i].arrival_s, i);
    } else {
      ready_.insert(i);
    }
  }
}

void Arrivals::Release(double now,
                       std::vector<std::pair<std::size_t, double>>& out) {
  if (mode_ == ArrivalMode::kOpenLoop) {
    while (!timed_.empty() && timed_.top().first <= now) {
      out.emplace_back(timed_.top().second, timed_.top().first);
      timed_.pop();
    }
    return;
  }
  while (in_system_ < concurrency_ && !ready_.empty()) {
    out.emplace_back(*ready_.begin(), now);
    ready_.erase(ready_.begin());
    ++in_system_;
  }
}

std::optional<double> Arrivals::NextArrival() const {
  if (mode_ == ArrivalMode::kOpenLoop && !timed_.empty()) {
    return timed_.top().first;
  }
  return std::nullopt;
}

void Arrivals::Finished(std::size_t index, double now) {
  if (in_system_ > 0) --in_system_;
  for (std::size_t follower : followers_[index]) {
    if (mode_ == ArrivalMode::kOpenLoop) {
      timed_.emplace(now + workload_[follower].delay_s, follower);
    } else {
      ready_.insert(follower);
    }
  }
}

}  // namespace hkv::internal
