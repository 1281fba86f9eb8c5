#include "engine/cluster.h"

#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <memory>
#include <random>
#include <string>

#include "engine/engine.h"
#include "engine/sim_stats.h"
#include "hkv/cluster_index.h"
#include "hkv/limits.h"

namespace hkv::internal {
namespace {

void Add(MissCounters& to, const MissCounters& from) {
  to.requests += from.requests;
  to.tokens += from.tokens;
}

void Add(PrefixCacheStats& to, const PrefixCacheStats& from) {
  to.requests += from.requests;
  to.queries += from.queries;
  to.hits += from.hits;
  to.reset = to.reset || from.reset;
  Add(to.speculative_rewind, from.speculative_rewind);
  Add(to.no_checkpoint, from.no_checkpoint);
  Add(to.window_not_covered, from.window_not_covered);
  Add(to.evicted, from.evicted);
}

// An instance's tier figures into the cluster's: summed, but for the
// evictions of a shared (redis) tier, which every instance reports alike.
void AddTiers(SimulationResult& to, const SimulationResult& from) {
  if (to.tiers.empty()) {
    to.tiers = from.tiers;
  } else {
    for (std::size_t t = 0; t < to.tiers.size(); ++t) {
      TierFigures& a = to.tiers[t];
      const TierFigures& b = from.tiers[t];
      a.hit_tokens += b.hit_tokens;
      a.loads += b.loads;
      a.load_groups += b.load_groups;
      a.load_bytes += b.load_bytes;
      a.load_s += b.load_s;
      a.stored_groups += b.stored_groups;
      a.stored_bytes += b.stored_bytes;
      a.evicted_groups = a.name == TierName(TierKind::kRemote)
                             ? std::max(a.evicted_groups, b.evicted_groups)
                             : a.evicted_groups + b.evicted_groups;
    }
  }
  to.tier_loads += from.tier_loads;
  to.tier_load_s += from.tier_load_s;
}

// One engine's share of the arrivals: what the router sent it, in order.
class RoutedArrivals final : public ArrivalFeed {
 public:
  explicit RoutedArrivals(ArrivalFeed& cluster) : cluster_(cluster) {}

  void Send(std::size_t index, double time_s, std::uint32_t prompt_tokens) {
    routed_.push_back({index, time_s, prompt_tokens});
    pending_tokens_ += prompt_tokens;
  }
  bool empty() const { return routed_.empty(); }
  // Prompt tokens sent but not yet released to the engine.
  std::uint64_t pending_tokens() const { return pending_tokens_; }

  void Release(double now,
               std::vector<std::pair<std::size_t, double>>& out) override {
    while (!routed_.empty() && routed_.front().time_s <= now) {
      out.emplace_back(routed_.front().index, routed_.front().time_s);
      pending_tokens_ -= routed_.front().prompt_tokens;
      routed_.pop_front();
    }
  }
  std::optional<double> NextArrival() const override {
    if (routed_.empty()) return std::nullopt;
    return routed_.front().time_s;
  }
  void Finished(std::size_t index, double now) override {
    ++finished_;
    cluster_.Finished(index, now);
  }
  std::uint64_t finished() const { return finished_; }

 private:
  struct Routed {
    std::size_t index;
    double time_s;
    std::uint32_t prompt_tokens;
  };
  ArrivalFeed& cluster_;
  std::deque<Routed> routed_;
  std::uint64_t pending_tokens_ = 0;
  std::uint64_t finished_ = 0;
};

std::string RandomSeed() {
  std::random_device device;
  return std::to_string(device()) + "-" + std::to_string(device());
}

struct Member {
  std::unique_ptr<RoutedArrivals> feed;
  std::unique_ptr<Engine> engine;
  // When the engine next has something to do; infinity when idle.
  double ReadyAt() const {
    if (engine->Busy()) return engine->now();
    const std::optional<double> next = feed->NextArrival();
    return next ? std::max(engine->now(), *next)
                : std::numeric_limits<double>::infinity();
  }
};

class Cluster {
 public:
  Cluster(std::span<const SimRequest> workload,
          const SimulationOptions& options)
      : workload_(workload),
        options_(options),
        prefill_s_per_token_(PrefillSecondsPerToken(
            options.cost, options.limits.max_num_batched_tokens)),
        decode_s_per_request_(DecodeSecondsPerRequest(options.cost, {})),
        arrivals_(workload, options.arrivals, options.concurrency),
        routed_(workload.size(), 0) {
    figures_.instances = options.instances;
    figures_.router = options.router;
    figures_.per_instance.resize(options.instances);
  }

