#include "engine/sim_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "engine/sim_util.h"

namespace hkv::internal {
namespace {

constexpr std::size_t kUsageSamples = 100;

LatencySummary Summary(std::vector<double> values) {
  if (values.empty()) return {};
  std::sort(values.begin(), values.end());
  double sum = 0.0;
  for (double v : values) sum += v;
  return {.mean_s = sum / static_cast<double>(values.size()),
          .p50_s = NearestRank(values, 50),
          .p90_s = NearestRank(values, 90),
          .p99_s = NearestRank(values, 99)};
}

CallTimes Times(std::vector<std::uint32_t>& ns) {
  std::sort(ns.begin(), ns.end());
  return {.calls = ns.size(),
          .median_ns = NearestRank(ns, 50),
          .p99_ns = NearestRank(ns, 99)};
}

// At most kUsageSamples samples: the peak of each equal slice of time.
std::vector<UsageSample> Downsample(const std::vector<UsageSample>& all,
                                    double makespan_s) {
  if (all.size() <= kUsageSamples || makespan_s <= 0.0) return all;
  std::vector<UsageSample> out(kUsageSamples);
  for (std::size_t i = 0; i < kUsageSamples; ++i) {
    out[i].time_s = makespan_s * static_cast<double>(i + 1) / kUsageSamples;
  }
  for (const UsageSample& s : all) {
    const auto slice = std::min<std::size_t>(
        kUsageSamples - 1,
        static_cast<std::size_t>(s.time_s / makespan_s * kUsageSamples));
    out[slice].usage = std::max(out[slice].usage, s.usage);
  }
  return out;
}

// The blocks one request of `tokens` tokens holds at most in group `g`: the
// cache's own bound (MaxBlocksPerRequest), as admission counts it.
std::uint64_t GroupBlocksFor(const CacheConfig& config, std::size_t g,
                             std::uint64_t tokens) {
  return MaxBlocksPerRequest(
      config.groups[g],
      {.max_model_len = tokens,
       .max_in_flight_tokens =
           config.max_in_flight_tokens.value_or(config.max_model_len),
       .dcp = config.dcp});
}

// Whether one request of `tokens` tokens fits `usable` blocks: in the shared
// pool all groups' blocks together, else each group's in its own pool.
bool Fits(const CacheConfig& config, std::uint32_t usable,
          std::uint64_t tokens) {
  const std::vector<std::uint32_t>& pools = config.group_pool_blocks;
  std::uint64_t total = 0;
  for (std::size_t g = 0; g < config.groups.size(); ++g) {
    const std::uint64_t blocks = GroupBlocksFor(config, g, tokens);
    if (!pools.empty() && blocks > pools[g]) return false;
    total += blocks;
  }
  return !pools.empty() || total <= usable;
}

// Requests of `tokens` tokens that fit at once.
double Concurrency(const CacheConfig& config, std::uint32_t usable,
                   std::uint64_t tokens) {
  const std::vector<std::uint32_t>& pools = config.group_pool_blocks;
  double fit = std::numeric_limits<double>::infinity();
  std::uint64_t total = 0;
  for (std::size_t g = 0; g < config.groups.size(); ++g) {
    const std::uint64_t blocks = GroupBlocksFor(config, g, tokens);
    total += blocks;
    if (!pools.empty() && blocks > 0) {
      fit = std::min(
          fit, static_cast<double>(pools[g]) / static_cast<double>(blocks));
    }
  }
  if (pools.empty()) {
    return total > 0 ? static_cast<double>(usable) / static_cast<double>(total)
                     : 0.0;
  }
  return std::isinf(fit) ? 0.0 : fit;
}

}  // namespace

void SummarizeLatencies(SimulationResult& result) {
  std::vector<double> ttft, tpot, e2e;
  for (const RequestMetrics& r : result.per_request) {
    if (r.output_tokens == 0) continue;  // never finished
    ttft.push_back(r.first_token_s - r.arrival_s);
    e2e.push_back(r.finish_s - r.arrival_s);
    if (r.output_tokens > 1) {
      tpot.push_back((r.finish_s - r.first_token_s) / (r.output_tokens - 1));
    }
  }
  result.ttft = Summary(std::move(ttft));
  result.tpot = Summary(std::move(tpot));
  result.e2e = Summary(std::move(e2e));
}

void SimStats::RecordCall(ManagerCall call, HitClass hit_class,
                          std::uint64_t ns) {
  const auto clamped = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(ns, std::numeric_limits<std::uint32_t>::max()));
  call_ns_[static_cast<std::size_t>(call)][static_cast<std::size_t>(hit_class)]
      .push_back(clamped);
}

