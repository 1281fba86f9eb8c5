#include "hkv/event_publisher.h"

#include <atomic>
#include <cerrno>
#include <deque>
#include <thread>
#include <utility>
#include <zmq.hpp>

#include "events/batch_queue.h"

namespace hkv {
namespace {

constexpr std::size_t kMaxBatches = std::size_t{1} << 24;
constexpr int kSendHighWaterMark = 100'000;
constexpr int kLingerMs = 1000;
// A replay request is [identity, empty, 8-byte sequence number]; frames past
// the first four of a message are read and dropped.
constexpr std::size_t kRequestFrames = 3;
constexpr std::int64_t kMaxRequestFrameBytes = 256;
constexpr std::chrono::milliseconds kPollInterval{5};
constexpr int kRequestsPerPass = 16;

std::string BigEndian(std::int64_t value) {
  std::string out(8, '\0');
  auto bits = static_cast<std::uint64_t>(value);
  for (int i = 7; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = static_cast<char>(bits & 0xff);
    bits >>= 8;
  }
  return out;
}

std::uint64_t FromBigEndian(const zmq::message_t& frame) {
  std::uint64_t value = 0;
  const auto* bytes = static_cast<const std::uint8_t*>(frame.data());
  for (std::size_t i = 0; i < 8; ++i) value = (value << 8) | bytes[i];
  return value;
}

Result<std::string> Bind(zmq::socket_t& socket, const std::string& endpoint,
                         const std::string& name) {
  if (endpoint.empty()) {
    return Fail(ErrorCode::kInvalidArgument, name + " is empty");
  }
  try {
    socket.bind(endpoint);
    return socket.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    // A malformed endpoint or unknown transport is the caller's; the rest
    // (address in use, no such interface) the system's.
    const bool malformed = e.num() == EINVAL || e.num() == EPROTONOSUPPORT;
    return Fail(
        malformed ? ErrorCode::kInvalidArgument : ErrorCode::kIoError,
        "cannot bind the " + name + " \"" + endpoint + "\": " + e.what());
  }
}

}  // namespace

struct EventPublisher::Impl {
  explicit Impl(const EventPublisherOptions& o)
      : options(o), queue(o.queue_batches) {}

  // The publisher's thread: sends queued batches, answers replay requests.
  void Run() {
    while (true) {
      std::optional<internal::PendingBatch> batch;
      try {
        if (replay) ServeReplays();
        batch = queue.Pop(kPollInterval);
        if (batch) Send(*batch);
      } catch (const std::exception&) {
        // A socket error or no memory: the batch is lost (a gap replay
        // cannot fill), the thread goes on.
        socket_errors.fetch_add(1);
      }
      if (batch) {
        queue.MarkDone();
      } else if (stopping.load()) {
        return;
      }
    }
  }

  void Send(const internal::PendingBatch& batch) {
    std::string payload = EncodeEventBatch(
        batch.events, batch.timestamp_s, options.data_parallel_rank,
        options.key_function, options.hashes);
    const std::uint64_t seq = batch.seq;
    pub.send(zmq::buffer(options.topic), zmq::send_flags::sndmore);
    pub.send(zmq::buffer(BigEndian(static_cast<std::int64_t>(seq))),
             zmq::send_flags::sndmore);
    pub.send(zmq::buffer(payload), zmq::send_flags::none);
    history.emplace_back(seq, std::move(payload));
    if (history.size() > options.replay_batches) history.pop_front();
    published.fetch_add(1);
  }

  // At most kRequestsPerPass requests, so that queued batches are sent and
  // a shutdown is seen however fast requests come; none once stopping.
  void ServeReplays() {
    for (int served = 0; served < kRequestsPerPass && !stopping.load();
         ++served) {
      std::vector<zmq::message_t> frames;
      zmq::message_t frame;
      if (!replay->recv(frame, zmq::recv_flags::dontwait)) return;
      bool more = frame.more();
      frames.push_back(std::move(frame));
      while (more) {
        zmq::message_t next;
        if (!replay->recv(next, zmq::recv_flags::none)) break;
        more = next.more();
        if (frames.size() <= kRequestFrames) frames.push_back(std::move(next));
      }
      Answer(frames);
    }
  }