  Result<void> Init() {
    CacheConfig config = options_.cache;
    config.events = KvEventMode::kEnabled;
    // The instances and the index key alike: one seed for the cluster (an
    // unset xxh3 seed is drawn per scheme).
    if (!config.keys.seed) config.keys.seed = RandomSeed();
    Result<std::unique_ptr<ClusterIndex>> index = ClusterIndex::Create(
        {.instance_config = config,
         .capacity_keys = std::min<std::uint32_t>(
             kMaxPoolBlocks - 1,
             std::max<std::uint32_t>(1, 4 * config.num_blocks))},
        options_.instances);
    if (!index) return tl::unexpected(index.error());
    index_ = std::move(*index);
    // Redis tiers: one store the instances share; the others their own.
    std::vector<TierStoreModel*> shared;
    for (const TierSpec& spec : options_.tiers) {
      shared.push_back(nullptr);
      if (spec.kind != TierKind::kRemote) continue;
      shared_tiers_.push_back(std::make_unique<TierStoreModel>(spec));
      shared.back() = shared_tiers_.back().get();
    }
    for (std::uint32_t i = 0; i < options_.instances; ++i) {
      Result<CacheManager> cache = CacheManager::Create(config);
      if (!cache) return tl::unexpected(cache.error());
      Member member{.feed = std::make_unique<RoutedArrivals>(arrivals_),
                    .engine = nullptr};
      member.engine = std::make_unique<Engine>(std::move(*cache), workload_,
                                               options_, *member.feed);
      if (!options_.tiers.empty()) {
        member.engine->UseTiers(std::make_unique<TierModel>(
            options_.tiers, options_.page_bytes, shared));
      }
      member.engine->SetEventSink([this, i](std::vector<KvEvent> events,
                                            double) {
        // The engines' own events: a group they lack cannot occur.
        [[maybe_unused]] const Result<void> applied = index_->Apply(i, events);
      });
      members_.push_back(std::move(member));
    }
    return {};
  }

  Result<void> Run() {
    std::vector<std::pair<std::size_t, double>> arrived;
    std::size_t reported = 0;
    for (;;) {
      std::size_t next_member = 0;
      double ready = std::numeric_limits<double>::infinity();
      for (std::size_t i = 0; i < members_.size(); ++i) {
        if (members_[i].ReadyAt() < ready) {
          ready = members_[i].ReadyAt();
          next_member = i;
        }
      }
      // Arrivals up to the next step's start are routed first; a closed
      // loop's as the latest step frees seats, stamped with its end (the
      // finish that freed them).
      const std::optional<double> next_arrival = arrivals_.NextArrival();
      double until = clock_s_;
      if (options_.arrivals == ArrivalMode::kOpenLoop) {
        until = next_arrival && *next_arrival <= ready ? *next_arrival : ready;
      }
      arrived.clear();
      arrivals_.Release(until, arrived);
      for (const auto& [index, time] : arrived) Route(index, time);
      if (!arrived.empty()) continue;
      if (ready == std::numeric_limits<double>::infinity()) break;
      Engine& engine = *members_[next_member].engine;
      engine.AdvanceTo(ready);
      if (Result<void> ok = engine.StepOnce(); !ok) return ok;
      clock_s_ = engine.now();
      const std::size_t done = Finished();
      if (options_.progress && done >= reported + 256) {
        reported = done;
        options_.progress(done, workload_.size());
      }
    }
    if (options_.progress) options_.progress(Finished(), workload_.size());
    return {};
  }

  SimulationResult Finish() {
    SimulationResult out;
    out.requests = workload_.size();
    out.per_request.resize(workload_.size());
    std::vector<SimulationResult> parts;
    for (Member& member : members_) parts.push_back(member.engine->Finish());
    for (std::size_t r = 0; r < workload_.size(); ++r) {
      out.per_request[r] = parts[routed_[r]].per_request[r];
      out.prompt_tokens += PromptLength(workload_[r]);
    }
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const SimulationResult& part = parts[i];
      out.finished += part.finished;
      out.steps += part.steps;
      out.makespan_s = std::max(out.makespan_s, part.makespan_s);
      out.reused_tokens += part.reused_tokens;
      out.computed_tokens += part.computed_tokens;
      out.recomputed_tokens += part.recomputed_tokens;
      out.output_tokens += part.output_tokens;
      out.drafts_proposed += part.drafts_proposed;
      out.drafts_accepted += part.drafts_accepted;
      out.preemptions += part.preemptions;
      out.copies += part.copies;
      out.evicted_blocks += part.evicted_blocks;
      out.parked_blocks += part.parked_blocks;
      Add(out.manager_stats, part.manager_stats);
      Add(out.evicted_chains, part.evicted_chains);
      out.usable_blocks += part.usable_blocks;
      out.peak_running = std::max(out.peak_running, part.peak_running);
      out.peak_waiting = std::max(out.peak_waiting, part.peak_waiting);
      out.usage_mean += part.usage_mean / static_cast<double>(parts.size());
      out.usage_peak = std::max(out.usage_peak, part.usage_peak);
      figures_.per_instance[i].reused_tokens = part.reused_tokens;
      AddTiers(out, part);
      if (out.groups.empty()) {
        out.groups = part.groups;
      } else {
        for (std::size_t g = 0; g < out.groups.size(); ++g) {
          out.groups[g].cached_blocks += part.groups[g].cached_blocks;
        }
      }
    }
    SummarizeLatencies(out);
    if (out.makespan_s > 0.0) {
      out.output_tokens_per_s =
          static_cast<double>(out.output_tokens) / out.makespan_s;
      out.prompt_tokens_per_s =
          static_cast<double>(out.prompt_tokens) / out.makespan_s;
    }
    double busiest = 0.0;
    for (const InstanceFigures& f : figures_.per_instance) {
      busiest = std::max(busiest, static_cast<double>(f.prompt_tokens));
    }
    const double mean = static_cast<double>(out.prompt_tokens) /
                        static_cast<double>(figures_.per_instance.size());
    figures_.load_imbalance = mean > 0.0 ? busiest / mean : 0.0;
    out.cluster = figures_;
    return out;
  }

