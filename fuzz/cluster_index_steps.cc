// The calls of the ClusterIndex fuzzer, each checked against the index's
// state before and after it.
#include <algorithm>
#include <cstddef>
#include <span>
#include <string>

#include "cluster_index_harness.h"
#include "hkv/request.h"

namespace hkv::fuzz {
namespace {

const char* OutcomeName(BatchOutcome outcome) {
  switch (outcome) {
    case BatchOutcome::kApplied:
      return "applied";
    case BatchOutcome::kDuplicate:
      return "duplicate";
    case BatchOutcome::kGap:
      return "gap";
    case BatchOutcome::kRestarted:
      return "restarted";
    case BatchOutcome::kHistoryLost:
      return "history lost";
    case BatchOutcome::kRejected:
      return "rejected";
  }
  return "?";
}

// The events' keys and the rest of a tally, for the log.
std::string Describe(const EventTally& tally) {
  return std::to_string(tally.stored) + " stored, " +
         std::to_string(tally.removed) + " removed, " +
         std::to_string(tally.clears) + " clears" +
         (tally.groups_ok ? "" : ", a group out of range");
}

// " -> hybrid/attention ..." per instance, for the log.
std::string Describe(std::span<const InstanceMatch> matches) {
  std::string text = " ->";
  for (const InstanceMatch& m : matches) {
    text += " " + std::to_string(m.hybrid_tokens) + "/" +
            std::to_string(m.attention_tokens);
  }
  return text + "\n";
}

}  // namespace

void ClusterIndexHarness::ApplyBatchStep(bool encoded) {
  BatchCall call{.instance = DrawInstance()};
  call.sequence = DrawSequence(call.instance);
  call.source = in_.ConsumeBool() ? BatchSource::kReplay : BatchSource::kLive;
  const std::string batch = DrawBatch(encoded, call.tally);
  log_ += "ApplyBatch(" + std::to_string(call.instance) + ", " +
          std::to_string(call.sequence) +
          (call.source == BatchSource::kLive ? ", live, " : ", replay, ") +
          std::to_string(batch.size()) +
          " bytes: " + (encoded ? Describe(call.tally) : "raw") +
          (call.tally.known || !encoded ? "" : ", other encoding") +
          (call.tally.truncated ? ", truncated" : "") + ")";
  const std::vector<InstanceView> before = Snapshot();
  Error error{.code = ErrorCode::kNotFound, .message = ""};
  call.outcome = index_->ApplyBatch(call.instance, call.sequence, batch,
                                    call.source, &error);
  log_ += std::string(" -> ") + OutcomeName(call.outcome) + "\n";
  const std::vector<InstanceView> after = Snapshot();
  CheckAlways(before, after);
  CheckOthersAlone(call.instance, before, after);
  CheckOutcome(call, before[call.instance], after[call.instance]);
  if (call.outcome == BatchOutcome::kRejected) {
    Check(!error.message.empty(), "a rejected batch's error says why");
  }
}

void ClusterIndexHarness::ApplyStep() {
  const std::uint32_t instance = DrawInstance();
  EventTally tally;
  const std::vector<KvEvent> events = DrawEvents(tally);
  log_ += "Apply(" + std::to_string(instance) + ", " + Describe(tally) + ")";
  const std::vector<InstanceView> before = Snapshot();
  const Result<void> applied = index_->Apply(instance, events);
  log_ += applied ? " -> ok\n" : " -> " + applied.error().message + "\n";
  const std::vector<InstanceView> after = Snapshot();
  CheckAlways(before, after);
  Check(applied.has_value() == tally.groups_ok,
        "Apply refuses exactly a group the layout lacks");
  Check(applied || applied.error().code == ErrorCode::kInvalidArgument,
        "Apply refuses with kInvalidArgument");
  CheckApply(instance, tally, before, after);
}

void ClusterIndexHarness::ClearStep() {
  const std::uint32_t instance = DrawInstance();
  log_ += "Clear(" + std::to_string(instance) + ")\n";
  const std::vector<InstanceView> before = Snapshot();
  index_->Clear(instance);
  const std::vector<InstanceView> after = Snapshot();
  CheckAlways(before, after);
  CheckClear(instance, before, after);
}

void ClusterIndexHarness::ReplayCompletedStep() {
  const std::uint32_t instance = DrawInstance();
  log_ += "ReplayCompleted(" + std::to_string(instance) + ")\n";
  const std::vector<InstanceView> before = Snapshot();
  index_->ReplayCompleted(instance);
  const std::vector<InstanceView> after = Snapshot();
  CheckAlways(before, after);
  CheckReplayCompleted(instance, before, after);
}

void ClusterIndexHarness::MatchStep() {
  const std::vector<TokenId> tokens = DrawTokens();
  log_ += "Match(" + std::to_string(tokens.size()) + " tokens)";
  const std::vector<InstanceView> before = Snapshot();
  const std::vector<InstanceMatch> matches = index_->Match(tokens);
  log_ += Describe(matches);
  CheckAnswers(matches, static_cast<std::uint32_t>(tokens.size()));
  const Request request({}, tokens, index_->key_scheme());
  const Result<std::vector<InstanceMatch>> by_keys =
      index_->MatchKeys(request.keys(), request.num_tokens());
  Check(by_keys.has_value() && *by_keys == matches,
        "MatchKeys on a prompt's keys answers as Match");
  CheckAlways(before, Snapshot());
}

void ClusterIndexHarness::MatchKeysStep() {
  const ProbePrompts& probes = Probes();
  const int mode = in_.ConsumeIntegralInRange(0, 2);
  const std::vector<TokenId>& prompt = mode == 1 ? probes.b : probes.a;
  const std::vector<BlockHash>& prompt_keys =
      mode == 1 ? probes.b_keys : probes.a_keys;
  std::vector<BlockHash> keys;
  if (mode < 2) {
    const auto count = in_.ConsumeIntegralInRange<std::size_t>(0, kProbeUnits);
    keys.assign(prompt_keys.begin(),
                prompt_keys.begin() + static_cast<std::ptrdiff_t>(count));
  } else {
    keys = DrawHashes();
  }
  std::uint32_t num_tokens = 0;
  switch (in_.ConsumeIntegralInRange(0, 3)) {
    case 0:
    case 1:  // the right count
      num_tokens = static_cast<std::uint32_t>(keys.size()) * kIndexUnit +
                   in_.ConsumeIntegralInRange(0U, kIndexUnit - 1);
      break;
    case 2:
      num_tokens = in_.ConsumeIntegralInRange(0U, 2 * kProbeTokens);
      break;
    default:
      num_tokens = in_.ConsumeIntegral<std::uint32_t>();
  }
  log_ += "MatchKeys(" + std::to_string(keys.size()) + " keys, " +
          std::to_string(num_tokens) + " tokens)";
  const Result<std::vector<InstanceMatch>> matches =
      index_->MatchKeys(keys, num_tokens);
  log_ += matches ? Describe(*matches) : " -> refused\n";
  Check(matches.has_value() == (keys.size() == num_tokens / kIndexUnit),
        "MatchKeys refuses exactly a wrong key count");
  if (!matches) {
    Check(matches.error().code == ErrorCode::kInvalidArgument,
          "MatchKeys refuses with kInvalidArgument");
    return;
  }
  CheckAnswers(*matches, num_tokens);
  if (mode < 2 && num_tokens <= prompt.size()) {
    const std::span<const TokenId> tokens(prompt.data(), num_tokens);
    Check(*matches == index_->Match(tokens),
          "MatchKeys on a prompt's keys answers as Match");
  }
}

}  // namespace hkv::fuzz
