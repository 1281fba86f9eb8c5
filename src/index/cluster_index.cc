#include "hkv/cluster_index.h"

#include <algorithm>
#include <string>
#include <variant>

#include "cache/residency_mirror.h"
#include "check.h"
#include "hkv/limits.h"
#include "hkv/request.h"
#include "text.h"

namespace hkv {
namespace {

constexpr std::uint32_t kMaxInstances = 4096;

using internal::Cat;
using internal::ResidencyMirror;

struct Instance {
  std::unique_ptr<ResidencyMirror> mirror;
  // How its stream encodes hashes; unset until a batch says (auto).
  std::optional<HashEncoding> hashes;
  std::optional<std::uint64_t> expected;  // next sequence number
  // Cleared after frames may have been lost: the next batch, whatever its
  // number, starts the stream again.
  bool resync = false;
  // While set, the instance claims nothing: its state may lack removals
  // (a gap not yet filled); released once a batch numbered at least this
  // is applied.
  std::optional<std::uint64_t> held_until;
  // Set by a replay from the stream's start (never heard, or resynced):
  // the instance claims nothing until a replay runs to the publisher's
  // latest batch, since a batch no replay can bring (a frame over the
  // limit) may remove what the replayed ones stored.
  bool catching_up = false;
  InstanceCounters counters;
};

}  // namespace

struct ClusterIndex::Impl {
  ClusterIndexOptions options;
  KeyScheme scheme;
  std::vector<Instance> instances;

  // The key as the index holds it. The low 64 bits are the digest's last 8
  // bytes (where DecodeEventBatch puts them, the rest zero); they are
  // copied to the first 8 too, where the mirror's hash table reads a key's
  // hash. Idempotent, so wire and in-process events agree.
  BlockHash OnWire(const BlockHash& hash,
                   std::optional<HashEncoding> hashes) const {
    if (hashes != HashEncoding::kLow64) return hash;
    const auto end = static_cast<std::ptrdiff_t>(DigestSize(scheme.function));
    BlockHash low{};
    std::copy(hash.bytes.begin() + end - 8, hash.bytes.begin() + end,
              low.bytes.begin() + end - 8);
    std::copy(hash.bytes.begin() + end - 8, hash.bytes.begin() + end,
              low.bytes.begin());
    return low;
  }

  // Forgets what the instance holds (and, when streams say their own
  // encoding, which one its stream uses: a restarted engine may change it).
  // A hold stays: clearing does not bring the stream to where it was.
  void Clear(Instance& instance) {
    ClearKeys(instance);
    instance.hashes = options.hashes;
  }

  // Forgets the keys only: an AllBlocksCleared, after which the same
  // stream (the rest of its batch included) goes on in its encoding.
  void ClearKeys(Instance& instance) {
    instance.mirror->Clear();
    ++instance.counters.clears;
  }

  Result<void> Apply(Instance& instance, std::span<const KvEvent> events) {
    const std::uint32_t num_groups = instance.mirror->num_groups();
    for (const KvEvent& event : events) {
      const GroupId* group = nullptr;
      if (const auto* stored = std::get_if<BlockStored>(&event)) {
        group = &stored->group;
      } else if (const auto* removed = std::get_if<BlockRemoved>(&event)) {
        group = &removed->group;
      }
      if (group != nullptr && ToIndex(*group) >= num_groups) {
        return Fail(ErrorCode::kInvalidArgument,
                    Cat("an event names group ", ToIndex(*group),
                        " but instances have ", num_groups, " groups"));
      }
    }
    InstanceCounters& counters = instance.counters;
    for (const KvEvent& event : events) {
      if (const auto* stored = std::get_if<BlockStored>(&event)) {
        for (const BlockHash& hash : stored->block_hashes) {
          instance.mirror->Store(
              {.hash = OnWire(hash, instance.hashes), .group = stored->group});
        }
        counters.stored_keys += stored->block_hashes.size();
      } else if (const auto* removed = std::get_if<BlockRemoved>(&event)) {
        for (const BlockHash& hash : removed->block_hashes) {
          const bool held = instance.mirror->Remove(
              {.hash = OnWire(hash, instance.hashes), .group = removed->group});
          ++(held ? counters.removed_keys : counters.unknown_removals);
        }
      } else {
        ClearKeys(instance);
      }
    }
    counters.evicted_keys = instance.mirror->evicted_keys();
    return {};
  }

  // Decodes `batch` in the instance's hash encoding; while that is not
  // known, in whichever of the two reads it, and the first batch that
  // carries a hash fixes the encoding.
  Result<DecodedBatch> DecodeFor(Instance& instance, std::string_view batch) {
    if (instance.hashes) {
      return DecodeEventBatch(batch, scheme.function, *instance.hashes);
    }
    Result<DecodedBatch> bytes =
        DecodeEventBatch(batch, scheme.function, HashEncoding::kBytes);
    Result<DecodedBatch> decoded =
        bytes ? std::move(bytes)
              : DecodeEventBatch(batch, scheme.function, HashEncoding::kLow64);
    if (!decoded) return bytes;  // the bytes reading's error
    const bool carries = std::any_of(
        decoded->events.begin(), decoded->events.end(), [](const KvEvent& e) {
          if (const auto* s = std::get_if<BlockStored>(&e))
            return !s->block_hashes.empty();
          if (const auto* r = std::get_if<BlockRemoved>(&e))
            return !r->block_hashes.empty();
          return false;
        });
    if (carries) {
      instance.hashes = bytes ? HashEncoding::kBytes : HashEncoding::kLow64;
    }
    return decoded;
  }

