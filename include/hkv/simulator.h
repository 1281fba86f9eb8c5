// The engine simulator: a continuous-batching scheduler that drives a real
// CacheManager step by step as an engine would (spec §7), with step times
// from a CostModel. Latencies and throughput are modelled; the cache
// manager's own CPU time per call is measured (steady_clock around each
// call).
//
// Per step:
//   1. running requests, in admission order: a prefill chunk (at most the
//      budget left, cut by SplitPrefill) or a decode of the last sampled
//      token plus k drafts; Allocate with the lookahead slots; when it
//      fails, the latest admitted running request is preempted (its blocks
//      freed, its progress dropped, queued at the front) and the
//      allocation retried; a request that preempts itself ends the pass;
//   2. unless step 1 preempted, waiting requests in arrival order while
//      seats (max_num_seqs) and budget last: Lookup, SplitPrefill from the
//      hit, Allocate adopting the hit; the first failure stops admission;
//   3. TakeCopies (counted), the modelled step time passes;
//   4. each scheduled request: drafts accepted with the acceptance rate
//      (each in turn, until one is rejected; rejected ones rolled back), the
//      sampled tokens appended, Commit at the new computed count; then
//      FinishStep, and finished requests are freed.
// Open loop: requests arrive at their arrival times (or after their
// predecessor, see SimRequest::after). Closed loop: `concurrency` requests
// are in the system, the next one (in workload order) arriving when one
// finishes.
//
// Thread-compatible: Simulate owns its cache; separate calls may run in
// parallel. The library never prints; progress goes to the callback.
//
// Example:
//   Result<SimulationResult> r = Simulate(workload, {.cache = config,
//                                                    .cost = *cost});
//   if (r) std::cout << r->ttft.p50_s << " s (modelled)\n";
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/cache_manager.h"
#include "hkv/cost_model.h"
#include "hkv/event_publisher.h"
#include "hkv/replay.h"
#include "hkv/result.h"
#include "hkv/workload.h"

namespace hkv {

struct EngineLimits {
  std::uint32_t max_num_batched_tokens = 8192;  // token budget per step
  std::uint32_t max_num_seqs = 256;             // running requests at most
  std::uint32_t long_prefill_threshold = 0;     // 0: none
};

struct SpeculativeDecoding {
  std::uint32_t num_drafts = 0;       // k drafts per decode step
  double acceptance_rate = 0.0;       // per draft, in [0, 1]
  std::uint32_t lookahead_slots = 0;  // extra slots allocated per step
  std::uint64_t seed = 1;             // draws of the acceptances
};

enum class ArrivalMode { kOpenLoop, kClosedLoop };

// How a cluster of simulated engines (SimulationOptions::instances) places
// each arriving request (docs/cluster.md). The prefix routers score each
// instance from a ClusterIndex fed by the instances' KV events: modelled
// seconds of the prefill the request would still need there (prompt minus
// the instance's matched prefix) plus the instance's queued prefill and
// running decodes, and take the lowest.
enum class Router {
  kRoundRobin,
  kLeastLoaded,   // the load term alone
  kPrefix,        // matched prefix: full attention's chain, as routers do
  kHybridPrefix,  // matched prefix: what every group can resume from
};

// round-robin, least-loaded, prefix, hybrid-prefix; kInvalidArgument naming
// the text otherwise.
[[nodiscard]] Result<Router> ParseRouter(std::string_view text);
std::string_view RouterName(Router router);

// A modelled offload tier (docs/tiers.md): the simulator writes no bytes;
// each tier holds object groups up to its capacity, least recently used
// out first, and a load costs the kind's link (TierLinkOf).
enum class TierKind { kHost, kDisk, kRemote };

struct TierSpec {
  TierKind kind = TierKind::kHost;
  std::uint64_t capacity_bytes = 0;
};

// host, disk, redis.
std::string_view TierName(TierKind kind);

// A chain, in order: "KIND:SIZE" items joined by '+' ("host:64GiB+redis:
// 512GiB", KIND host, disk or file, redis; SIZE as ParseByteSize), or
// "none" / "" for no tier. kInvalidArgument otherwise; real tiers' names
// (file:DIR, redis://HOST:PORT) are refused with the reason.
[[nodiscard]] Result<std::vector<TierSpec>> ParseTierChain(
    std::string_view text);

// A tier kind's link to the GPU: typical published figures, not fitted
// (sources in tier_model.cc and docs/tiers.md).
struct TierLink {
  double bytes_per_s = 0.0;
  double latency_s = 0.0;  // per load from the tier
};
TierLink TierLinkOf(TierKind kind);

// What one tier of a run did. A load's external tokens count at the
// deepest tier that served one of its object groups.
struct TierFigures {
  std::string name;
  std::uint64_t capacity_bytes = 0;
  std::uint64_t hit_tokens = 0;
  std::uint64_t loads = 0;        // loads this tier served a group of
  std::uint64_t load_groups = 0;  // object groups read from it
  std::uint64_t load_bytes = 0;
  double load_s = 0.0;  // modelled transfer time of those reads
  std::uint64_t stored_groups = 0;
  std::uint64_t stored_bytes = 0;
  std::uint64_t evicted_groups = 0;
};

struct SimulationOptions {
  CacheConfig cache = {};
  CostModel cost = {};
  EngineLimits limits = {};
  SpeculativeDecoding speculation = {};
  ArrivalMode arrivals = ArrivalMode::kOpenLoop;
  std::uint32_t concurrency = 16;  // closed loop: requests in the system
  // Per cache group: the bytes one block holds on one rank (a recurrent
  // group's: one state of all its layers), which price state writes and
  // copy-on-write copies. Empty: unknown, those features count 0 bytes.
  std::vector<std::uint64_t> page_bytes = {};
  // Keep every step's shape in SimulationResult::step_shapes (calibration
  // re-prices a run under other coefficients).
  bool record_steps = false;
  // Each lookup is run this many times and its call time is the fastest
  // (lookups do not mutate; the minimum drops scheduler noise). 0 counts as
  // 1.
  std::uint32_t lookup_repeats = 1;
  // Called with (finished requests, total) every 256 finished requests
  // and at the end. Empty: no calls.
  std::function<void(std::size_t done, std::size_t total)> progress = {};
  // Not null: the run's cache records KV events, and each step's are
  // published, stamped with the simulated clock (docs/events.md). Not owned.
  EventPublisher* kv_events = nullptr;
  // Engines behind one router, each with a cache of its own (this config);
  // 1 to 1024. With more than one, kv_events must be null.
  std::uint32_t instances = 1;
  Router router = Router::kRoundRobin;
  // Offload tiers, in chain order (each instance's own; a cluster's redis
  // tiers are one store shared by the instances). They need page_bytes.
  std::vector<TierSpec> tiers = {};

