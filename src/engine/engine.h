// The engine simulator's scheduler (hkv/simulator.h): one object per
// Simulate call, owning the cache it drives.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/arrivals.h"
#include "engine/sim_stats.h"
#include "engine/sim_util.h"
#include "engine/tier_model.h"
#include "hkv/simulator.h"
#include "tiers/tier_reach.h"
#include "traces/synthetic_tokens.h"

namespace hkv::internal {

// Tokens a draft model recomputes at the end of a hit: a hash unit when
// some group feeds one, else 0.
inline std::uint32_t DraftRewindTokens(const CacheConfig& cache) {
  for (const GroupSpec& g : cache.groups) {
    if (g.speculation == Speculation::kEagle) return cache.keys.hash_unit;
  }
  return 0;
}

// A request between its arrival and its finish.
struct Live {
  std::optional<Request> request;  // built at the first admission attempt
  std::uint32_t computed = 0;      // tokens whose KV exists
  std::uint32_t outputs = 0;       // accepted output tokens
  HitClass hit_class = HitClass::kColdMiss;
  // From the latest lookup: later prefill chunks stop there too.
  std::uint32_t shared_prefix_boundary = 0;
  bool admitted_once = false;
  // A load from the offload tiers: the request computes nothing before
  // ready_s; its next chunk's commit registers the loaded tokens with it
  // (a commit at the load's end alone would register a recurrent state in
  // the block the chunk advances).
  double ready_s = 0.0;
  bool loading = false;
  // This step's work.
  std::uint32_t scheduled = 0;
  std::uint32_t drafts = 0;
  bool decoding = false;
};

class Engine {
 public:
  // `arrivals` outlives the engine.
  Engine(CacheManager cache, std::span<const SimRequest> workload,
         const SimulationOptions& options, ArrivalFeed& arrivals)
      : cache_(std::move(cache)),
        workload_(workload),
        options_(options),
        arrivals_(arrivals),
        lives_(workload.size()),
        rng_(SplitMix64(options.speculation.seed)) {
    result_.requests = workload.size();
    result_.per_request.resize(workload.size());
    if (!options.tiers.empty()) {
      UseTiers(std::make_unique<TierModel>(options.tiers, options.page_bytes,
                                           std::span<TierStoreModel* const>()));
    }
  }

  // Replaces the engine's offload tiers (a cluster's, sharing some).
  void UseTiers(std::unique_ptr<TierModel> tiers) {
    tiers_ = std::move(tiers);
    reach_.emplace(options_.cache);
  }

  // Runs until every request finished (its own arrivals).
  Result<void> Run();
  SimulationResult Finish();

  // One engine among several (cluster.h): admits what arrived by now and,
  // when something waits or runs, runs one step.
  Result<void> StepOnce();
  // Whether a request waits or runs.
  bool Busy() const { return !running_.empty() || !waiting_.empty(); }
  double now() const { return now_; }
  // An idle engine's clock moves to a request's arrival.
  void AdvanceTo(double time_s) { now_ = std::max(now_, time_s); }
  // Prompt tokens admitted requests have yet to compute, waiting ones
  // included; running requests.
  std::uint64_t OutstandingPrefillTokens() const;
  std::size_t num_running() const { return running_.size(); }
  // Each step's events go here (the cache must record them).
  void SetEventSink(std::function<void(std::vector<KvEvent>, double)> sink) {
    event_sink_ = std::move(sink);
  }

 private:
  Result<void> Step();
  void AdmitArrivals();
  // Step 1; returns whether it preempted.
  Result<bool> ScheduleRunning();
  // Schedules running_[i]; returns false when it preempted itself.
  Result<bool> ScheduleOne(std::size_t i);
  Result<void> ScheduleWaiting();
  std::uint32_t DecodeDrafts(std::size_t index) const;
  TierHit Lookup(std::size_t index);
  // Admission's bookkeeping of a request's first admission, `reused`
  // tokens not computed.
  void RecordAdmission(std::size_t index, std::uint32_t reused);
  // engine_tiers.cc: the lookup through the tiers, a load's start (false
  // when there is nothing to load), the store at completion, and an idle
  // engine's wait for its loads (false when none is loading).
  TierHit LookupThroughTiers(const Request& request) const;
  bool StartLoad(std::size_t index, const TierHit& hit,
                 std::span<const StateExport> exports);
  void StoreToTiers(std::size_t index);
  bool WaitForLoads();
  // Whether running_[i] waits for its load.
  bool Loading(std::size_t index);
  HitClass ClassOf(const CacheHit& hit, const Request& request) const;
  std::optional<NewBlocks> Allocate(std::size_t index,
                                    const AllocationRequest& args);
  void Preempt(std::size_t index);
  void Account(std::size_t index);
  void Complete();
  // Takes the step's outcome for lives_[index]; returns true when the
  // request has all its outputs.
  bool Sample(std::size_t index);
  // Draws how many of `drafts` drafts are accepted.
  std::uint32_t Accepted(std::uint32_t drafts);
  Error Infeasible(std::size_t index, const std::string& what) const;
  // The bytes of one block of cache group `group` (0: unknown).
  std::uint64_t PageBytes(std::size_t group) const;
  // Adds the step's shape to the totals (and the record).
  void RecordShape();

  template <typename F>
  auto Timed(ManagerCall call, HitClass hit_class, F&& f) {
    const auto start = std::chrono::steady_clock::now();
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      stats_.RecordCall(call, hit_class, NanosecondsSince(start));
    } else {
      auto out = f();
      stats_.RecordCall(call, hit_class, NanosecondsSince(start));
      return out;
    }
  }

  CacheManager cache_;
  std::span<const SimRequest> workload_;
  const SimulationOptions& options_;
  ArrivalFeed& arrivals_;
  std::function<void(std::vector<KvEvent>, double)> event_sink_;
  std::vector<Live> lives_;
  std::vector<std::size_t> running_;  // admission order
  std::deque<std::size_t> waiting_;   // arrival order, preempted first
  std::vector<std::size_t> scheduled_;
  std::vector<std::pair<std::size_t, double>> arrived_;
  StepShape shape_;
  std::uint32_t budget_left_ = 0;
  double now_ = 0.0;
  std::uint64_t rng_;
  std::uint64_t prefill_tokens_ = 0;
  SimStats stats_;
  SimulationResult result_;
  // The first key of every finished request's prompt: a later miss on one
  // of them lost a chain that was cached.
  std::unordered_set<BlockHash> cached_once_;
  // Tokens a draft model's group rewinds a hit by: a hash unit when a group
  // holds draft layers, else 0.
  std::uint32_t draft_rewind_ = DraftRewindTokens(options_.cache);
  // Offload tiers (null without).
  std::unique_ptr<TierModel> tiers_;
  std::optional<TierReach> reach_;
};

}  // namespace hkv::internal
