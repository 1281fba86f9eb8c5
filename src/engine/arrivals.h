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

// Where an engine's requests come from: the workload's own arrivals, or a
// router's share of them (cluster.h).
class ArrivalFeed {
 public:
  virtual ~ArrivalFeed() = default;
  // Requests entering by `now`, in order, appended to `out` as (index,
  // arrival time).
  virtual void Release(double now,
                       std::vector<std::pair<std::size_t, double>>& out) = 0;
  // When the next request enters if nothing finishes first; std::nullopt
  // when only a finish can release one.
  virtual std::optional<double> NextArrival() const = 0;
  // Request `index` finished at `now`.
  virtual void Finished(std::size_t index, double now) = 0;
};

class Arrivals final : public ArrivalFeed {
 public:
  // REQUIRES: ValidateWorkload(workload) succeeds; concurrency > 0.
  Arrivals(std::span<const SimRequest> workload, ArrivalMode mode,
           std::uint32_t concurrency);

  void Release(double now,
               std::vector<std::pair<std::size_t, double>>& out) override;
  std::optional<double> NextArrival() const override;
  // Its seat frees, its followers may enter.
  void Finished(std::size_t index, double now) override;

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
