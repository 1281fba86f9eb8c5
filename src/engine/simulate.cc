// A step's outcome (sampling, commits, finishes), the summary, Simulate.
#include <algorithm>
#include <string>

#include "engine/cluster.h"
#include "engine/engine.h"
#include "hkv/group_list.h"
#include "traces/number_text.h"

namespace hkv {
namespace internal {

bool Engine::Sample(std::size_t index) {
  Live& live = lives_[index];
  Request& r = *live.request;
  const SimRequest& w = workload_[index];
  std::uint32_t sampled = 0;
  if (live.decoding) {
    const std::uint32_t accepted = Accepted(live.drafts);
    result_.drafts_proposed += live.drafts;
    result_.drafts_accepted += accepted;
    live.computed += 1 + accepted;
    sampled = 1 + accepted;
  } else {
    live.computed += live.scheduled;
    sampled = live.computed == r.num_tokens() ? 1 : 0;
  }
  sampled = std::min(sampled, w.output_length - live.outputs);
  if (sampled > 0) {
    if (live.outputs == 0) {
      result_.per_request[index].first_token_s = now_ + options_.cost.serving_s;
      result_.per_request[index].first_token_step = result_.steps - 1;
    }
    shape_.sampled_tokens += sampled;
    r.AppendTokens(OutputTokens(w, live.outputs, sampled));
    live.outputs += sampled;
    result_.output_tokens += sampled;
  }
  Timed(ManagerCall::kCommit, live.hit_class,
        [&] { cache_.Commit(r, live.computed); });
  return live.outputs == w.output_length;
}

void Engine::Complete() {
  std::vector<std::size_t> finished;
  for (std::size_t index : scheduled_) {
    if (Sample(index)) finished.push_back(index);
  }
  cache_.FinishStep();
  for (std::size_t index : finished) {
    Live& live = lives_[index];
    if (tiers_) StoreToTiers(index);
    Timed(ManagerCall::kFree, live.hit_class,
          [&] { cache_.Free(RequestId{index}); });
    running_.erase(std::find(running_.begin(), running_.end(), index));
    RequestMetrics& m = result_.per_request[index];
    m.finish_s = now_ + options_.cost.serving_s;
    m.finish_step = result_.steps - 1;
    m.output_tokens = live.outputs;
    if (!live.request->keys().empty()) {
      cached_once_.insert(live.request->keys()[0]);
    }
    live.request.reset();
    ++result_.finished;
    arrivals_.Finished(index, now_);
  }
}

Error Engine::Infeasible(std::size_t index, const std::string& what) const {
  const std::uint32_t usable = options_.cache.num_blocks - 1;
  return {ErrorCode::kInfeasible,
          "request " + std::to_string(index) + " (" +
              std::to_string(PromptLength(workload_[index])) +
              " prompt tokens) " + what + ": the pool has " +
              std::to_string(usable) +
              " usable blocks; give the cache more blocks"};
}

SimulationResult Engine::Finish() {
  result_.makespan_s = now_;
  for (const SimRequest& r : workload_)
    result_.prompt_tokens += PromptLength(r);
  // Prefill beyond each prompt's first computation. (A resumed request
  // whose hit leaves one token computes it as a decode, uncounted.)
  result_.recomputed_tokens =
      prefill_tokens_ - std::min(prefill_tokens_, result_.computed_tokens);
  result_.evicted_blocks = cache_.counters().evicted_blocks;
  result_.parked_blocks = cache_.counters().parked_blocks;
  result_.manager_stats = cache_.TakeStats();
  const std::vector<std::uint64_t> cached = cache_.CachedBlocksPerGroup();
  const CacheConfig& config = options_.cache;
  for (std::size_t g = 0; g < config.groups.size(); ++g) {
    const GroupSpec& spec = config.groups[g];
    result_.groups.push_back({.kind = std::string(GroupKindName(spec.kind)),
                              .block_size = static_cast<std::uint32_t>(
                                  TokensPerBlock(spec, config.dcp)),
                              .cached_blocks = cached[g]});
  }
  if (tiers_) result_.tiers = tiers_->Figures();
  stats_.Summarize(result_);
  return std::move(result_);
}

}  // namespace internal

Result<void> SimulationOptions::Validate() const {
  if (Result<void> ok = cache.Validate(); !ok) return ok;
  if (Result<void> ok = cost.Validate(); !ok) return ok;
  auto invalid = [](const std::string& message) -> Result<void> {
    return Fail(ErrorCode::kInvalidArgument, message);
  };
  if (limits.max_num_batched_tokens == 0) {
    return invalid("max_num_batched_tokens must be at least 1");
  }
  if (limits.max_num_seqs == 0) return invalid("max_num_seqs must be >= 1");
  if (concurrency == 0) return invalid("concurrency must be at least 1");
  if (instances < 1 || instances > 1024) {
    return invalid("instances must be 1 to 1024, got " +
                   std::to_string(instances));
  }
  if (instances > 1 && kv_events != nullptr) {
    return invalid("a cluster of instances cannot publish KV events");
  }
  if (!page_bytes.empty() && page_bytes.size() != cache.groups.size()) {
    return invalid("page_bytes has " + std::to_string(page_bytes.size()) +
                   " entries for " + std::to_string(cache.groups.size()) +
                   " cache groups");
  }
  if (!tiers.empty() && page_bytes.empty()) {
    return invalid(
        "offload tiers need the bytes of each group's block: run a "
        "deployment (a model or preset), not explicit groups");
  }
  for (const TierSpec& tier : tiers) {
    if (tier.capacity_bytes == 0) return invalid("a tier's capacity is 0");
  }
  const double rate = speculation.acceptance_rate;
  if (!(rate >= 0.0 && rate <= 1.0)) {
    return invalid("acceptance rate must be in [0, 1], got " +
                   internal::ShortNumber(rate));
  }
  return {};
}

namespace {

// One engine on the workload's own arrivals, or a cluster.
Result<SimulationResult> RunEngines(std::span<const SimRequest> workload,
                                    const SimulationOptions& options) {
  if (options.instances > 1)
    return internal::SimulateCluster(workload, options);
  CacheConfig cache_config = options.cache;
  if (options.kv_events != nullptr) cache_config.events = KvEventMode::kEnabled;
  Result<CacheManager> cache = CacheManager::Create(cache_config);
  if (!cache) return tl::unexpected(cache.error());
  internal::Arrivals arrivals(workload, options.arrivals, options.concurrency);
  internal::Engine engine(std::move(*cache), workload, options, arrivals);
  if (Result<void> ok = engine.Run(); !ok) return tl::unexpected(ok.error());
  return engine.Finish();
}

}  // namespace

Result<SimulationResult> Simulate(std::span<const SimRequest> workload,
                                  const SimulationOptions& options) {
  if (Result<void> ok = options.Validate(); !ok) {
    return tl::unexpected(ok.error());
  }
  if (Result<void> ok = ValidateWorkload(workload); !ok) {
    return tl::unexpected(ok.error());
  }
  Result<SimulationResult> run = RunEngines(workload, options);
  if (!run) return run;
  SimulationResult& result = *run;
  double mean_tokens = 0.0;
  for (const SimRequest& r : workload) {
    mean_tokens += PromptLength(r) + r.output_length;
  }
  if (!workload.empty()) mean_tokens /= static_cast<double>(workload.size());
  const internal::Capacity capacity = internal::EstimateCapacity(
      options.cache, options.cache.num_blocks - 1, mean_tokens);
  // A cluster's instances each hold the longest request alone.
  result.usable_blocks = (options.cache.num_blocks - 1) * options.instances;
  result.capacity_tokens = capacity.tokens;
  result.capacity_concurrency = capacity.concurrency * options.instances;
  return run;
}

}  // namespace hkv
