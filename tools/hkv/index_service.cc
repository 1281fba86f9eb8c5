#include "index_service.h"

#include <fmt/core.h>

#include <cerrno>
#include <new>
#include <thread>

#include "hkv/event_publisher.h"
#include "index_query.h"

namespace hkv::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kPollInterval{100};
// Per socket and pass, so that no instance (nor the queries) waits on
// another's flood.
constexpr int kMessagesPerPass = 256;
constexpr int kQueriesPerPass = 16;
// An instance silent this long is probed (a replay from its next number);
// an unanswered probe doubles the wait, up to kMaxProbeEvery.
constexpr std::chrono::milliseconds kProbeEvery{1000};
constexpr std::chrono::milliseconds kMaxProbeEvery{60'000};
constexpr std::chrono::milliseconds kProbeWait{200};

const char* EndText(ReplayEnd end) {
  switch (end) {
    case ReplayEnd::kComplete:
      return "complete";
    case ReplayEnd::kUnanswered:
      return "unanswered in time";
    case ReplayEnd::kTooLong:
      return "cut short (too many batches)";
    case ReplayEnd::kMalformed:
      return "malformed";
  }
  return "";
}

}  // namespace

IndexService::IndexService(IndexState& state, Log& log,
                           const IndexServiceOptions& o)
    : state_(state), log_(log), replay_limits_(o.replay) {}

IndexService::~IndexService() = default;

Result<std::unique_ptr<IndexService>> IndexService::Create(
    IndexState& state, Log& log, const IndexServiceOptions& options) {
  std::unique_ptr<IndexService> service(new IndexService(state, log, options));
  for (const InstanceEndpoints& endpoints : options.instances) {
    Result<std::unique_ptr<InstanceLink>> link =
        InstanceLink::Connect(service->context_, endpoints, options.topic);
    if (!link) {
      return Fail(link.error().code, "--instance " + endpoints.endpoint + ": " +
                                         link.error().message);
    }
    service->links_.push_back(std::move(*link));
  }
  service->last_live_.resize(service->links_.size());
  service->replayed_through_.resize(service->links_.size());
  service->last_heard_.assign(service->links_.size(), Clock::now());
  service->probe_every_.assign(service->links_.size(), kProbeEvery);
  if (options.zmq_bind.empty()) return service;
  zmq::socket_t& rep =
      service->rep_.emplace(service->context_, zmq::socket_type::rep);
  rep.set(zmq::sockopt::linger, 0);
  rep.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(kMaxQueryBytes));
  try {
    rep.bind(options.zmq_bind);
  } catch (const zmq::error_t& e) {
    const bool malformed = e.num() == EINVAL || e.num() == EPROTONOSUPPORT;
    return Fail(
        malformed ? ErrorCode::kInvalidArgument : ErrorCode::kIoError,
        "--zmq-bind: cannot bind \"" + options.zmq_bind + "\": " + e.what());
  }
  service->zmq_endpoint_ = rep.get(zmq::sockopt::last_endpoint);
  return service;
}

std::optional<std::string> IndexService::zmq_endpoint() const {
  return zmq_endpoint_;
}

