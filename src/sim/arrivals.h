// When the simulator's requests enter the system: at their arrival times
// (open loop) or whenever a seat is free (closed loop), and never before the
// request they follow (SimRequest::after) finished.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "hkv/simulator.h"
#include "hkv/workload.h"

namespace hkv::internal {

class Arrivals {
 public:
  // REQUIRES: ValidateWorkload(workload) succeeds; concurrency > 0.
  Arrivals(std::span<const SimRequest> workload, ArrivalMode mode,
           std::uint32_t concurrency);

  // Requests entering by `now`, in order, appended to `out` as (index,
  // arrival time).
  void Release(double now, std::vector<std::pair<std::size_t, double>>& out);

  // When the next request enters if nothing finishes first; std::nullopt
  // when only a finish can release one.
  std::optional<double> NextArrival() const;

  // Request `index` finished at `now`: its seat frees, its followers may
  // enter.
  void Finished(std::size_t index, double now);

 private:
  using Pending = std::pair<double, std::size_t>;  // (time, index)

  ArrivalMode mode_;
  std::uint32_t concurrency_;
  std::uint32_t in_system_ = 0;
  std::span<const SimRequest> workload_;
  std::vector<std::vector<std::size_t>> followers_;  // by index
  // Open loop: by time, then index.
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> timed_;
  std::set<std::size_t> ready_;  // closed loop: by index
};

}  // namespace hkv::internal
