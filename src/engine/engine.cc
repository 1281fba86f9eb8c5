// Scheduling: which requests run in a step, preemption, admission.
#include "engine/engine.h"

#include <algorithm>
#include <limits>
#include <string>

#include "groups/kind_traits.h"

namespace hkv::internal {

Result<void> Engine::Run() {
  std::size_t reported = 0;
  while (result_.finished < result_.requests) {
    AdmitArrivals();
    if (running_.empty() && waiting_.empty()) {
      const std::optional<double> next = arrivals_.NextArrival();
      if (!next) break;  // unreachable for a valid workload
      now_ = std::max(now_, *next);
      continue;
    }
    if (Result<void> ok = Step(); !ok) return ok;
    if (options_.progress && result_.finished >= reported + 256) {
      reported = result_.finished;
      options_.progress(reported, workload_.size());
    }
  }
  if (options_.progress) options_.progress(result_.finished, workload_.size());
  return {};
}

Result<void> Engine::StepOnce() {
  AdmitArrivals();
  if (!Busy()) return {};
  return Step();
}

std::uint64_t Engine::OutstandingPrefillTokens() const {
  std::uint64_t tokens = 0;
  const auto add = [&](std::size_t index) {
    const std::uint32_t prompt = PromptLength(workload_[index]);
    const Live& live = lives_[index];
    tokens += prompt - std::min(prompt, live.computed);
  };
  for (std::size_t index : running_) add(index);
  for (std::size_t index : waiting_) add(index);
  return tokens;
}

void Engine::AdmitArrivals() {
  arrived_.clear();
  arrivals_.Release(now_, arrived_);
  for (const auto& [index, time] : arrived_) {
    result_.per_request[index].arrival_s = time;
    result_.per_request[index].prompt_tokens = PromptLength(workload_[index]);
    result_.per_request[index].arrival_step = result_.steps;
    waiting_.push_back(index);
  }
  result_.peak_waiting = std::max(result_.peak_waiting,
                                  static_cast<std::uint32_t>(waiting_.size()));
}

Result<void> Engine::Step() {
  scheduled_.clear();
  shape_ = {};
  budget_left_ = options_.limits.max_num_batched_tokens;
  Result<bool> preempted = ScheduleRunning();
  if (!preempted) return tl::unexpected(preempted.error());
  if (!*preempted) {
    if (Result<void> ok = ScheduleWaiting(); !ok) return ok;
  }
  if (scheduled_.empty()) {
    if (*preempted || WaitForLoads()) return {};
    return tl::unexpected(
        Infeasible(waiting_.empty() ? running_.front() : waiting_.front(),
                   "cannot be scheduled"));
  }
  for (const BlockCopy& copy : cache_.TakeCopies()) {
    ++shape_.copies;
    shape_.copy_bytes += PageBytes(ToIndex(copy.group));
  }
  result_.copies += shape_.copies;
  // Rebalancing pools: the engine remaps the moved ids' memory before the
  // step (not modelled: a few mappings per step at most).
  cache_.TakePoolMoves();
  const double step_s = StepSeconds(options_.cost, shape_);
  now_ += step_s;
  ++result_.steps;
  result_.peak_running = std::max(result_.peak_running,
                                  static_cast<std::uint32_t>(running_.size()));
  Complete();
  if (options_.kv_events != nullptr || event_sink_) {
    // As the reference's scheduler: a step without events sends nothing.
    std::vector<KvEvent> events = cache_.TakeEvents();
    if (!events.empty() && event_sink_) {
      event_sink_(std::move(events), now_);
    } else if (!events.empty()) {
      options_.kv_events->Publish(std::move(events), now_);
    }
  }
  RecordShape();
  stats_.RecordUsage(now_, step_s, cache_.usage());
  if (stats_.ResidencyDue(now_)) {
    stats_.RecordResidency(
        {.time_s = now_, .cached_blocks = cache_.CachedBlocksPerGroup()});
  }
  return {};
}

Result<bool> Engine::ScheduleRunning() {
  bool preempted = false;
  for (std::size_t i = 0; i < running_.size() && budget_left_ > 0; ++i) {
    const std::size_t before = result_.preemptions;
    Result<bool> kept = ScheduleOne(i);
    if (!kept) return tl::unexpected(kept.error());
    preempted = preempted || result_.preemptions != before;
    if (!*kept) break;
  }
  return preempted;
}

// Drafts of a decode: at most k, no more than the outputs still to come
// after the sampled token, within the budget.
std::uint32_t Engine::DecodeDrafts(std::size_t index) const {
  const std::uint32_t left =
      workload_[index].output_length - lives_[index].outputs;
  return std::min(
      {options_.speculation.num_drafts, left - 1, budget_left_ - 1});
}

Result<bool> Engine::ScheduleOne(std::size_t i) {
  const std::size_t index = running_[i];
  if (Loading(index)) return true;
  Live& live = lives_[index];
  const Request& r = *live.request;
  // A decode feeds the last sampled token; a prompt's last token (after a
  // hit of all but it) is still prefill.
  live.decoding = live.outputs > 0 && r.num_tokens() - live.computed == 1;
  live.drafts = live.decoding ? DecodeDrafts(index) : 0;
  live.scheduled =
      live.decoding
          ? 1 + live.drafts
          : NextPrefillChunk(
                cache_, r,
                {.num_computed_tokens = live.computed,
                 .budget_left = budget_left_,
                 .max_num_batched_tokens =
                     options_.limits.max_num_batched_tokens,
                 .long_prefill_threshold =
                     options_.limits.long_prefill_threshold,
                 .shared_prefix_boundary = live.shared_prefix_boundary});
  if (live.scheduled == 0) return true;
  while (!Allocate(
      index, {.num_computed_tokens = live.computed,
              .num_new_tokens = live.scheduled,
              .num_lookahead_tokens = options_.speculation.lookahead_slots})) {
    const std::size_t victim = running_.back();
    if (victim == index && running_.size() == 1) {
      return tl::unexpected(
          Infeasible(index, "cannot grow to " +
                                std::to_string(live.computed + live.scheduled) +
                                " tokens with the whole pool to itself"));
    }
    Preempt(victim);
    if (victim == index) return false;
  }
  Account(index);
  return true;
}

std::optional<NewBlocks> Engine::Allocate(std::size_t index,
                                          const AllocationRequest& args) {
  Live& live = lives_[index];
  return Timed(ManagerCall::kAllocate, live.hit_class,
               [&] { return cache_.Allocate(*live.request, args); });
}

void Engine::Preempt(std::size_t index) {
  Live& live = lives_[index];
  Timed(ManagerCall::kFree, live.hit_class,
        [&] { cache_.Free(RequestId{index}); });
  live.computed = 0;
  live.ready_s = 0.0;
  live.loading = false;
  running_.pop_back();
  waiting_.push_front(index);
  ++result_.preemptions;
  ++result_.per_request[index].preemptions;
}

// Books the scheduled work of lives_[index] into the step: attention work
// on one DCP rank, and a state page of every recurrent group at each of its
// block boundaries the work reaches.
void Engine::Account(std::size_t index) {
  Live& live = lives_[index];
  budget_left_ -= live.scheduled;
  const std::uint64_t end = std::uint64_t{live.computed} + live.scheduled;
  const auto dcp = static_cast<double>(options_.cache.dcp);
  const std::uint32_t topk =
      options_.cost.physics ? options_.cost.physics->attention_topk : 0;
  ++shape_.requests;
  shape_.sparse_attention_pairs +=
      SparseAttentionPairs(live.computed, end, topk) / dcp;
  if (live.decoding) {
    shape_.decode_tokens += live.scheduled;
    shape_.draft_tokens += live.drafts;
    shape_.decode_context_tokens +=
        (end + options_.cache.dcp - 1) / options_.cache.dcp;
    shape_.decode_attention_pairs +=
        PrefillAttentionPairs(live.computed, end) / dcp;
    const std::uint64_t keys =
        topk == 0 ? end : std::min<std::uint64_t>(end, topk);
    shape_.decode_sparse_keys +=
        (keys + options_.cache.dcp - 1) / options_.cache.dcp;
  } else {
    shape_.prefill_tokens += live.scheduled;
    shape_.prefill_attention_pairs +=
        PrefillAttentionPairs(live.computed, end) / dcp;
    prefill_tokens_ += live.scheduled;
  }
  const std::vector<GroupSpec>& groups = options_.cache.groups;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (!TraitsOf(groups[g].kind).keeps_states) continue;
    shape_.state_bytes_written +=
        BoundariesReached(live.computed, end, groups[g].block_size) *
        PageBytes(g);
  }
  scheduled_.push_back(index);
}

