#include "index_link.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

#include "hkv/event_publisher.h"

namespace hkv::cli {
namespace {

// Messages queued per SUB socket before ZeroMQ holds the rest back at the
// publisher (which queues 100,000, then drops: a gap, then a replay).
constexpr int kHighWaterMark = 10'000;
// A frame larger than any batch DecodeEventBatch reads drops the
// connection (ZeroMQ reconnects) instead of being buffered.
constexpr std::int64_t kMaxFrameBytes =
    static_cast<std::int64_t>(kMaxEventBatchBytes);
constexpr std::size_t kFrames = 3;

std::uint64_t FromBigEndian(const zmq::message_t& frame) {
  std::uint64_t value = 0;
  const auto* bytes = static_cast<const std::uint8_t*>(frame.data());
  for (std::size_t i = 0; i < 8; ++i) value = (value << 8) | bytes[i];
  return value;
}

std::string BigEndian(std::uint64_t value) {
  std::string out(8, '\0');
  for (std::size_t i = 8; i-- > 0; value >>= 8) {
    out[i] = static_cast<char>(value & 0xff);
  }
  return out;
}

// The rest of the message `first` begins: frames past kFrames are read and
// dropped. Returns how many frames it had.
std::size_t ReadMessage(zmq::socket_t& socket, zmq::message_t first,
                        std::vector<zmq::message_t>& frames) {
  bool more = first.more();
  frames.push_back(std::move(first));
  std::size_t count = 1;
  while (more) {
    zmq::message_t next;
    if (!socket.recv(next, zmq::recv_flags::none)) break;
    more = next.more();
    ++count;
    if (frames.size() < kFrames) frames.push_back(std::move(next));
  }
  return count;
}

// Whether `socket` became readable within limits.wait, polled in slices of
// at most 100 ms so that limits.stop is seen.
bool AnswerWithin(zmq::socket_t& socket, const ReplayLimits& limits) {
  constexpr std::chrono::milliseconds kSlice{100};
  const auto deadline = std::chrono::steady_clock::now() + limits.wait;
  while (limits.stop == nullptr || !limits.stop->load()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::min(left, kSlice));
    if ((item.revents & ZMQ_POLLIN) != 0) return true;
  }
  return false;
}

Result<void> Connect(zmq::socket_t& socket, const std::string& endpoint) {
  try {
    socket.connect(endpoint);
    return {};
  } catch (const zmq::error_t& e) {
    const bool malformed = e.num() == EINVAL || e.num() == EPROTONOSUPPORT;
    return Fail(malformed ? ErrorCode::kInvalidArgument : ErrorCode::kIoError,
                "cannot connect to \"" + endpoint + "\": " + e.what());
  }
}

}  // namespace

InstanceLink::InstanceLink(zmq::context_t& context, std::string replay_endpoint)
    : context_(context),
      sub_(context, zmq::socket_type::sub),
      monitor_(context, zmq::socket_type::pair),
      replay_endpoint_(std::move(replay_endpoint)) {}

bool InstanceLink::TakeDrops() {
  bool dropped = false;
  zmq::message_t event;
  while (monitor_.recv(event, zmq::recv_flags::dontwait)) {
    // [event id (2 bytes) + value (4 bytes), endpoint]
    if (event.size() >= 2) {
      std::uint16_t id = 0;
      std::memcpy(&id, event.data(), sizeof id);
      dropped |= id == ZMQ_EVENT_DISCONNECTED;
    }
    while (event.more()) {
      if (!monitor_.recv(event, zmq::recv_flags::none)) break;
    }
  }
  return dropped;
}

