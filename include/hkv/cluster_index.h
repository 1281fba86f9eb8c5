// A cluster's prefix index, fed by its engines' KV events: per instance and
// group, the keys the engine's cache holds, and per query the prefix each
// instance could resume from by the cache manager's own rules (the same
// group managers and coordinator, not a copy): the hybrid-correct prefix
// every group can resume from, and full attention's chain beside it, which
// is what a router that scores attention overlap alone counts.
//
// The index never claims more than an instance holds, provided it saw every
// removal: keys past the capacity are forgotten least recently stored first,
// a batch that cannot be read, an engine restart or a gap replay cannot
// fill clears the instance, and from a gap's discovery until it is filled
// the instance claims nothing (docs/cluster.md). Forgetting only shortens
// answers. Engines must publish incremental reports
// (EventReport::kIncremental): a kFull re-announcement of a reused hit is
// counted as one more copy that no removal matches.
//
// Thread-compatible: callers serialize every call.
//
// Example:
//   auto index = ClusterIndex::Create({.instance_config = config}, 2);
//   index->ApplyBatch(0, seq, batch_bytes, BatchSource::kLive);
//   for (const InstanceMatch& m : index->Match(tokens)) ...
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "hkv/cache_config.h"
#include "hkv/event_publisher.h"
#include "hkv/events.h"
#include "hkv/keys.h"
#include "hkv/result.h"
#include "hkv/types.h"

namespace hkv {

struct ClusterIndexOptions {
  // Every instance's cache layout: groups, block sizes, keys, draft,
  // retention. Its block count and pools are not used.
  CacheConfig instance_config = {};
  // Keys kept per instance, all groups together (about 100 bytes each):
  // 1 to 2^24 - 1. Past it the least recently stored key is forgotten.
  std::uint32_t capacity_keys = 1'000'000;
  // How the engines put hashes on the wire (EventPublisherOptions::hashes).
  // Unset (default): each instance's stream says, by its first batch that
  // carries a block hash (the digest's bytes, or an integer: the low 64
  // bits, the reference engine's default); a later batch of the other
  // encoding is rejected like any malformed batch, which forgets the
  // instance, and the stream's next batch with a hash decides again.
  std::optional<HashEncoding> hashes = std::nullopt;
};

// One instance's answer to a query, in tokens.
struct InstanceMatch {
  std::uint32_t hybrid_tokens = 0;     // every group can resume here
  std::uint32_t attention_tokens = 0;  // full attention's cached chain
  friend bool operator==(const InstanceMatch&, const InstanceMatch&) = default;
};

// Where a batch came from: the live PUB stream, or an answer to a replay
// request (which may repeat batches already applied).
enum class BatchSource { kLive, kReplay };

// What ApplyBatch did with one batch.
enum class BatchOutcome {
  kApplied,
  // Already applied (a replay repeating it): ignored.
  kDuplicate,
  // Live, past the next expected number: not applied. Ask the replay
  // socket for expected_sequence() onwards. Until a batch numbered at least
  // this one is applied (the replay filled the gap) the instance is held:
  // it claims nothing, since the missing batches may have removed keys.
  kGap,
  // Live, numbered 0 below the next expected number: the engine restarted,
  // or a late frame (the two cannot be told apart). The instance was
  // cleared, then the batch applied; it stays held until a batch numbered
  // at least the highest it had applied is, or a Resync (which a
  // restart's dropped connection brings). (Past 0 the instance is cleared
  // and held too and the outcome is kGap, to replay from 0.)
  kRestarted,
  // A replay could not fill the gap (history lost): the instance was
  // cleared, then the batch applied.
  kHistoryLost,
  // Unreadable (malformed or truncated msgpack, an unknown tag, a group
  // the layout lacks): the instance was cleared, the batch counted; a
  // hold past its number stays.
  kRejected,
};

struct InstanceCounters {
  std::uint64_t batches = 0;  // applied
  std::uint64_t stored_keys = 0;
  std::uint64_t removed_keys = 0;
  std::uint64_t unknown_removals = 0;  // keys removed that were not held
  std::uint64_t evicted_keys = 0;      // forgotten past the capacity
  std::uint64_t clears = 0;            // AllBlocksCleared and forced clears
  std::uint64_t duplicates = 0;
  std::uint64_t gaps = 0;
  std::uint64_t restarts = 0;
  std::uint64_t history_lost = 0;
  std::uint64_t rejected = 0;
};

class ClusterIndex {
 public:
  // kInvalidArgument naming the problem: a config that does not validate,
  // xxh3 keys without a seed (the engines' must be shared), a capacity out
  // of range, no instance or more than 4096.
  [[nodiscard]] static Result<std::unique_ptr<ClusterIndex>> Create(
      const ClusterIndexOptions& options, std::uint32_t num_instances);
  ~ClusterIndex();
  ClusterIndex(const ClusterIndex&) = delete;
  ClusterIndex& operator=(const ClusterIndex&) = delete;