  // kInvalidArgument naming the field: the cache config's own errors, a
  // budget, seat count or concurrency of 0, an acceptance rate outside
  // [0, 1], an invalid cost model, or page bytes not one per group.
  [[nodiscard]] Result<void> Validate() const;
};

// One instance of a cluster run.
struct InstanceFigures {
  std::uint64_t requests = 0;
  std::uint64_t prompt_tokens = 0;
  std::uint64_t reused_tokens = 0;
};

// What routing did (instances > 1).
struct ClusterFigures {
  std::uint32_t instances = 0;
  Router router = Router::kRoundRobin;
  // The prefix the router counted on at the instance it chose, summed over
  // requests (0 for routers that count none), and the hit the request then
  // found there at its first admission (SimulationResult::reused_tokens).
  std::uint64_t routed_tokens = 0;
  // Requests sent where the router counted tokens the instance could not
  // resume from (full attention's chain above the hybrid-correct prefix),
  // and those tokens.
  std::uint64_t unresumable_routes = 0;
  std::uint64_t unresumable_tokens = 0;
  // The busiest instance's prompt tokens over the mean (1: even).
  double load_imbalance = 0.0;
  std::vector<InstanceFigures> per_instance = {};
};

// Nearest-rank percentiles; all 0 when there are no samples.
struct LatencySummary {
  double mean_s = 0.0;
  double p50_s = 0.0;
  double p90_s = 0.0;
  double p99_s = 0.0;
};

// A request's lookup outcome, which classes its manager calls: no hit of a
// prompt never cached before; a hit that some group kept below the
// full-attention chain (sparse checkpoints, windows, eviction); a hit the
// length of the chain, or short of it only by the draft's rewind (a draft
// model recomputes its last unit on every hit); no hit and no chain at all
// for a prompt whose first hash unit a finished request had cached (its
// whole chain was evicted since).
enum class HitClass { kColdMiss, kSparseHit, kWarmHit, kEvictedMiss };
inline constexpr std::size_t kNumHitClasses = 4;

enum class ManagerCall { kLookup, kAllocate, kCommit, kFree };
inline constexpr std::size_t kNumManagerCalls = 4;

struct CallTimes {
  std::uint64_t calls = 0;
  std::uint64_t median_ns = 0;
  std::uint64_t p99_ns = 0;
};

struct RequestMetrics {
  double arrival_s = 0.0;
  double first_token_s = 0.0;
  double finish_s = 0.0;
  std::uint32_t prompt_tokens = 0;
  std::uint32_t reused_tokens = 0;  // hit at first admission
  std::uint32_t output_tokens = 0;
  std::uint32_t preemptions = 0;
  // Step indices (from 0): the first step after the arrival, the step that
  // produced the first token, the step that finished the request.
  std::uint64_t arrival_step = 0;
  std::uint64_t first_token_step = 0;
  std::uint64_t finish_step = 0;
};

// Blocks holding a prefix key, per group (index = group id), at a time.
struct ResidencySample {
  double time_s = 0.0;
  std::vector<std::uint64_t> cached_blocks = {};
};

struct UsageSample {
  double time_s = 0.0;
  double usage = 0.0;  // fraction of usable blocks in use
};

struct SimulationResult {
  std::uint64_t requests = 0;
  std::uint64_t finished = 0;
  std::uint64_t steps = 0;
  double makespan_s = 0.0;  // modelled
  // Prompt tokens: reused (hit at each request's first admission) plus
  // computed equals the sum of prompt lengths. Recomputed: tokens computed
  // again after preemptions.
  std::uint64_t prompt_tokens = 0;
  std::uint64_t reused_tokens = 0;
  std::uint64_t computed_tokens = 0;
  std::uint64_t recomputed_tokens = 0;
  std::uint64_t output_tokens = 0;
  std::uint64_t drafts_proposed = 0;
  std::uint64_t drafts_accepted = 0;
  std::uint64_t preemptions = 0;
  std::uint64_t copies = 0;  // copy-on-write block copies
  std::uint64_t evicted_blocks = 0;
  // Blocks rebalancing pools gave to another pool (PoolLayout::kRebalanced).
  std::uint64_t parked_blocks = 0;
  PrefixCacheStats manager_stats = {};  // every admission, miss causes
  // Admissions without a hit whose whole chain was evicted (kEvictedMiss):
  // the manager's miss causes count only hits that some group cut short.
  // Tokens: their prompt tokens.
  MissCounters evicted_chains = {};
  // Capacity: usable blocks, the longest request that fits alone, and how
  // many requests of the workload's mean length fit at once (estimates
  // from the group kinds, cached blocks not counted).
  std::uint32_t usable_blocks = 0;
  std::uint64_t capacity_tokens = 0;
  double capacity_concurrency = 0.0;
  std::uint32_t peak_running = 0;
  std::uint32_t peak_waiting = 0;
  LatencySummary ttft = {};
  LatencySummary tpot = {};  // requests with 2+ outputs
  LatencySummary e2e = {};
  double output_tokens_per_s = 0.0;  // over the makespan
  double prompt_tokens_per_s = 0.0;
  double usage_mean = 0.0;  // time-weighted
  double usage_peak = 0.0;
  std::vector<UsageSample> usage = {};      // at most 100 samples
  std::vector<GroupResidency> groups = {};  // at the end
  // Evenly spaced over the run, at most 128 samples.
  std::vector<ResidencySample> residency = {};
  // [call][class] manager CPU time per call.
  std::array<std::array<CallTimes, kNumHitClasses>, kNumManagerCalls>
      manager_ns = {};
  // Every lookup's time (ns), by class, sorted: to pool runs.
  std::array<std::vector<std::uint32_t>, kNumHitClasses> lookup_ns = {};
  std::vector<RequestMetrics> per_request = {};  // by workload index
  // What the steps computed, summed, and (with record_steps) step by step.
  StepShape totals = {};
  std::vector<StepShape> step_shapes = {};
  // Cluster runs: the routing's figures. The fields above cover the whole
  // cluster (counts and miss causes summed, latencies over all requests,
  // usage the instances' mean and peak); manager call times, steps'
  // shapes and the usage and residency series are not kept.
  std::optional<ClusterFigures> cluster = std::nullopt;
  // Offload tiers, in chain order (empty without). Tokens they supplied
  // are in reused_tokens too; their load times are in the TTFTs.
  std::vector<TierFigures> tiers = {};
  std::uint64_t tier_loads = 0;
  double tier_load_s = 0.0;  // summed over loads (each the sum of its reads)
};

// Simulates `workload` under `options`.
// Returns the options' or the workload's kInvalidArgument, and kInfeasible,
// naming the request and its tokens, when a request cannot run even with
// the whole pool to itself (the run stops instead of spinning).
[[nodiscard]] Result<SimulationResult> Simulate(
    std::span<const SimRequest> workload, const SimulationOptions& options);

}  // namespace hkv