std::uint64_t Engine::PageBytes(std::size_t group) const {
  return group < options_.page_bytes.size() ? options_.page_bytes[group] : 0;
}

void Engine::RecordShape() {
  StepShape& t = result_.totals;
  t.prefill_tokens += shape_.prefill_tokens;
  t.prefill_attention_pairs += shape_.prefill_attention_pairs;
  t.decode_tokens += shape_.decode_tokens;
  t.decode_context_tokens += shape_.decode_context_tokens;
  t.requests += shape_.requests;
  t.admissions += shape_.admissions;
  t.state_bytes_written += shape_.state_bytes_written;
  t.draft_tokens += shape_.draft_tokens;
  t.copies += shape_.copies;
  t.copy_bytes += shape_.copy_bytes;
  t.sampled_tokens += shape_.sampled_tokens;
  t.decode_attention_pairs += shape_.decode_attention_pairs;
  t.sparse_attention_pairs += shape_.sparse_attention_pairs;
  t.decode_sparse_keys += shape_.decode_sparse_keys;
  if (options_.record_steps) result_.step_shapes.push_back(shape_);
}

Result<void> Engine::ScheduleWaiting() {
  while (!waiting_.empty() && budget_left_ > 0 &&
         running_.size() < options_.limits.max_num_seqs) {
    const std::size_t index = waiting_.front();
    Live& live = lives_[index];
    const TierHit th = Lookup(index);
    const CacheHit& hit = th.hit;
    const std::uint32_t start = hit.num_tokens + th.num_external_tokens;
    live.decoding = false;
    live.drafts = 0;
    live.scheduled = NextPrefillChunk(
        cache_, *live.request,
        {.num_computed_tokens = start,
         .budget_left = budget_left_,
         .max_num_batched_tokens = options_.limits.max_num_batched_tokens,
         .long_prefill_threshold = options_.limits.long_prefill_threshold,
         .shared_prefix_boundary = hit.shared_prefix_boundary});
    if (live.scheduled == 0) break;
    const std::optional<NewBlocks> placed = Allocate(
        index, {.num_external_computed_tokens = th.num_external_tokens,
                .num_new_tokens = live.scheduled,
                .num_lookahead_tokens = options_.speculation.lookahead_slots,
                .hit = &hit});
    if (!placed) {
      if (!running_.empty()) break;
      return tl::unexpected(
          Infeasible(index, "cannot start: its first chunk of " +
                                std::to_string(live.scheduled) +
                                " tokens does not fit the whole pool"));
    }
    RecordAdmission(index, start);
    live.computed = start;
    live.shared_prefix_boundary = hit.shared_prefix_boundary;
    waiting_.pop_front();
    running_.push_back(index);
    if (!StartLoad(index, th, placed->state_exports)) Account(index);
  }
  return {};
}

