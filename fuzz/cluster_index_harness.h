// The ClusterIndex fuzzer's calls (cluster_index_steps.cc), the values
// they draw (cluster_index_harness.cc) and the checks after each
// (cluster_index_checks.cc). Every value comes from the FuzzedDataProvider;
// a call the contract forbids (an instance out of range, more than
// kMaxTokensPerRequest tokens) is never made.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hkv/cluster_index.h"
#include "hkv/events.h"

namespace hkv::fuzz {

inline constexpr std::uint32_t kIndexUnit = 16;  // tokens a block and a key
inline constexpr std::uint32_t kProbeUnits = 8;  // units of a probe prompt
inline constexpr std::uint32_t kProbeTokens = kProbeUnits * kIndexUnit + 1;

// Two prompts of kProbeTokens tokens and their keys: b shares a's first
// three units. Events draw their keys from these, and every check asks the
// index about both.
struct ProbePrompts {
  std::vector<TokenId> a, b;
  std::vector<BlockHash> a_keys, b_keys;
};
const ProbePrompts& Probes();

// What the harness sees of one instance: its answers to the probe prompts,
// its keys per group, counters and expected sequence number.
struct InstanceView {
  InstanceMatch a;
  InstanceMatch b;
  std::vector<std::uint64_t> resident;
  InstanceCounters counters;
  std::optional<std::uint64_t> expected;
  bool held = false;  // a gap not yet filled, or a replay from the start
};

// What a list of events carries, and how a batch of them was made.
struct EventTally {
  std::uint64_t stored = 0;   // keys
  std::uint64_t removed = 0;  // keys
  std::uint64_t clears = 0;
  bool groups_ok = true;   // every group within the layout
  bool known = true;       // a batch decodes to exactly these events
  bool truncated = false;  // a batch was cut short: unreadable
};

// One ApplyBatch call and what it returned.
struct BatchCall {
  std::uint32_t instance = 0;
  std::uint64_t sequence = 0;
  BatchSource source = BatchSource::kLive;
  EventTally tally = {};
  BatchOutcome outcome = BatchOutcome::kApplied;
};

class ClusterIndexHarness {
 public:
  // Draws the index's configuration: 2 or 3 instances, 8 to 64 keys, the
  // hash encoding.
  explicit ClusterIndexHarness(FuzzedDataProvider& in);
  ClusterIndexHarness(const ClusterIndexHarness&) = delete;
  ClusterIndexHarness& operator=(const ClusterIndexHarness&) = delete;

  // One call and its checks; with HKV_FUZZ_TRACE set, prints the call.
  void Step();
  // Aborts, printing the configuration and the calls so far, unless `ok`.
  void Check(bool ok, const std::string& promise) const;

 private:
  void Call();
  void ApplyBatchStep(bool encoded);
  void ApplyStep();
  void ClearStep();
  void ReplayCompletedStep();
  void MatchStep();
  void MatchKeysStep();

  std::uint32_t DrawInstance();
  std::uint64_t DrawSequence(std::uint32_t instance);
  std::vector<BlockHash> DrawHashes();
  GroupId DrawGroup(EventTally& tally);
  std::vector<KvEvent> DrawEvents(EventTally& tally);
  std::string DrawBatch(bool encoded, EventTally& tally);
  std::vector<TokenId> DrawTokens();

  std::vector<InstanceView> Snapshot() const;
  // What holds after any call.
  void CheckAlways(std::span<const InstanceView> before,
                   std::span<const InstanceView> after) const;
  void CheckAnswers(std::span<const InstanceMatch> matches,
                    std::uint32_t num_tokens) const;
  void CheckMatch(const InstanceMatch& match, std::uint32_t num_tokens) const;
  void CheckOthersAlone(std::uint32_t instance,
                        std::span<const InstanceView> before,
                        std::span<const InstanceView> after) const;
  void CheckCleared(const InstanceView& view) const;
  // ApplyBatch's outcome, counters, expected sequence and answers.
  void CheckOutcome(const BatchCall& call, const InstanceView& before,
                    const InstanceView& after) const;
  // Apply of events `tally` describes; refused, it changed nothing.
  void CheckApply(std::uint32_t instance, const EventTally& tally,
                  std::span<const InstanceView> before,
                  std::span<const InstanceView> after) const;
  void CheckReplayCompleted(std::uint32_t instance,
                            std::span<const InstanceView> before,
                            std::span<const InstanceView> after) const;
  void CheckClear(std::uint32_t instance, std::span<const InstanceView> before,
                  std::span<const InstanceView> after) const;

  FuzzedDataProvider& in_;
  std::uint32_t num_instances_ = 2;
  std::uint32_t capacity_ = 8;
  HashEncoding hashes_ = HashEncoding::kBytes;
  std::unique_ptr<ClusterIndex> index_;
  std::string log_;  // the configuration and the calls so far
  bool trace_ = std::getenv("HKV_FUZZ_TRACE") != nullptr;
};

}  // namespace hkv::fuzz
