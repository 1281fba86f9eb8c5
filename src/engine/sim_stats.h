// The simulator's measurements while it runs, and their summary into a
// SimulationResult at the end.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "hkv/cache_manager.h"
#include "hkv/simulator.h"

namespace hkv::internal {

class SimStats {
 public:
  void RecordCall(ManagerCall call, HitClass hit_class, std::uint64_t ns);
  // The pool's usage after a step that ended at `time_s` and lasted
  // `step_s`.
  void RecordUsage(double time_s, double step_s, double usage);
  // Whether a residency sample is due at `time_s`: samples are evenly
  // spaced, at most 128, the spacing doubling (every other sample dropped)
  // as the run grows.
  bool ResidencyDue(double time_s) const;
  void RecordResidency(ResidencySample sample);

  // Fills the latency, throughput, usage and call-time fields of `result`
  // from its per_request and makespan_s and what was recorded.
  void Summarize(SimulationResult& result);

 private:
  std::array<std::array<std::vector<std::uint32_t>, kNumHitClasses>,
             kNumManagerCalls>
      call_ns_;
  std::vector<UsageSample> usage_;
  double usage_time_sum_ = 0.0;  // usage x step seconds
  std::vector<ResidencySample> residency_;
  double residency_spacing_s_ = 1.0;
};

// Fills result's ttft, tpot and e2e from its per_request (requests with
// outputs).
void SummarizeLatencies(SimulationResult& result);

struct Capacity {
  std::uint64_t tokens = 0;  // longest request that fits alone
  double concurrency = 0.0;  // requests of `mean_tokens` that fit at once
};

// Capacity estimate of `usable_blocks` blocks of `config`'s groups, a
// request of T tokens holding MaxBlocksPerRequest blocks in each group (its
// in-flight tokens the config's): in the shared pool all groups' blocks
// together count against usable_blocks, in per-group pools each group's
// against its own pool.
Capacity EstimateCapacity(const CacheConfig& config,
                          std::uint32_t usable_blocks, double mean_tokens);

// Per-group pools of `usable_blocks` blocks for groups without page bytes:
// each group gets the blocks the longest request a shared pool of them
// holds needs there (at least one), the rest to group 0. Empty when the
// groups need more than that.
std::vector<std::uint32_t> SplitIntoGroupPools(const CacheConfig& config,
                                               std::uint32_t usable_blocks);

}  // namespace hkv::internal
