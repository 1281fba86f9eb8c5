// Helpers shared by the trace replay and the engine simulator.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "hkv/cache_manager.h"
#include "hkv/request.h"

namespace hkv::internal {

constexpr std::uint64_t CeilDiv(std::uint64_t a, std::uint64_t b) {
  return (a + b - 1) / b;
}

inline std::uint64_t NanosecondsSince(
    std::chrono::steady_clock::time_point start) {
  const auto elapsed = std::chrono::steady_clock::now() - start;
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
}

// Nearest-rank percentile `p` (1..100) of `sorted`; 0 when it is empty.
template <typename T>
T NearestRank(const std::vector<T>& sorted, std::uint64_t p) {
  if (sorted.empty()) return T{};
  const std::uint64_t rank = CeilDiv(p * sorted.size(), 100);
  return sorted[rank - 1];
}

struct ChunkBudget {
  std::uint32_t num_computed_tokens = 0;  // hit included
  std::uint32_t budget_left = 0;          // tokens this step still allows
  std::uint32_t max_num_batched_tokens = 0;
  std::uint32_t long_prefill_threshold = 0;
  std::uint32_t shared_prefix_boundary = 0;
};

// The next prefill chunk of `request` (whose tokens past
// num_computed_tokens remain to compute) within the budget, cut by the
// cache's split rules (spec §7.3). 0: the budget left does not reach the
// next chunk end; a full budget always does.
inline std::uint32_t NextPrefillChunk(const CacheManager& cache,
                                      const Request& request,
                                      const ChunkBudget& budget) {
  std::uint32_t allowed = std::min(
      budget.budget_left, request.num_tokens() - budget.num_computed_tokens);
  if (budget.long_prefill_threshold > 0) {
    allowed = std::min(allowed, budget.long_prefill_threshold);
  }
  return cache.SplitPrefill(
      request, {.num_computed_tokens = budget.num_computed_tokens,
                .num_new_tokens = allowed,
                .max_num_scheduled_tokens = budget.max_num_batched_tokens,
                .long_prefill_threshold = budget.long_prefill_threshold,
                .shared_prefix_boundary = budget.shared_prefix_boundary});
}

}  // namespace hkv::internal
