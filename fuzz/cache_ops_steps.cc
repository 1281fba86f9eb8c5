// The scheduler's calls of the operation-sequence fuzzer, each valid by the
// API's contract, so none may be refused (except an admission whose hit the
// contract says to look up again).
#include <algorithm>

#include "cache_ops_config.h"
#include "cache_ops_harness.h"

namespace hkv::fuzz {
namespace {

// Whether a failed allocation of a running request may release blocks (those
// that fell out of its windows, or old recurrent states).
bool ReleasesOnFailure(const CacheConfig& config) {
  return std::any_of(
      config.groups.begin(), config.groups.end(), [](const GroupSpec& g) {
        return g.kind != GroupKind::kFullAttention || g.output_window > 0;
      });
}

}  // namespace

std::optional<NewBlocks> CacheOpsHarness::Allocate(
    Tracked& t, const AllocationRequest& args, Expect expect) {
  const bool held = t.holds;
  const std::string before = Digest();
  Note("allocate " + Describe(t.request) + " computed " +
       std::to_string(args.num_computed_tokens) + " hit " +
       std::to_string(args.hit ? args.hit->num_tokens : 0) + " external " +
       std::to_string(args.num_external_computed_tokens) + " new " +
       std::to_string(args.num_new_tokens) + " lookahead " +
       std::to_string(args.num_lookahead_tokens) + " in-flight " +
       std::to_string(args.num_in_flight_tokens) + " whole " +
       std::to_string(args.gate == AdmissionGate::kWholeSequence));
  std::optional<NewBlocks> placed;
  if (!Run(expect, [&] { placed = core_.Allocate(t.request, args); })) {
    Note("  refused");
    return std::nullopt;
  }
  if (!placed) {
    Note("  no room");
    Check((held && ReleasesOnFailure(config_)) || Digest() == before,
          "a failed allocation changed the state");
    return std::nullopt;
  }
  t.holds = true;
  Check(placed->blocks.size() == config_.groups.size(),
        "an allocation's new blocks are not one list per group");
  return placed;
}

// Exported states lie inside the chunk [start, end), in blocks of the
// request's recurrent tables.
void CacheOpsHarness::CheckExports(const Tracked& t, const NewBlocks& placed,
                                   std::uint32_t start,
                                   std::uint32_t end) const {
  for (const StateExport& e : placed.state_exports) {
    Check(ToIndex(e.group) < config_.groups.size() &&
              config_.groups[ToIndex(e.group)].kind == GroupKind::kRecurrent,
          "a state export names a group that is not recurrent");
    Check(e.position > start && e.position < end,
          "a state export lies outside its chunk");
    const std::span<const BlockId> table =
        core_.block_table(t.request.id(), e.group);
    Check(std::find(table.begin(), table.end(), e.block) != table.end(),
          "a state export names a block outside the request's table");
  }
}

// The hit may be stale: the contract then has it adopted only if a fresh
// lookup finds the very same hit.
Expect CacheOpsHarness::AdoptionExpectation(const Request& request,
                                            const CacheHit* hit) const {
  if (hit == nullptr || hit->num_tokens == 0 ||
      hit->key_generation == core_.pool().key_generation()) {
    return Expect::kSucceed;
  }
  const CacheHit fresh = core_.Lookup(request);
  return fresh.num_tokens == hit->num_tokens && fresh.blocks == hit->blocks
             ? Expect::kSucceed
             : Expect::kRefused;
}

// A prefill chunk of what is left after `done` tokens, split as the
// scheduler would.
std::uint32_t CacheOpsHarness::Chunk(const Tracked& t, std::uint32_t done) {
  const std::uint32_t left = t.request.num_tokens() - done;
  if (done >= t.request.num_prompt_tokens()) return left;  // decode
  const std::uint32_t budget = in_.ConsumeIntegralInRange(1u, 4 * max_block_);
  const std::uint32_t want = std::min(budget, left);
  const std::uint32_t n = core_.SplitPrefill(
      t.request, {.num_computed_tokens = done,
                  .num_new_tokens = want,
                  .max_num_scheduled_tokens = budget,
                  .shared_prefix_boundary = t.hit.shared_prefix_boundary});
  Check(n <= want, "SplitPrefill schedules more than the budget allows");
  return n == 0 ? want : n;  // a block above the budget: schedule it anyway
}

// First allocation: the lookup's hit, no hit, or the hit cut to a scheduler
// block with a connector loading some tokens after it.
void CacheOpsHarness::Admit() {
  Tracked* t = Pick([](const Tracked& x) { return !x.holds; });
  if (t == nullptr) return;
  const CacheHit* adopted = &t->hit;
  CacheHit cut;
  std::uint32_t external = 0;
  switch (in_.ConsumeIntegralInRange(0, 2)) {
    case 1:
      adopted = nullptr;
      break;
    case 2: {
      const std::uint32_t s = SchedulerBlock(config_);
      const std::uint32_t keep =
          s * in_.ConsumeIntegralInRange(0u, t->hit.num_tokens / s);
      Run(Expect::kSucceed, [&] { cut = core_.TruncateHit(t->hit, keep); });
      adopted = &cut;
      external =
          in_.ConsumeIntegralInRange(0u, t->request.num_tokens() - keep - 1);
      break;
    }
    default:
      break;
  }
  const std::uint32_t done = (adopted ? adopted->num_tokens : 0) + external;
  const std::uint32_t n = Chunk(*t, done);
  const AllocationRequest args{
      .num_external_computed_tokens = external,
      .num_new_tokens = n,
      .num_lookahead_tokens =
          in_.ConsumeIntegralInRange(0u, std::min(2u, config_.max_model_len)),
      .hit = adopted,
      .gate = in_.PickValueInArray(
          {AdmissionGate::kNextChunk, AdmissionGate::kWholeSequence})};
  const Expect expect = AdoptionExpectation(t->request, adopted);
  if (std::optional<NewBlocks> placed = Allocate(*t, args, expect)) {
    CheckExports(*t, *placed, done, done + n);
    t->computed = done;
    t->scheduled = n;
  }
}

// The next chunk of a running request, or a decode step (one or two tokens
// sampled first).
void CacheOpsHarness::Continue() {
  Tracked* t =
      Pick([](const Tracked& x) { return x.holds && x.scheduled == 0; });
  if (t == nullptr) return;
  Request& r = t->request;
  if (t->computed == r.num_tokens()) {
    if (r.num_tokens() >= config_.max_model_len) return;
    std::vector<TokenId> sampled(in_.ConsumeIntegralInRange(
        1u, std::min(2u, config_.max_model_len - r.num_tokens())));
    for (TokenId& token : sampled) token = in_.ConsumeIntegralInRange(0u, 3u);
    r.AppendTokens(sampled);
    Note("sampled " + std::to_string(sampled.size()) + " for " + Describe(r));
  }
  const std::uint32_t n = Chunk(*t, t->computed);
  const AllocationRequest args{
      .num_computed_tokens = t->computed,
      .num_new_tokens = n,
      .num_lookahead_tokens =
          in_.ConsumeIntegralInRange(0u, std::min(2u, config_.max_model_len)),
      .num_in_flight_tokens =
          in_.ConsumeBool() ? in_.ConsumeIntegralInRange(0u, t->computed) : 0,
      .gate = in_.PickValueInArray(
          {AdmissionGate::kNextChunk, AdmissionGate::kWholeSequence})};
  if (std::optional<NewBlocks> placed = Allocate(*t, args, Expect::kSucceed)) {
    CheckExports(*t, *placed, t->computed, t->computed + n);
    t->scheduled = n;
  }
}

// The model computed the scheduled tokens: commit at the chunk's end.
void CacheOpsHarness::CommitStep() {
  Tracked* t =
      Pick([](const Tracked& x) { return x.holds && x.scheduled > 0; });
  if (t == nullptr) return;
  t->computed += std::exchange(t->scheduled, 0);
  Note("commit " + Describe(t->request) + " at " + std::to_string(t->computed));
  Run(Expect::kSucceed, [&] { core_.Commit(t->request, t->computed); });
}

// A commit at or before what was computed already: a no-op or a refusal,
// never a broken cache.
void CacheOpsHarness::CommitEarlier() {
  Tracked* t = Pick([](const Tracked& x) { return x.holds; });
  if (t == nullptr) return;
  const std::uint32_t n = in_.ConsumeIntegralInRange(0u, t->computed);
  Note("commit earlier " + Describe(t->request) + " at " + std::to_string(n));
  Run(Expect::kMayBeRefused, [&] { core_.Commit(t->request, n); });
}

// A request finishes (forgotten) or is preempted (looked up again, to be
// admitted anew).
void CacheOpsHarness::FreeOne() {
  Tracked* t = Pick([](const Tracked& x) { return x.holds; });
  if (t == nullptr) return;
  Note("free " + Describe(t->request));
  Run(Expect::kSucceed, [&] { core_.Free(t->request.id()); });
  *t = {.request = std::move(t->request)};
  if (in_.ConsumeBool()) {
    t->hit = CheckedLookup(t->request);
    return;
  }
  const RequestId id = t->request.id();
  std::erase_if(tracked_,
                [&](const Tracked& x) { return x.request.id() == id; });
}

void CacheOpsHarness::TakeCopies() {
  const internal::BlockPool& pool = core_.pool();
  Note("take copies");
  for (const BlockCopy& copy : core_.TakeCopies()) {
    for (const BlockId end : {copy.source, copy.destination}) {
      Check(end != kNullBlock && ToIndex(end) < pool.num_blocks() &&
                pool.ref_count(end) > 0,
            "a copy's end is not a pinned block");
    }
    Check(ToIndex(copy.group) < config_.groups.size(), "a copy names no group");
  }
  // The engine maps memory by the moves it takes: each id as the pool says.
  const PoolMoves moves = core_.TakePoolMoves();
  for (const BlockId id : moves.parked) {
    Check(pool.parked(id), "a parked id is not parked");
  }
  for (const BlockId id : moves.unparked) {
    Check(!pool.parked(id), "an unparked id is parked");
  }
}

void CacheOpsHarness::ResetPrefixCache() {
  const internal::BlockPool& pool = core_.pool();
  const bool all_free = pool.num_free_blocks() == pool.num_usable_blocks();
  const std::string before = Digest();
  Note("reset prefix cache");
  const bool reset = core_.ResetPrefixCache();
  Check(reset == all_free,
        "ResetPrefixCache answers otherwise than documented");
  Check(reset ? pool.num_keys() == 0 : Digest() == before,
        "ResetPrefixCache left keys, or changed state while refusing");
}

void CacheOpsHarness::TakeEventsAndStats() {
  const std::vector<KvEvent> events = core_.TakeEvents();
  Check(config_.events == KvEventMode::kEnabled || events.empty(),
        "events recorded with events disabled");
  const PrefixCacheStats stats = core_.TakeStats();
  Check(stats.hits <= stats.queries, "more hit tokens than queried tokens");
}

// A lookup of a request nobody admits: the oracle's hit, and no change.
void CacheOpsHarness::Probe() {
  const Request request = MakeRequest(Prompt());
  Note("probe " + Describe(request));
  const std::string before = Digest();
  CheckedLookup(request);
  Check(Digest() == before, "a lookup changed the state");
}

}  // namespace hkv::fuzz