void IndexService::Run(const std::atomic<bool>& stop,
                       std::optional<Clock::time_point> deadline) {
  replay_limits_.stop = &stop;  // a replay gives up when the service stops
  // Every SUB socket, then every monitor, then the REP socket.
  const std::size_t n = links_.size();
  std::vector<zmq::pollitem_t> items;
  for (const auto& link : links_) {
    items.push_back({link->sub().handle(), 0, ZMQ_POLLIN, 0});
  }
  for (const auto& link : links_) {
    items.push_back({link->monitor().handle(), 0, ZMQ_POLLIN, 0});
  }
  if (rep_) items.push_back({rep_->handle(), 0, ZMQ_POLLIN, 0});
  while (!stop.load() && (!deadline || Clock::now() < *deadline)) {
    try {
      for (zmq::pollitem_t& item : items) item.revents = 0;
      zmq::poll(items, kPollInterval);
      for (std::uint32_t i = 0; i < n; ++i) {
        if ((items[i].revents & ZMQ_POLLIN) != 0) ReceiveFrom(i);
      }
      for (std::uint32_t i = 0; i < n; ++i) {
        if ((items[n + i].revents & ZMQ_POLLIN) != 0 &&
            links_[i]->TakeDrops()) {
          OnLinkDropped(i);
        }
      }
      for (std::uint32_t i = 0; i < n; ++i) {
        if (Clock::now() - last_heard_[i] >= probe_every_[i]) ProbeIdle(i);
      }
      if (rep_ && (items.back().revents & ZMQ_POLLIN) != 0) AnswerQueries();
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) continue;  // a signal: look at `stop`
      log_.Say(std::string("socket error: ") + e.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

void IndexService::ReceiveFrom(std::uint32_t instance) {
  for (int n = 0; n < kMessagesPerPass; ++n) {
    std::optional<PubMessage> message = links_[instance]->Receive();
    if (!message) return;
    if (!message->well_formed) {
      state_.CountBadMessage(instance);
      log_.Say(fmt::format(
          "instance {} ({}): dropped a message of {} frames, the second of "
          "{} bytes (want 3: topic, 8-byte sequence number, batch)",
          instance, state_.endpoint(instance), message->num_frames,
          message->sequence_bytes));
      continue;
    }
    OnBatch(instance, message->sequence, message->batch);
  }
}

void IndexService::OnBatch(std::uint32_t instance, std::uint64_t sequence,
                           const std::string& batch) {
  const std::optional<std::uint64_t> previous = last_live_[instance];
  last_live_[instance] = sequence;
  last_heard_[instance] = Clock::now();
  std::optional<std::uint64_t>& replayed = replayed_through_[instance];
  if (replayed && sequence <= *replayed &&
      (!previous || sequence > *previous)) {
    return;  // applied by the replay after a dropped link
  }
  replayed.reset();
  Error error;
  const BatchOutcome outcome =
      state_.Apply(instance, sequence, batch, BatchSource::kLive, &error);
  if (outcome == BatchOutcome::kGap) {
    const bool restart = previous && sequence <= *previous;
    log_.Say(
        fmt::format("instance {} ({}): {}: batch {} after {}; {}", instance,
                    state_.endpoint(instance), restart ? "restart" : "gap",
                    sequence, previous ? std::to_string(*previous) : "none",
                    links_[instance]->has_replay() ? "asking for a replay"
                                                   : "no replay endpoint"));
    FillGap(instance, sequence, batch);
  } else {
    Note(instance, sequence, outcome, error);
  }
}

void IndexService::FillGap(std::uint32_t instance, std::uint64_t sequence,
                           const std::string& batch) {
  InstanceLink& link = *links_[instance];
  const std::uint64_t from = state_.expected_sequence(instance).value_or(0);
  if (link.has_replay()) {
    // Up to this batch only: later ones wait in the SUB socket's queue, and
    // a live batch below the next expected number would read as a restart.
    const ReplayEnd end = link.Replay(
        from, replay_limits_, [&](std::uint64_t s, std::string_view b) {
          if (s > sequence) return;
          Error error;
          Note(instance, s,
               state_.Apply(instance, s, b, BatchSource::kReplay, &error),
               error);
        });
    state_.CountReplay(instance, end == ReplayEnd::kComplete);
    if (end == ReplayEnd::kComplete) {
      state_.ReplayCompleted(instance);
    } else {
      log_.Say(fmt::format("instance {}: replay from batch {} {}", instance,
                           from, EndText(end)));
    }
  }
  // Applied, or already replayed; past what the replay brought, the
  // instance is cleared (history lost) and this batch applied.
  Error error;
  Note(instance, sequence,
       state_.Apply(instance, sequence, batch, BatchSource::kReplay, &error),
       error);
}

void IndexService::OnLinkDropped(std::uint32_t instance) {
  state_.CountLinkDrop(instance);
  // Frames sent while ZeroMQ reconnects are lost, and a replay cannot tell
  // a publisher that restarted (its numbers start again) from one that
  // did not: claim nothing until the stream's next batch, and only what it
  // and later ones store. The next probe asks the history from 0.
  state_.Resync(instance);
  replayed_through_[instance].reset();
  log_.Say(
      fmt::format("instance {} ({}): link dropped (a frame over {} "
                  "bytes, or the publisher gone): cleared",
                  instance, state_.endpoint(instance), kMaxEventBatchBytes));
}

void IndexService::ProbeIdle(std::uint32_t instance) {
  last_heard_[instance] = Clock::now();
  InstanceLink& link = *links_[instance];
  if (!link.has_replay()) return;
  // Unset: never heard, or resynced after a dropped link: the history from
  // its start (a late join, or a restarted publisher's new stream).
  const std::uint64_t from = state_.expected_sequence(instance).value_or(0);
  ReplayLimits limits = replay_limits_;
  limits.wait = kProbeWait;
  std::uint64_t missed = 0;
  const ReplayEnd end =
      link.Replay(from, limits, [&](std::uint64_t s, std::string_view b) {
        Error error;
        Note(instance, s,
             state_.Apply(instance, s, b, BatchSource::kReplay, &error), error);
        replayed_through_[instance] = s;
        ++missed;
      });
  if (end != ReplayEnd::kComplete) {
    probe_every_[instance] =
        std::min(2 * probe_every_[instance], kMaxProbeEvery);
    return;
  }
  probe_every_[instance] = kProbeEvery;
  state_.ReplayCompleted(instance);
  if (missed > 0) {
    state_.CountReplay(instance, true);
    log_.Say(
        fmt::format("instance {} ({}): {} batches from {} not heard "
                    "live: replayed",
                    instance, state_.endpoint(instance), missed, from));
  }
}

void IndexService::Note(std::uint32_t instance, std::uint64_t sequence,
                        BatchOutcome outcome, const Error& error) {
  const std::string who =
      fmt::format("instance {} ({})", instance, state_.endpoint(instance));
  switch (outcome) {
    case BatchOutcome::kApplied:
    case BatchOutcome::kDuplicate:
    case BatchOutcome::kGap:  // FillGap's business
      return;
    case BatchOutcome::kRestarted:
      log_.Say(who + ": restarted (batch 0 after later ones): cleared");
      return;
    case BatchOutcome::kHistoryLost:
      log_.Say(
          fmt::format("{}: batches before {} lost: cleared", who, sequence));
      return;
    case BatchOutcome::kRejected:
      log_.Say(fmt::format("{}: rejected batch {}: {}: cleared", who, sequence,
                           error.message));
      return;
  }
}

void IndexService::AnswerQueries() {
  for (int n = 0; n < kQueriesPerPass; ++n) {
    zmq::message_t body;
    if (!rep_->recv(body, zmq::recv_flags::dontwait)) return;
    std::size_t frames = 1;
    for (bool more = body.more(); more; ++frames) {
      zmq::message_t next;  // a REP socket must read the whole request
      if (!rep_->recv(next, zmq::recv_flags::none)) break;
      more = next.more();
    }
    QueryReply reply;
    try {
      reply = frames == 1 ? state_.Query(body.to_string_view())
                          : state_.Refuse(fmt::format(
                                "a query is one frame, got {}", frames));
    } catch (const std::bad_alloc&) {  // the REP socket owes an answer
      reply = {.http_status = 500, .json = ErrorJson("out of memory")};
    }
    rep_->send(zmq::buffer(reply.json), zmq::send_flags::none);
  }
}

}  // namespace hkv::cli
