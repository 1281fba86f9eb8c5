// The ClusterIndex fuzzer's configuration, probe prompts and the values
// its calls draw (cluster_index_harness.h).
#include "cluster_index_harness.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <utility>

#include "fuzz_check.h"
#include "hkv/event_publisher.h"
#include "hkv/request.h"

namespace hkv::fuzz {
namespace {

// Full attention beside a recurrent group, 16 tokens a block and a key,
// SHA-256 keys.
CacheConfig Layout() {
  return {
      .groups = {{.kind = GroupKind::kFullAttention, .block_size = kIndexUnit},
                 {.kind = GroupKind::kRecurrent, .block_size = kIndexUnit}},
      .num_blocks = 64,
      .keys = {.hash_unit = kIndexUnit}};
}

}  // namespace

const ProbePrompts& Probes() {
  static const ProbePrompts prompts = [] {
    ProbePrompts p;
    for (TokenId t = 0; t < kProbeTokens; ++t) {
      p.a.push_back(t);
      p.b.push_back(t < 3 * kIndexUnit ? t : 1000 + t);
    }
    const KeyScheme scheme = *MakeKeyScheme(Layout().keys);
    const Request a({}, p.a, scheme);
    const Request b({}, p.b, scheme);
    p.a_keys.assign(a.keys().begin(), a.keys().end());
    p.b_keys.assign(b.keys().begin(), b.keys().end());
    return p;
  }();
  return prompts;
}

ClusterIndexHarness::ClusterIndexHarness(FuzzedDataProvider& in) : in_(in) {
  num_instances_ = in_.ConsumeBool() ? 3 : 2;
  capacity_ = in_.ConsumeIntegralInRange<std::uint32_t>(8, 64);
  hashes_ = in_.ConsumeBool() ? HashEncoding::kLow64 : HashEncoding::kBytes;
  log_ = std::to_string(num_instances_) + " instances, capacity " +
         std::to_string(capacity_) +
         (hashes_ == HashEncoding::kLow64 ? ", low64" : ", bytes") + "\n";
  if (trace_) std::fputs(log_.c_str(), stderr);
  Result<std::unique_ptr<ClusterIndex>> created =
      ClusterIndex::Create({.instance_config = Layout(),
                            .capacity_keys = capacity_,
                            .hashes = hashes_},
                           num_instances_);
  Check(created.has_value(), "ClusterIndex::Create accepts the layout");
  index_ = std::move(*created);
}

void ClusterIndexHarness::Check(bool ok, const std::string& promise) const {
  if (ok) return;
  std::fprintf(stderr, "cluster_index: %s%s", log_.c_str(),
               log_.ends_with('\n') ? "" : "\n");
  Require(false, promise);
}

void ClusterIndexHarness::Step() {
  const std::size_t logged = log_.size();
  Call();
  if (trace_) std::fputs(log_.c_str() + logged, stderr);
}

void ClusterIndexHarness::Call() {
  switch (in_.ConsumeIntegralInRange(0, 8)) {
    case 0:
    case 1:
      return ApplyBatchStep(true);
    case 2:
      return ApplyBatchStep(false);
    case 3:
    case 4:
      return ApplyStep();
    case 5:
      return ClearStep();
    case 6:
      return MatchStep();
    case 7:
      return ReplayCompletedStep();
    default:
      return MatchKeysStep();
  }
}

std::uint32_t ClusterIndexHarness::DrawInstance() {
  return in_.ConsumeIntegralInRange<std::uint32_t>(0, num_instances_ - 1);
}

std::uint64_t ClusterIndexHarness::DrawSequence(std::uint32_t instance) {
  const std::uint64_t next = index_->expected_sequence(instance).value_or(0);
  switch (in_.ConsumeIntegralInRange(0, 5)) {
    case 0:
    case 1:
      return next;
    case 2:
      return next + in_.ConsumeIntegralInRange<std::uint64_t>(1, 3);
    case 3:
      return next -
             std::min(next, in_.ConsumeIntegralInRange<std::uint64_t>(1, 3));
    case 4:
      return 0;
    default:
      return in_.ConsumeIntegral<std::uint64_t>();
  }
}

// A run of a probe prompt's keys, one of them, a key of neither (one byte
// at each end, so the low 64 bits differ too) or none.
std::vector<BlockHash> ClusterIndexHarness::DrawHashes() {
  const ProbePrompts& pool = Probes();
  const std::vector<BlockHash>& keys =
      in_.ConsumeBool() ? pool.b_keys : pool.a_keys;
  switch (in_.ConsumeIntegralInRange(0, 4)) {
    case 0:
    case 1: {
      const auto start =
          in_.ConsumeIntegralInRange<std::size_t>(0, kProbeUnits - 1);
      const auto count =
          in_.ConsumeIntegralInRange<std::size_t>(1, kProbeUnits - start);
      const auto first = keys.begin() + static_cast<std::ptrdiff_t>(start);
      return {first, first + static_cast<std::ptrdiff_t>(count)};
    }
    case 2:
      return {
          keys[in_.ConsumeIntegralInRange<std::size_t>(0, kProbeUnits - 1)]};
    case 3: {
      BlockHash key;
      key.bytes.front() = key.bytes.back() =
          in_.ConsumeIntegral<std::uint8_t>();
      return {key};
    }
    default:
      return {};
  }
}

GroupId ClusterIndexHarness::DrawGroup(EventTally& tally) {
  const auto pick = in_.ConsumeIntegralInRange<std::uint32_t>(0, 15);
  if (pick < 14) return GroupId{pick % 2};
  tally.groups_ok = false;
  return GroupId{
      pick == 14 ? 2U
                 : in_.ConsumeIntegralInRange<std::uint32_t>(2, UINT32_MAX)};
}

std::vector<KvEvent> ClusterIndexHarness::DrawEvents(EventTally& tally) {
  std::vector<KvEvent> events;
  const int count = in_.ConsumeIntegralInRange(0, 4);
  for (int e = 0; e < count; ++e) {
    const int kind = in_.ConsumeIntegralInRange(0, 5);
    if (kind == 5) {
      events.emplace_back(AllBlocksCleared{});
      ++tally.clears;
      continue;
    }
    std::vector<BlockHash> hashes = DrawHashes();
    const GroupId group = DrawGroup(tally);
    if (kind < 3) {
      tally.stored += hashes.size();
      events.emplace_back(BlockStored{.block_hashes = std::move(hashes),
                                      .block_size = kIndexUnit,
                                      .group = group});
    } else {
      tally.removed += hashes.size();
      events.emplace_back(
          BlockRemoved{.block_hashes = std::move(hashes), .group = group});
    }
  }
  return events;
}

// Raw bytes, or events encoded with the index's hash encoding (now and then
// the other one, or cut short).
std::string ClusterIndexHarness::DrawBatch(bool encoded, EventTally& tally) {
  if (!encoded) {
    tally.known = false;
    return in_.ConsumeRandomLengthString(512);
  }
  const std::vector<KvEvent> events = DrawEvents(tally);
  HashEncoding encoding = hashes_;
  if (in_.ConsumeIntegralInRange(0, 7) == 7) {
    encoding = hashes_ == HashEncoding::kBytes ? HashEncoding::kLow64
                                               : HashEncoding::kBytes;
    tally.known = false;
  }
  const auto timestamp =
      static_cast<double>(in_.ConsumeIntegral<std::uint16_t>());
  std::string batch =
      EncodeEventBatch(events, timestamp, in_.ConsumeIntegralInRange(0U, 3U),
                       KeyFunction::kSha256Cbor, encoding);
  if (in_.ConsumeIntegralInRange(0, 7) == 7) {
    const auto keep = in_.ConsumeIntegralInRange<std::size_t>(0, batch.size());
    if (keep < batch.size()) {
      batch.resize(keep);
      tally.truncated = true;
    }
  }
  return batch;
}

std::vector<InstanceView> ClusterIndexHarness::Snapshot() const {
  const ProbePrompts& pool = Probes();
  const std::vector<InstanceMatch> a = index_->Match(pool.a);
  const std::vector<InstanceMatch> b = index_->Match(pool.b);
  std::vector<InstanceView> views;
  for (std::uint32_t i = 0; i < num_instances_; ++i) {
    views.push_back({.a = a[i],
                     .b = b[i],
                     .resident = index_->ResidentKeys(i),
                     .counters = index_->counters(i),
                     .expected = index_->expected_sequence(i),
                     .held = index_->held(i)});
  }
  return views;
}

// A prefix of a probe prompt, with or without tokens of neither after it,
// or tokens of neither alone.
std::vector<TokenId> ClusterIndexHarness::DrawTokens() {
  const ProbePrompts& pool = Probes();
  const int mode = in_.ConsumeIntegralInRange(0, 3);
  std::vector<TokenId> tokens;
  if (mode < 3) {
    const std::vector<TokenId>& prompt = mode == 1 ? pool.b : pool.a;
    const auto length =
        in_.ConsumeIntegralInRange<std::size_t>(0, prompt.size());
    tokens.assign(prompt.begin(),
                  prompt.begin() + static_cast<std::ptrdiff_t>(length));
  }
  if (mode >= 2) {
    const int count = in_.ConsumeIntegralInRange(0, 48);
    for (int t = 0; t < count; ++t) {
      tokens.push_back(in_.ConsumeIntegral<std::uint8_t>());
    }
  }
  return tokens;
}

}  // namespace hkv::fuzz