void SimStats::RecordUsage(double time_s, double step_s, double usage) {
  usage_.push_back({.time_s = time_s, .usage = usage});
  usage_time_sum_ += usage * step_s;
}

bool SimStats::ResidencyDue(double time_s) const {
  return residency_.empty() ||
         time_s >= residency_.back().time_s + residency_spacing_s_;
}

void SimStats::RecordResidency(ResidencySample sample) {
  constexpr std::size_t kMaxSamples = 128;
  residency_.push_back(std::move(sample));
  if (residency_.size() <= kMaxSamples) return;
  std::vector<ResidencySample> kept;
  for (std::size_t i = 0; i < residency_.size(); i += 2) {
    kept.push_back(std::move(residency_[i]));
  }
  residency_ = std::move(kept);
  residency_spacing_s_ *= 2;
}

void SimStats::Summarize(SimulationResult& result) {
  SummarizeLatencies(result);
  const double span = result.makespan_s;
  if (span > 0.0) {
    result.output_tokens_per_s =
        static_cast<double>(result.output_tokens) / span;
    result.prompt_tokens_per_s =
        static_cast<double>(result.prompt_tokens) / span;
    result.usage_mean = usage_time_sum_ / span;
  }
  for (const UsageSample& s : usage_) {
    result.usage_peak = std::max(result.usage_peak, s.usage);
  }
  result.usage = Downsample(usage_, span);
  result.residency = residency_;
  for (std::size_t c = 0; c < kNumManagerCalls; ++c) {
    for (std::size_t h = 0; h < kNumHitClasses; ++h) {
      result.manager_ns[c][h] = Times(call_ns_[c][h]);
    }
  }
  const auto lookup = static_cast<std::size_t>(ManagerCall::kLookup);
  for (std::size_t h = 0; h < kNumHitClasses; ++h) {
    result.lookup_ns[h] = call_ns_[lookup][h];  // sorted by Times
  }
}

Capacity EstimateCapacity(const CacheConfig& config,
                          std::uint32_t usable_blocks, double mean_tokens) {
  Capacity capacity;
  std::uint64_t low = 0;
  std::uint64_t high = std::numeric_limits<std::uint32_t>::max();
  while (low < high) {  // the largest T that fits
    const std::uint64_t mid = low + (high - low + 1) / 2;
    if (Fits(config, usable_blocks, mid)) {
      low = mid;
    } else {
      high = mid - 1;
    }
  }
  capacity.tokens = low;
  capacity.concurrency = Concurrency(
      config, usable_blocks,
      static_cast<std::uint64_t>(std::ceil(std::max(mean_tokens, 1.0))));
  return capacity;
}

std::vector<std::uint32_t> SplitIntoGroupPools(const CacheConfig& config,
                                               std::uint32_t usable_blocks) {
  CacheConfig shared = config;
  shared.group_pool_blocks.clear();
  shared.pool_slot_bytes.clear();
  const std::uint64_t longest =
      EstimateCapacity(shared, usable_blocks, 1.0).tokens;
  std::vector<std::uint32_t> pools;
  std::uint64_t given = 0;
  for (std::size_t g = 0; g < config.groups.size(); ++g) {
    const std::uint64_t blocks =
        std::max<std::uint64_t>(1, GroupBlocksFor(config, g, longest));
    pools.push_back(static_cast<std::uint32_t>(blocks));
    given += blocks;
  }
  if (given > usable_blocks) return {};
  pools[0] += static_cast<std::uint32_t>(usable_blocks - given);
  return pools;
}

}  // namespace hkv::internal