Result<std::unique_ptr<InstanceLink>> InstanceLink::Connect(
    zmq::context_t& context, const InstanceEndpoints& endpoints,
    const std::string& topic) {
  std::unique_ptr<InstanceLink> link(
      new InstanceLink(context, endpoints.replay_endpoint));
  link->sub_.set(zmq::sockopt::linger, 0);
  link->sub_.set(zmq::sockopt::rcvhwm, kHighWaterMark);
  link->sub_.set(zmq::sockopt::maxmsgsize, kMaxFrameBytes);
  link->sub_.set(zmq::sockopt::subscribe, topic);
  // One inproc address per link in the process.
  static std::atomic<std::uint64_t> links{0};
  const std::string monitor = "inproc://hkv-index-sub-" +
                              std::to_string(links.fetch_add(1)) + "-monitor";
  if (zmq_socket_monitor(link->sub_.handle(), monitor.c_str(),
                         ZMQ_EVENT_DISCONNECTED) != 0) {
    return Fail(ErrorCode::kIoError,
                std::string("cannot monitor the SUB socket: ") +
                    zmq_strerror(zmq_errno()));
  }
  link->monitor_.set(zmq::sockopt::linger, 0);
  link->monitor_.connect(monitor);
  if (Result<void> ok = cli::Connect(link->sub_, endpoints.endpoint); !ok) {
    return tl::unexpected(ok.error());
  }
  if (link->has_replay()) {
    link->dealer_.emplace(context, zmq::socket_type::dealer);
    link->dealer_->set(zmq::sockopt::linger, 0);
    link->dealer_->set(zmq::sockopt::maxmsgsize, kMaxFrameBytes);
    Result<void> ok = cli::Connect(*link->dealer_, link->replay_endpoint_);
    if (!ok) return tl::unexpected(ok.error());
  }
  return link;
}

void InstanceLink::ConnectDealer() {
  dealer_.reset();  // closes it, unread answers with it
  dealer_.emplace(context_, zmq::socket_type::dealer);
  dealer_->set(zmq::sockopt::linger, 0);
  dealer_->set(zmq::sockopt::maxmsgsize, kMaxFrameBytes);
  dealer_->connect(replay_endpoint_);  // it connected before: well formed
}

std::optional<PubMessage> InstanceLink::Receive() {
  zmq::message_t first;
  if (!sub_.recv(first, zmq::recv_flags::dontwait)) return std::nullopt;
  std::vector<zmq::message_t> frames;
  PubMessage message;
  message.num_frames = ReadMessage(sub_, std::move(first), frames);
  message.sequence_bytes = frames.size() > 1 ? frames[1].size() : 0;
  if (message.num_frames == kFrames && frames[1].size() == 8) {
    message.well_formed = true;
    message.sequence = FromBigEndian(frames[1]);
    message.batch = frames[2].to_string();
  }
  return message;
}

ReplayEnd InstanceLink::Replay(
    std::uint64_t from, const ReplayLimits& limits,
    const std::function<void(std::uint64_t, std::string_view)>& apply) {
  const ReplayEnd end = [&] {
    try {
      if (!dealer_
               ->send(zmq::message_t(),
                      zmq::send_flags::sndmore | zmq::send_flags::dontwait)
               .has_value() ||
          !dealer_
               ->send(zmq::buffer(BigEndian(from)), zmq::send_flags::dontwait)
               .has_value()) {
        return ReplayEnd::kUnanswered;
      }
      for (std::size_t batches = 0;; ++batches) {
        if (!AnswerWithin(*dealer_, limits)) return ReplayEnd::kUnanswered;
        zmq::message_t first;
        if (!dealer_->recv(first, zmq::recv_flags::dontwait)) {
          return ReplayEnd::kUnanswered;
        }
        std::vector<zmq::message_t> frames;
        if (ReadMessage(*dealer_, std::move(first), frames) != kFrames ||
            frames[0].size() != 0 || frames[1].size() != 8) {
          return ReplayEnd::kMalformed;
        }
        const std::uint64_t sequence = FromBigEndian(frames[1]);
        if (sequence == ~std::uint64_t{0}) return ReplayEnd::kComplete;
        if (batches == limits.max_batches) return ReplayEnd::kTooLong;
        apply(sequence, frames[2].to_string_view());
      }
    } catch (const zmq::error_t&) {  // a signal (EINTR) or a socket error
      return ReplayEnd::kUnanswered;
    }
  }();
  if (end != ReplayEnd::kComplete) ConnectDealer();
  return end;
}

}  // namespace hkv::cli
