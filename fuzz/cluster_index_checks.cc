// The checks after each call of the ClusterIndex fuzzer: what the header
// (hkv/cluster_index.h) promises of any call, of ApplyBatch's outcomes and
// counters, of Apply and of Clear.
#include <array>
#include <cstddef>
#include <numeric>
#include <optional>
#include <string>

#include "cluster_index_harness.h"

namespace hkv::fuzz {
namespace {

enum Counter : std::size_t {
  kBatches,
  kStored,
  kRemoved,
  kUnknownRemovals,
  kEvicted,
  kClears,
  kDuplicates,
  kGaps,
  kRestarts,
  kHistoryLost,
  kRejected,
  kNumCounters
};
using Counts = std::array<std::uint64_t, kNumCounters>;

Counts Fields(const InstanceCounters& c) {
  return {c.batches,      c.stored_keys,  c.removed_keys, c.unknown_removals,
          c.evicted_keys, c.clears,       c.duplicates,   c.gaps,
          c.restarts,     c.history_lost, c.rejected};
}

bool Same(const InstanceView& x, const InstanceView& y) {
  return x.a == y.a && x.b == y.b && x.resident == y.resident &&
         Fields(x.counters) == Fields(y.counters) && x.expected == y.expected &&
         x.held == y.held;
}

// The outcome the header gives a batch by its number, were it readable.
BatchOutcome Predicted(std::optional<std::uint64_t> expected,
                       std::uint64_t sequence, BatchSource source) {
  const std::uint64_t next = expected.value_or(0);
  if (sequence == next) return BatchOutcome::kApplied;
  if (source == BatchSource::kReplay) {
    return sequence < next ? BatchOutcome::kDuplicate
                           : BatchOutcome::kHistoryLost;
  }
  return sequence == 0 ? BatchOutcome::kRestarted : BatchOutcome::kGap;
}

bool Decodes(BatchOutcome outcome) {
  return outcome == BatchOutcome::kApplied ||
         outcome == BatchOutcome::kRestarted ||
         outcome == BatchOutcome::kHistoryLost;
}

// The counters an Apply of `tally`'s events adds to `want`. Removals held
// or not are taken from `got` (their sum checked), evictions too (they
// only grow).
bool AddApplied(const EventTally& tally, const Counts& got, Counts& want) {
  const bool removals = got[kRemoved] + got[kUnknownRemovals] ==
                        want[kRemoved] + want[kUnknownRemovals] + tally.removed;
  want[kStored] += tally.stored;
  want[kClears] += tally.clears;
  want[kRemoved] = got[kRemoved];
  want[kUnknownRemovals] = got[kUnknownRemovals];
  want[kEvicted] = got[kEvicted];
  return removals;
}

// The counters ApplyBatch adds by its outcome, the batch's own events
// aside. `predicted` tells a rejected batch's path.
void AddOutcome(BatchOutcome outcome, BatchOutcome predicted, Counts& want) {
  switch (outcome) {
    case BatchOutcome::kDuplicate:
      ++want[kDuplicates];
      return;
    case BatchOutcome::kGap:
      ++want[kGaps];
      return;
    case BatchOutcome::kRejected:
      ++want[kRejected];
      ++want[kClears];
      break;
    default:
      ++want[kBatches];
      break;
  }
  if (predicted == BatchOutcome::kRestarted) ++want[kRestarts];
  if (predicted == BatchOutcome::kHistoryLost) ++want[kHistoryLost];
  if (predicted != BatchOutcome::kApplied) ++want[kClears];
}

}  // namespace

void ClusterIndexHarness::CheckAnswers(std::span<const InstanceMatch> matches,
                                       std::uint32_t num_tokens) const {
  Check(matches.size() == num_instances_, "an answer per instance");
  for (const InstanceMatch& m : matches) CheckMatch(m, num_tokens);
}

void ClusterIndexHarness::CheckMatch(const InstanceMatch& match,
                                     std::uint32_t num_tokens) const {
  const std::uint32_t most = num_tokens > 0 ? num_tokens - 1 : 0;
  Check(match.hybrid_tokens <= most && match.attention_tokens <= most,
        "an answer leaves the prompt's last token");
  Check(match.hybrid_tokens <= match.attention_tokens,
        "every group resumes no further than full attention's chain");
}

void ClusterIndexHarness::CheckAlways(
    std::span<const InstanceView> before,
    std::span<const InstanceView> after) const {
  for (std::uint32_t i = 0; i < num_instances_; ++i) {
    const InstanceView& view = after[i];
    Check(view.resident.size() == index_->num_groups(), "keys per group");
    Check(std::accumulate(view.resident.begin(), view.resident.end(),
                          std::uint64_t{0}) <= capacity_,
          "an instance holds at most capacity_keys keys");
    CheckMatch(view.a, kProbeTokens);
    CheckMatch(view.b, kProbeTokens);
    const Counts was = Fields(before[i].counters);
    const Counts now = Fields(view.counters);
    for (std::size_t c = 0; c < now.size(); ++c) {
      Check(now[c] >= was[c], "counters only grow");
    }
    Check(now[kEvicted] <= now[kStored], "no more keys evicted than stored");
  }
}

void ClusterIndexHarness::CheckOthersAlone(
    std::uint32_t instance, std::span<const InstanceView> before,
    std::span<const InstanceView> after) const {
  for (std::uint32_t i = 0; i < num_instances_; ++i) {
    if (i != instance) {
      Check(Same(before[i], after[i]), "a call leaves other instances alone");
    }
  }
}

void ClusterIndexHarness::CheckCleared(const InstanceView& view) const {
  Check(view.a == InstanceMatch{} && view.b == InstanceMatch{},
        "a cleared instance answers 0");
  for (const std::uint64_t keys : view.resident) {
    Check(keys == 0, "a cleared instance holds no key");
  }
}

void ClusterIndexHarness::CheckOutcome(const BatchCall& call,
                                       const InstanceView& before,
                                       const InstanceView& after) const {
  const BatchOutcome predicted =
      Predicted(before.expected, call.sequence, call.source);
  const EventTally& tally = call.tally;
  if (!Decodes(predicted)) {
    Check(call.outcome == predicted,
          "ApplyBatch's outcome follows the sequence numbers");
  } else if (tally.truncated) {
    Check(call.outcome == BatchOutcome::kRejected,
          "a truncated batch is rejected");
  } else if (tally.known) {
    Check(
        call.outcome == (tally.groups_ok ? predicted : BatchOutcome::kRejected),
        "a batch of hkv's encoding is applied unless a group is unknown");
  } else {
    Check(call.outcome == predicted || call.outcome == BatchOutcome::kRejected,
          "ApplyBatch's outcome follows the sequence numbers");
  }
  // Nothing expected yet (never heard; the fuzzer does not resync).
  const bool from_start =
      call.source == BatchSource::kReplay && !before.expected;
  // A live batch numbered below the next but past 0: a restart, replay it.
  const bool restart_gap = predicted == BatchOutcome::kGap &&
                           call.sequence < before.expected.value_or(0);
  Counts want = Fields(before.counters);
  const Counts got = Fields(after.counters);
  AddOutcome(call.outcome, predicted, want);
  if (restart_gap) {
    ++want[kRestarts];
    ++want[kClears];
  }
  if (Decodes(call.outcome) && tally.known) {
    Check(AddApplied(tally, got, want), "removals counted, held or not");
  } else if (Decodes(call.outcome)) {
    Check(got[kClears] >= want[kClears], "counters only grow");
    for (const Counter c :
         {kStored, kRemoved, kUnknownRemovals, kEvicted, kClears}) {
      want[c] = got[c];
    }
  }
  Check(got == want, "ApplyBatch's counters follow its outcome");
  std::optional<std::uint64_t> next = call.sequence + 1;
  if (call.outcome == BatchOutcome::kDuplicate) next = before.expected;
  if (call.outcome == BatchOutcome::kGap) {
    next = restart_gap ? 0 : before.expected.value_or(0);
  }
  Check(after.expected == next, "expected_sequence follows the outcome");
  if (call.outcome == BatchOutcome::kRejected || restart_gap) {
    CheckCleared(after);
  }
  if (call.outcome == BatchOutcome::kGap) {
    // The missing batches may have removed keys: it claims nothing until
    // the gap is filled, and keeps its keys for that.
    Check(after.held, "a gap holds the instance");
    Check(after.a == InstanceMatch{} && after.b == InstanceMatch{},
          "a held instance claims nothing");
    if (!restart_gap) {
      Check(after.resident == before.resident, "a gap changes no key");
    }
  } else if (call.outcome == BatchOutcome::kDuplicate) {
    Check(after.a == before.a && after.b == before.b &&
              after.resident == before.resident && after.held == before.held,
          "a batch not applied changes no answer");
  } else if (call.outcome == BatchOutcome::kRejected) {
    Check(!after.held || before.held || from_start ||
              predicted == BatchOutcome::kRestarted,
          "a rejected batch starts no hold unless its number went back");
  }
  if (from_start) {
    // What it brings may be undone by a batch no replay reaches.
    Check(
        after.held && after.a == InstanceMatch{} && after.b == InstanceMatch{},
        "a replay from the stream's start holds the instance until one "
        "completes");
  }
}

void ClusterIndexHarness::CheckReplayCompleted(
    std::uint32_t instance, std::span<const InstanceView> before,
    std::span<const InstanceView> after) const {
  CheckOthersAlone(instance, before, after);
  const InstanceView& was = before[instance];
  const InstanceView& now = after[instance];
  Check(now.resident == was.resident &&
            Fields(now.counters) == Fields(was.counters) &&
            now.expected == was.expected,
        "ReplayCompleted changes no key, count or sequence number");
  Check(!now.held || was.held, "ReplayCompleted starts no hold");
}

void ClusterIndexHarness::CheckApply(
    std::uint32_t instance, const EventTally& tally,
    std::span<const InstanceView> before,
    std::span<const InstanceView> after) const {
  if (!tally.groups_ok) {
    for (std::uint32_t i = 0; i < num_instances_; ++i) {
      Check(Same(before[i], after[i]), "a refused Apply changes nothing");
    }
    return;
  }
  CheckOthersAlone(instance, before, after);
  Counts want = Fields(before[instance].counters);
  const Counts got = Fields(after[instance].counters);
  Check(AddApplied(tally, got, want), "removals counted, held or not");
  Check(got == want, "Apply counts its keys and clears");
  Check(after[instance].expected == before[instance].expected,
        "Apply leaves the sequence numbers alone");
}

void ClusterIndexHarness::CheckClear(
    std::uint32_t instance, std::span<const InstanceView> before,
    std::span<const InstanceView> after) const {
  CheckOthersAlone(instance, before, after);
  CheckCleared(after[instance]);
  Counts want = Fields(before[instance].counters);
  ++want[kClears];
  Check(Fields(after[instance].counters) == want, "Clear counts a clear");
}

}  // namespace hkv::fuzz
