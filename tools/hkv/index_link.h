// One engine as `hkv index` hears it: a SUB socket connected to its KV event
// endpoint, and a DEALER connected to its replay endpoint when it has one
// (docs/events.md gives the wire format). Reads PUB messages and runs the
// replay exchange; what the batches mean is the index's business.
//
// Thread-compatible: the service thread owns its links.
//
// Example:
//   auto link = InstanceLink::Connect(context, endpoints, "");
//   while (std::optional<PubMessage> m = (*link)->Receive()) ...
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <zmq.hpp>

#include "hkv/result.h"
#include "index_endpoints.h"

namespace hkv::cli {

// One PUB message: [topic, sequence (8 bytes, big-endian), batch].
struct PubMessage {
  bool well_formed = false;  // 3 frames, an 8-byte sequence number
  std::size_t num_frames = 0;
  std::size_t sequence_bytes = 0;  // the second frame's size (0: none)
  std::uint64_t sequence = 0;
  std::string batch;
};

enum class ReplayEnd { kComplete, kUnanswered, kTooLong, kMalformed };

struct ReplayLimits {
  std::chrono::milliseconds wait{2000};  // for each answer message
  std::size_t max_batches = std::size_t{1} << 20;
  // Set: a replay gives up (kUnanswered) within 100 ms of it turning true
  // (the service stopping), instead of waiting its full `wait`.
  const std::atomic<bool>* stop = nullptr;
};

class InstanceLink {
 public:
  // Connects (ZeroMQ connects in the background: an absent peer is no
  // error). `topic`: the subscription's prefix ("" for all). `context`
  // must outlive the link. kInvalidArgument naming a malformed endpoint.
  [[nodiscard]] static Result<std::unique_ptr<InstanceLink>> Connect(
      zmq::context_t& context, const InstanceEndpoints& endpoints,
      const std::string& topic);
  InstanceLink(const InstanceLink&) = delete;
  InstanceLink& operator=(const InstanceLink&) = delete;

  // The SUB socket, for zmq_poll.
  zmq::socket_t& sub() { return sub_; }
  // The SUB socket's monitor, for zmq_poll: readable when its connection
  // dropped (TakeDrops).
  zmq::socket_t& monitor() { return monitor_; }
  // Reads the monitor's pending events (never blocks); returns whether the
  // SUB connection dropped since the last call: a frame over the limit
  // (ZeroMQ then drops the connection and reconnects) or the publisher
  // gone, so that frames may be lost that no later batch reveals.
  bool TakeDrops();
  bool has_replay() const { return !replay_endpoint_.empty(); }

  // The next message if one is waiting (never blocks); frames past the
  // third are read and dropped. Throws zmq::error_t on a socket failure.
  std::optional<PubMessage> Receive();

  // Asks the replay socket for every kept batch from `from` and hands each
  // to `apply` in order, waiting at most limits.wait per message. Unless
  // kComplete, the DEALER is replaced so that a late answer is never read
  // as the next one's. REQUIRES: has_replay().
  ReplayEnd Replay(
      std::uint64_t from, const ReplayLimits& limits,
      const std::function<void(std::uint64_t, std::string_view)>& apply);

 private:
  InstanceLink(zmq::context_t& context, std::string replay_endpoint);
  void ConnectDealer();

  zmq::context_t& context_;
  zmq::socket_t sub_;
  zmq::socket_t monitor_;  // a PAIR reading sub_'s ZMQ_EVENT_DISCONNECTED
  std::string replay_endpoint_;
  std::optional<zmq::socket_t> dealer_;  // set when replay_endpoint_ is
};

}  // namespace hkv::cli