  // Decodes and applies one batch numbered `sequence`, which is expected.
  BatchOutcome Decode(Instance& instance, std::uint64_t sequence,
                      std::string_view batch, BatchOutcome success,
                      Error* error) {
    instance.expected = sequence + 1;
    if (instance.held_until && sequence >= *instance.held_until) {
      instance.held_until.reset();
    }
    Result<DecodedBatch> decoded = DecodeFor(instance, batch);
    Result<void> applied =
        decoded ? Apply(instance, decoded->events) : Result<void>();
    if (!decoded || !applied) {
      if (error != nullptr)
        *error = decoded ? applied.error() : decoded.error();
      // What the batch removed is unknown: forget everything.
      Clear(instance);
      ++instance.counters.rejected;
      return BatchOutcome::kRejected;
    }
    ++instance.counters.batches;
    return success;
  }
};

ClusterIndex::ClusterIndex(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
ClusterIndex::~ClusterIndex() = default;

Result<std::unique_ptr<ClusterIndex>> ClusterIndex::Create(
    const ClusterIndexOptions& options, std::uint32_t num_instances) {
  if (Result<void> valid = options.instance_config.Validate(); !valid) {
    return Fail(ErrorCode::kInvalidArgument,
                "instance_config: " + valid.error().message);
  }
  if (options.instance_config.keys.function == KeyFunction::kXxh3_128Cbor &&
      !options.instance_config.keys.seed) {
    return Fail(ErrorCode::kInvalidArgument,
                "instance_config.keys: xxh3_128_cbor keys need the engines' "
                "shared seed (KeySchemeOptions::seed); unset, each scheme "
                "draws its own and nothing would match");
  }
  if (options.capacity_keys < 1 || options.capacity_keys >= kMaxPoolBlocks) {
    return Fail(ErrorCode::kInvalidArgument,
                Cat("capacity_keys must be 1 to 2^24 - 1, got ",
                    options.capacity_keys));
  }
  if (num_instances < 1 || num_instances > kMaxInstances) {
    return Fail(
        ErrorCode::kInvalidArgument,
        Cat("an index covers 1 to 4096 instances, got ", num_instances));
  }
  Result<KeyScheme> scheme = MakeKeyScheme(options.instance_config.keys);
  if (!scheme) return tl::unexpected(scheme.error());
  auto impl = std::make_unique<Impl>(
      Impl{.options = options, .scheme = *scheme, .instances = {}});
  impl->instances.resize(num_instances);
  for (Instance& instance : impl->instances) {
    instance.mirror = std::make_unique<ResidencyMirror>(options.instance_config,
                                                        options.capacity_keys);
    instance.hashes = options.hashes;
  }
  return std::unique_ptr<ClusterIndex>(new ClusterIndex(std::move(impl)));
}

std::uint32_t ClusterIndex::num_instances() const {
  return static_cast<std::uint32_t>(impl_->instances.size());
}

std::uint32_t ClusterIndex::num_groups() const {
  return impl_->instances[0].mirror->num_groups();
}

const KeyScheme& ClusterIndex::key_scheme() const { return impl_->scheme; }

Result<void> ClusterIndex::Apply(std::uint32_t instance,
                                 std::span<const KvEvent> events) {
  HKV_REQUIRE(instance < num_instances(), "no such instance");
  return impl_->Apply(impl_->instances[instance], events);
}

BatchOutcome ClusterIndex::ApplyBatch(std::uint32_t instance,
                                      std::uint64_t sequence,
                                      std::string_view batch,
                                      BatchSource source, Error* error) {
  HKV_REQUIRE(instance < num_instances(), "no such instance");
  Instance& state = impl_->instances[instance];
  InstanceCounters& counters = state.counters;
  if (source == BatchSource::kReplay && (state.resync || !state.expected)) {
    state.catching_up = true;
  }
  if (state.resync) {
    state.resync = false;
    return impl_->Decode(state, sequence, batch, BatchOutcome::kApplied, error);
  }
  const std::uint64_t expected = state.expected.value_or(0);
  if (sequence == expected) {
    return impl_->Decode(state, sequence, batch, BatchOutcome::kApplied, error);
  }
  if (source == BatchSource::kReplay) {
    if (sequence < expected) {
      ++counters.duplicates;
      return BatchOutcome::kDuplicate;
    }
    // The history no longer holds what lies between.
    impl_->Clear(state);
    ++counters.history_lost;
    return impl_->Decode(state, sequence, batch, BatchOutcome::kHistoryLost,
                         error);
  }
  if (sequence < expected) {
    // A restarted publisher numbering again, or a late frame of this
    // stream: they cannot be told apart, and after a late one the state
    // would lack what later batches removed. Claim nothing until the
    // stream is past where it was (a restart's dropped connection resyncs
    // the instance sooner).
    const std::uint64_t reached =
        std::max({expected - 1, sequence, state.held_until.value_or(0)});
    impl_->Clear(state);
    ++counters.restarts;
    state.expected = 0;
    state.held_until = reached;
    if (sequence == 0) {
      return impl_->Decode(state, sequence, batch, BatchOutcome::kRestarted,
                           error);
    }
    ++counters.gaps;
    return BatchOutcome::kGap;
  }
  ++counters.gaps;
  if (!state.expected) state.expected = 0;
  state.held_until = std::max(sequence, state.held_until.value_or(0));
  return BatchOutcome::kGap;
}

bool ClusterIndex::held(std::uint32_t instance) const {
  HKV_REQUIRE(instance < num_instances(), "no such instance");
  const Instance& state = impl_->instances[instance];
  return state.held_until.has_value() || state.catching_up;
}

std::optional<std::uint64_t> ClusterIndex::expected_sequence(
    std::uint32_t instance) const {
  HKV_REQUIRE(instance < num_instances(), "no such instance");
  return impl_->instances[instance].expected;
}

void ClusterIndex::Clear(std::uint32_t instance) {
  HKV_REQUIRE(instance < num_instances(), "no such instance");
  impl_->Clear(impl_->instances[instance]);
  impl_->instances[instance].held_until.reset();
  impl_->instances[instance].catching_up = false;
  impl_->instances[instance].expected.reset();
  impl_->instances[instance].resync = false;
}

void ClusterIndex::ReplayCompleted(std::uint32_t instance) {
  HKV_REQUIRE(instance < num_instances(), "no such instance");
  impl_->instances[instance].catching_up = false;
}

void ClusterIndex::Resync(std::uint32_t instance) {
  HKV_REQUIRE(instance < num_instances(), "no such instance");
  impl_->Clear(impl_->instances[instance]);
  impl_->instances[instance].held_until.reset();
  impl_->instances[instance].catching_up = false;
  impl_->instances[instance].expected.reset();
  impl_->instances[instance].resync = true;
}

std::vector<InstanceMatch> ClusterIndex::Match(
    std::span<const TokenId> tokens) const {
  const Request request({}, tokens, impl_->scheme);
  return *MatchKeys(request.keys(), request.num_tokens());
}

Result<std::vector<InstanceMatch>> ClusterIndex::MatchKeys(
    std::span<const BlockHash> keys, std::uint32_t num_tokens) const {
  const std::uint32_t unit = impl_->scheme.hash_unit;
  if (keys.size() != num_tokens / unit) {
    return Fail(ErrorCode::kInvalidArgument,
                Cat("a prompt of ", num_tokens, " tokens has ",
                    num_tokens / unit, " unit keys, got ", keys.size()));
  }
  // As the engine looks a prompt up: never the whole of it.
  const std::uint32_t n =
      std::min(num_tokens, impl_->options.instance_config.max_model_len);
  const std::uint32_t max_tokens = n > 0 ? n - 1 : 0;
  // The keys as low-64 streams hold them, made once if some stream is one.
  std::vector<BlockHash> low64;
  for (const Instance& instance : impl_->instances) {
    if (instance.hashes != HashEncoding::kLow64 || !low64.empty()) continue;
    low64.reserve(keys.size());
    for (const BlockHash& key : keys)
      low64.push_back(impl_->OnWire(key, HashEncoding::kLow64));
  }
  std::vector<InstanceMatch> matches;
  matches.reserve(impl_->instances.size());
  for (const Instance& instance : impl_->instances) {
    // It may lack removals: claim nothing.
    if (instance.held_until || instance.catching_up) {
      matches.push_back({});
      continue;
    }
    const CacheHit hit = instance.mirror->FindLongestHit(
        instance.hashes == HashEncoding::kLow64 ? low64 : keys, max_tokens);
    matches.push_back({.hybrid_tokens = hit.num_tokens,
                       .attention_tokens = hit.chain_tokens});
  }
  return matches;
}

std::vector<std::uint64_t> ClusterIndex::ResidentKeys(
    std::uint32_t instance) const {
  HKV_REQUIRE(instance < num_instances(), "no such instance");
  return impl_->instances[instance].mirror->keys_per_group();
}

const InstanceCounters& ClusterIndex::counters(std::uint32_t instance) const {
  HKV_REQUIRE(instance < num_instances(), "no such instance");
  return impl_->instances[instance].counters;
}

std::size_t ClusterIndex::MemoryBytes() const {
  std::size_t bytes = 0;
  for (const Instance& instance : impl_->instances) {
    bytes += instance.mirror->MemoryBytes();
  }
  return bytes;
}

}  // namespace hkv