  void Answer(std::vector<zmq::message_t>& frames) {
    if (frames.size() != kRequestFrames || frames[1].size() != 0 ||
        frames[2].size() != 8) {
      bad_replay_requests.fetch_add(1);
      return;
    }
    replay_requests.fetch_add(1);
    const std::uint64_t start = FromBigEndian(frames[2]);
    const std::string identity = frames[0].to_string();
    for (const auto& [seq, payload] : history) {
      if (seq < start) continue;
      replay->send(zmq::buffer(identity), zmq::send_flags::sndmore);
      replay->send(zmq::message_t(), zmq::send_flags::sndmore);
      replay->send(zmq::buffer(BigEndian(static_cast<std::int64_t>(seq))),
                   zmq::send_flags::sndmore);
      replay->send(zmq::buffer(payload), zmq::send_flags::none);
    }
    replay->send(zmq::buffer(identity), zmq::send_flags::sndmore);
    replay->send(zmq::message_t(), zmq::send_flags::sndmore);
    replay->send(zmq::buffer(BigEndian(-1)), zmq::send_flags::sndmore);
    replay->send(zmq::message_t(), zmq::send_flags::none);
  }

  EventPublisherOptions options;
  zmq::context_t context{1};
  zmq::socket_t pub{context, zmq::socket_type::pub};
  std::optional<zmq::socket_t> replay;
  std::string endpoint;
  std::optional<std::string> replay_endpoint;
  internal::BatchQueue queue;
  // The thread's own: the replay history.
  std::deque<std::pair<std::uint64_t, std::string>> history;
  std::atomic<std::uint64_t> published{0};
  std::atomic<std::uint64_t> replay_requests{0};
  std::atomic<std::uint64_t> bad_replay_requests{0};
  std::atomic<std::uint64_t> socket_errors{0};
  std::atomic<bool> stopping{false};
  std::thread thread;
};

Result<std::unique_ptr<EventPublisher>> EventPublisher::Create(
    const EventPublisherOptions& options) {
  for (const auto& [count, name] :
       {std::pair{options.replay_batches, "replay_batches"},
        std::pair{options.queue_batches, "queue_batches"}}) {
    if (count < 1 || count > kMaxBatches) {
      return Fail(ErrorCode::kInvalidArgument, std::string(name) + " " +
                                                   std::to_string(count) +
                                                   " is outside [1, 2^24]");
    }
  }
  auto impl = std::make_unique<Impl>(options);
  impl->pub.set(zmq::sockopt::sndhwm, kSendHighWaterMark);
  impl->pub.set(zmq::sockopt::linger, kLingerMs);
  Result<std::string> bound =
      Bind(impl->pub, options.endpoint, "KV event endpoint");
  if (!bound) return tl::unexpected(bound.error());
  impl->endpoint = *bound;
  if (options.replay_endpoint) {
    impl->replay.emplace(impl->context, zmq::socket_type::router);
    impl->replay->set(zmq::sockopt::maxmsgsize, kMaxRequestFrameBytes);
    // Room for one whole answer per client (a ROUTER drops past its
    // high-water mark): the history and the end marker.
    impl->replay->set(zmq::sockopt::sndhwm,
                      static_cast<int>(options.replay_batches + 1));
    impl->replay->set(zmq::sockopt::linger, kLingerMs);
    Result<std::string> replay_bound = Bind(
        *impl->replay, *options.replay_endpoint, "KV event replay endpoint");
    if (!replay_bound) return tl::unexpected(replay_bound.error());
    impl->replay_endpoint = *replay_bound;
  }
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Run(); });
  return std::unique_ptr<EventPublisher>(new EventPublisher(std::move(impl)));
}

EventPublisher::EventPublisher(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

EventPublisher::~EventPublisher() {
  impl_->queue.WaitDrained(std::chrono::seconds(1));
  impl_->stopping.store(true);
  impl_->queue.Close();
  impl_->thread.join();
}

std::string EventPublisher::endpoint() const { return impl_->endpoint; }

std::optional<std::string> EventPublisher::replay_endpoint() const {
  return impl_->replay_endpoint;
}

void EventPublisher::Publish(std::vector<KvEvent> events, double timestamp_s) {
  impl_->queue.Push({.events = std::move(events), .timestamp_s = timestamp_s});
}

bool EventPublisher::Flush(std::chrono::milliseconds timeout) {
  return impl_->queue.WaitDrained(timeout);
}

PublisherCounters EventPublisher::counters() const {
  return {.published = impl_->published.load(),
          .dropped = impl_->queue.dropped(),
          .replay_requests = impl_->replay_requests.load(),
          .bad_replay_requests = impl_->bad_replay_requests.load(),
          .socket_errors = impl_->socket_errors.load()};
}

}  // namespace hkv