 private:
  std::size_t Finished() const {
    std::size_t done = 0;
    for (const Member& member : members_) done += member.feed->finished();
    return done;
  }

  // Modelled seconds of work waiting on instance i: prompts to compute
  // (routed there and not yet admitted included) and running decodes.
  double Load(std::size_t i) const {
    const Engine& engine = *members_[i].engine;
    return static_cast<double>(engine.OutstandingPrefillTokens() +
                               members_[i].feed->pending_tokens()) *
               prefill_s_per_token_ +
           static_cast<double>(engine.num_running()) * decode_s_per_request_;
  }

  void Route(std::size_t index, double time_s) {
    const std::uint32_t prompt = PromptLength(workload_[index]);
    std::vector<InstanceMatch> matches(members_.size());
    if (options_.router == Router::kPrefix ||
        options_.router == Router::kHybridPrefix) {
      matches = index_->Match(PromptTokens(workload_[index]));
    }
    std::size_t chosen = 0;
    if (options_.router == Router::kRoundRobin) {
      chosen = next_round_robin_++ % members_.size();
    } else {
      double best = std::numeric_limits<double>::infinity();
      for (std::size_t i = 0; i < members_.size(); ++i) {
        const double cost =
            static_cast<double>(prompt -
                                std::min(prompt, Counted(matches[i]))) *
                prefill_s_per_token_ +
            Load(i);
        if (cost < best) {
          best = cost;
          chosen = i;
        }
      }
    }
    const InstanceMatch& match = matches[chosen];
    const std::uint32_t counted = Counted(match);
    figures_.routed_tokens += counted;
    if (counted > match.hybrid_tokens) {
      ++figures_.unresumable_routes;
      figures_.unresumable_tokens += counted - match.hybrid_tokens;
    }
    ++figures_.per_instance[chosen].requests;
    figures_.per_instance[chosen].prompt_tokens += prompt;
    routed_[index] = chosen;
    Member& member = members_[chosen];
    if (!member.engine->Busy() && member.feed->empty()) {
      member.engine->AdvanceTo(time_s);
    }
    member.feed->Send(index, time_s, prompt);
  }

  // The prefix the router counts on at an instance.
  std::uint32_t Counted(const InstanceMatch& match) const {
    switch (options_.router) {
      case Router::kPrefix:
        return match.attention_tokens;
      case Router::kHybridPrefix:
        return match.hybrid_tokens;
      default:
        return 0;
    }
  }

  std::span<const SimRequest> workload_;
  const SimulationOptions& options_;
  // The cost model's estimates of queued work, for the routers.
  double prefill_s_per_token_;
  double decode_s_per_request_;
  Arrivals arrivals_;
  std::unique_ptr<ClusterIndex> index_;
  // Tiers the instances share; before members_, whose engines use them.
  std::vector<std::unique_ptr<TierStoreModel>> shared_tiers_;
  std::vector<Member> members_;
  std::vector<std::size_t> routed_;  // instance, by workload index
  std::size_t next_round_robin_ = 0;
  double clock_s_ = 0.0;  // where the latest step ended
  ClusterFigures figures_;
};

}  // namespace

Result<SimulationResult> SimulateCluster(std::span<const SimRequest> workload,
                                         const SimulationOptions& options) {
  Cluster cluster(workload, options);
  if (Result<void> ok = cluster.Init(); !ok) return tl::unexpected(ok.error());
  if (Result<void> ok = cluster.Run(); !ok) return tl::unexpected(ok.error());
  return cluster.Finish();
}

}  // namespace hkv::internal

namespace hkv {

namespace {
constexpr std::array<std::pair<Router, std::string_view>, 4> kRouterNames = {{
    {Router::kRoundRobin, "round-robin"},
    {Router::kLeastLoaded, "least-loaded"},
    {Router::kPrefix, "prefix"},
    {Router::kHybridPrefix, "hybrid-prefix"},
}};
}  // namespace

Result<Router> ParseRouter(std::string_view text) {
  for (const auto& [router, name] : kRouterNames) {
    if (text == name) return router;
  }
  return Fail(ErrorCode::kInvalidArgument,
              "router \"" + std::string(text) +
                  "\" is not round-robin, least-loaded, prefix or "
                  "hybrid-prefix");
}

std::string_view RouterName(Router router) {
  for (const auto& [value, name] : kRouterNames) {
    if (value == router) return name;
  }
  return "?";
}

}  // namespace hkv
