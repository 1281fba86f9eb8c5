// KV events on the wire: batches of the cache's events (hkv/events.h) in the
// reference system's format (spec §6.1; docs/events.md), published on a
// ZeroMQ PUB socket with a topic and a sequence number per batch, and
// replayed from a bounded history on a ROUTER socket, as the reference
// engine's publisher does.
//
// A batch is the msgpack array [ts, [event, ...], data_parallel_rank]; an
// event is a tagged array ["BlockStored", block_hashes, parent_block_hash,
// token_ids, block_size, lora_id, medium, lora_name, extra_keys, group_idx,
// kv_cache_spec_kind, kv_cache_spec_sliding_window, locality, ownership,
// session_id, skipped_parent_block_hash, skipped_token_ids,
// skipped_extra_keys], ["BlockRemoved", block_hashes, medium, group_idx] or
// ["AllBlocksCleared"]. Fields through group_idx are always there (nil when
// unset); those after it are left off from the last one set. Each PUB message
// has three frames: the topic, the sequence number (8 bytes, big-endian,
// from 0) and the batch. A replay request on the ROUTER socket is the
// starting sequence number (8 bytes, big-endian) after an empty delimiter
// frame; the answer is every kept batch from there as [seq, batch] frame
// pairs, then [-1 (8 bytes), empty].
//
// Publish never blocks: batches wait in a bounded queue for the publisher's
// thread; a full queue drops its oldest and counts it. Sequence numbers are
// given as batches are queued, so a dropped batch leaves a gap that a
// subscriber sees (and that replay cannot fill). The batch's ts is always a
// float64.
//
// Thread-safety: every member may be called from any thread.
//
// Example:
//   auto publisher =
//       EventPublisher::Create({.endpoint = "tcp://127.0.0.1:5557"});
//   publisher.value()->Publish(cache.TakeEvents(), seconds_since_epoch);
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/events.h"
#include "hkv/keys.h"
#include "hkv/result.h"

namespace hkv {

// How block hashes go on the wire: the digest's bytes, or (the reference's
// option) the low 64 bits of its big-endian integer value.
enum class HashEncoding { kBytes, kLow64 };

struct EventPublisherOptions {
  // Bound by the publisher. "tcp://127.0.0.1:*" takes a free port:
  // endpoint() says which.
  // Loopback: KV events reveal which prompts an engine caches; bind a
  // private interface (or "tcp://*:5557", the reference engine's default)
  // to reach subscribers on other hosts.
  std::string endpoint = "tcp://127.0.0.1:5557";
  // Bound too when set: the replay socket.
  std::optional<std::string> replay_endpoint = std::nullopt;
  std::string topic = "";
  std::uint32_t data_parallel_rank = 0;
  // The cache's key function: its digest length is the bytes sent.
  KeyFunction key_function = KeyFunction::kSha256Cbor;
  HashEncoding hashes = HashEncoding::kBytes;
  // Batches kept for replay, and batches waiting for the socket: 1 to 2^24.
  std::size_t replay_batches = 10'000;
  std::size_t queue_batches = 100'000;
};

struct PublisherCounters {
  std::uint64_t published = 0;  // batches sent
  std::uint64_t dropped = 0;    // batches the full queue dropped
  std::uint64_t replay_requests = 0;
  std::uint64_t bad_replay_requests = 0;  // malformed, ignored
  // Sends or receives that failed (or ran out of memory): each lost batch
  // leaves a gap replay cannot fill.
  std::uint64_t socket_errors = 0;
};

class EventPublisher {
 public:
  // Binds the sockets and starts the publisher's thread. kInvalidArgument
  // naming the option for a bad count, or the endpoint when it is malformed
  // or of an unknown transport; kIoError naming the endpoint when it cannot
  // be bound (in use, no such address).
  [[nodiscard]] static Result<std::unique_ptr<EventPublisher>> Create(
      const EventPublisherOptions& options);
  // Sends what is queued (waiting up to a second), then closes.
  ~EventPublisher();
  EventPublisher(const EventPublisher&) = delete;
  EventPublisher& operator=(const EventPublisher&) = delete;

  // The endpoints as bound (a wildcard port resolved).
  std::string endpoint() const;
  std::optional<std::string> replay_endpoint() const;

  // Queues one batch stamped `timestamp_s` (seconds; the engine's clock).
  // Never blocks; the oldest queued batch is dropped when the queue is full.
  void Publish(std::vector<KvEvent> events, double timestamp_s);
  // Waits until every batch queued so far was sent or dropped, at most
  // `timeout`; returns whether it was.
  bool Flush(std::chrono::milliseconds timeout);
  PublisherCounters counters() const;

 private:
  struct Impl;
  explicit EventPublisher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One batch as the publisher sends it (the message's third frame).
std::string EncodeEventBatch(std::span<const KvEvent> events,
                             double timestamp_s,
                             std::uint32_t data_parallel_rank,
                             KeyFunction key_function, HashEncoding hashes);

struct DecodedBatch {
  double timestamp_s = 0.0;
  std::vector<KvEvent> events = {};
  std::uint32_t data_parallel_rank = 0;
};

// A batch read back by the layout above, from the reference or from hkv:
// a whole-number ts, nil medium ("") and fields past the ones hkv keeps
// (locality, ownership, session_id: any value) are accepted. Hashes of
// `hashes` encoding: DigestSize(key_function) bytes, or 64-bit integers
// (placed in the digest's last 8 bytes, the rest zero). Nil extra_keys
// give one empty entry per hash. kCorruption naming what is wrong
// (truncated or malformed msgpack, an unknown event tag, a field of the
// wrong type or range, a hash of the wrong size, too many fields, bytes
// after the batch); sizes beyond kMaxEventBatchBytes are refused before
// parsing.
[[nodiscard]] Result<DecodedBatch> DecodeEventBatch(std::string_view bytes,
                                                    KeyFunction key_function,
                                                    HashEncoding hashes);

// The largest batch DecodeEventBatch reads: 16 MiB. Bounded, not small: a
// parse holds about 24 bytes per msgpack value and the decoded events up
// to about 48 bytes per input byte (an extra key per 1-byte string), so a
// hostile batch can take about 1 GB while it is read.
inline constexpr std::size_t kMaxEventBatchBytes = std::size_t{16} << 20;

}  // namespace hkv