  std::uint32_t num_instances() const;
  std::uint32_t num_groups() const;
  const KeyScheme& key_scheme() const;

  // Applies an instance's events in order. kInvalidArgument, nothing
  // applied, when an event names a group the layout lacks. REQUIRES
  // (UsageError): instance < num_instances().
  [[nodiscard]] Result<void> Apply(std::uint32_t instance,
                                   std::span<const KvEvent> events);
  // Decodes one PUB message's batch and applies it by its sequence number
  // (see BatchOutcome); `error` receives why a batch was rejected.
  BatchOutcome ApplyBatch(std::uint32_t instance, std::uint64_t sequence,
                          std::string_view batch, BatchSource source,
                          Error* error = nullptr);
  // The sequence number the instance's next batch should carry; none before
  // its first.
  std::optional<std::uint64_t> expected_sequence(std::uint32_t instance) const;
  // Forgets everything the instance holds (a dropped subscription).
  void Clear(std::uint32_t instance);
  // Forgets everything the instance holds, and takes its next batch,
  // whatever its number, as the stream's start: for when batches may have
  // been lost that no replay can bring back (a link dropped on a frame over
  // its limit). Nothing is claimed until that batch, and only what batches
  // from it store; expected_sequence() is unset meanwhile (a replay from 0
  // may bring the stream back: its first batch is that start).
  void Resync(std::uint32_t instance);
  // A replay of the instance's history ran to the publisher's latest batch:
  // ends the hold a replay from the stream's start puts on it (below).
  void ReplayCompleted(std::uint32_t instance);
  // Whether the instance is held, so that it claims nothing: a gap found
  // and not yet filled (kGap), or a replay applied from the stream's start
  // (the instance never heard, or resynced) and none completed since (a
  // batch no replay brings, a frame over its limit, may remove what the
  // replayed ones stored).
  bool held(std::uint32_t instance) const;

  // Per instance, what a prompt of these tokens (and no extra keys) would
  // resume: at most all but its last token, as an engine looks a prompt up.
  // REQUIRES (UsageError): at most kMaxTokensPerRequest tokens.
  std::vector<InstanceMatch> Match(std::span<const TokenId> tokens) const;
  // The same from the prompt's unit keys (Request::keys(), in the key
  // scheme's digests) and its length. kInvalidArgument unless there are
  // num_tokens / hash_unit keys.
  [[nodiscard]] Result<std::vector<InstanceMatch>> MatchKeys(
      std::span<const BlockHash> keys, std::uint32_t num_tokens) const;

  // Keys held per group.
  std::vector<std::uint64_t> ResidentKeys(std::uint32_t instance) const;
  const InstanceCounters& counters(std::uint32_t instance) const;
  // Bytes of every instance's tables.
  std::size_t MemoryBytes() const;

 private:
  struct Impl;
  explicit ClusterIndex(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hkv