void Engine::RecordAdmission(std::size_t index, std::uint32_t reused) {
  Live& live = lives_[index];
  if (live.admitted_once) return;
  live.admitted_once = true;
  ++shape_.admissions;
  const std::uint32_t prompt = PromptLength(workload_[index]);
  result_.per_request[index].reused_tokens = reused;
  result_.reused_tokens += reused;
  result_.computed_tokens += prompt - reused;
  if (live.hit_class == HitClass::kEvictedMiss) {
    ++result_.evicted_chains.requests;
    result_.evicted_chains.tokens += prompt;
  }
}

HitClass Engine::ClassOf(const CacheHit& hit, const Request& request) const {
  if (hit.num_tokens == 0) {
    const bool lost = hit.chain_tokens == 0 && !request.keys().empty() &&
                      cached_once_.count(request.keys()[0]) != 0;
    return lost ? HitClass::kEvictedMiss : HitClass::kColdMiss;
  }
  // Short of the chain by no more than the draft's rewind: warm, whichever
  // group the manager names (a recurrent group may stop at the same unit).
  const bool warm = hit.miss_cause == MissCause::kNone ||
                    hit.miss_cause == MissCause::kSpeculativeRewind ||
                    hit.num_tokens + draft_rewind_ >= hit.chain_tokens;
  return warm ? HitClass::kWarmHit : HitClass::kSparseHit;
}

// Looks the request up (building it first) and classes it by the hit, the
// tiers' tokens counted in.
TierHit Engine::Lookup(std::size_t index) {
  Live& live = lives_[index];
  if (!live.request) {
    live.request.emplace(RequestOptions{.id = RequestId{index}},
                         PromptTokens(workload_[index]), cache_.key_scheme());
  }
  TierHit hit;
  std::uint64_t ns = std::numeric_limits<std::uint64_t>::max();
  for (std::uint32_t i = 0; i < std::max(options_.lookup_repeats, 1u); ++i) {
    const auto start = std::chrono::steady_clock::now();
    hit = tiers_ ? LookupThroughTiers(*live.request)
                 : TierHit{.hit = cache_.Lookup(*live.request)};
    ns = std::min(ns, NanosecondsSince(start));
  }
  CacheHit reach = hit.hit;
  reach.num_tokens += hit.num_external_tokens;
  live.hit_class = ClassOf(reach, *live.request);
  stats_.RecordCall(ManagerCall::kLookup, live.hit_class, ns);
  return hit;
}

std::uint32_t Engine::Accepted(std::uint32_t drafts) {
  std::uint32_t accepted = 0;
  while (accepted < drafts) {
    rng_ = SplitMix64(rng_);
    const double u = static_cast<double>(rng_ >> 11) * 0x1.0p-53;
    if (u >= options_.speculation.acceptance_rate) break;
    ++accepted;
  }
  return accepted;
}

}  // namespace hkv::internal
