// `hkv index`'s service thread: polls every instance's SUB socket and the
// query REP socket, applies each batch to the index in order, repairs gaps
// through the instance's replay socket, and answers REP queries.
//
// A live batch numbered past the next expected one (a gap, or a restart
// past 0) is followed by a replay request from the expected number, waited
// for at most ReplayLimits::wait per answer; the batches it brings up to the
// live one and then the live batch itself are applied as replayed ones, so
// that whatever the replay could not fill clears the instance
// (BatchOutcome::kHistoryLost) and the index never claims a key it may have
// missed the removal of. Replayed batches past the live one are skipped:
// the SUB socket holds them, and a live batch below the next expected
// number would read as a restart. An instance without a replay endpoint
// takes the kHistoryLost path at once. A dropped SUB connection (its
// monitor says so: a frame over the limit, the publisher gone or
// restarted) may have lost frames that no later batch reveals, and a replay
// cannot tell a restarted publisher from the old one: the instance is
// resynced at once (ClusterIndex::Resync). A batch lost without a drop (a
// publisher's queue overflowing) shows only when the next one comes, which an
// idle engine never sends: so an instance silent for a second is probed, a
// replay request from its next expected number, that applies whatever it
// missed (live copies still queued are skipped; unanswered probes back off
// to a minute). Malformed messages are
// counted and dropped. Each incident is logged (rate-limited).
//
// Thread-compatible: Run() on one thread; the IndexState it feeds may be
// read from any.
//
// Example:
//   auto service = IndexService::Create(state, log, options);
//   (*service)->Run(stop_flag, deadline);
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "hkv/result.h"
#include "index_endpoints.h"
#include "index_link.h"
#include "index_log.h"
#include "index_state.h"

namespace hkv::cli {

struct IndexServiceOptions {
  std::vector<InstanceEndpoints> instances = {};  // as many as the index's
  std::string topic = "";     // subscription prefix; "": every topic
  std::string zmq_bind = "";  // the REP socket's endpoint; "": none
  ReplayLimits replay = {};
};

class IndexService {
 public:
  // Connects every instance and binds the REP socket. kInvalidArgument
  // naming a malformed endpoint; kIoError naming one that cannot be bound.
  // `state` and `log` must outlive the service.
  [[nodiscard]] static Result<std::unique_ptr<IndexService>> Create(
      IndexState& state, Log& log, const IndexServiceOptions& options);
  ~IndexService();
  IndexService(const IndexService&) = delete;
  IndexService& operator=(const IndexService&) = delete;

  // The REP socket as bound (a wildcard port resolved), if there is one.
  std::optional<std::string> zmq_endpoint() const;

  // Serves until `stop` is set or `deadline` passes (checked at least every
  // 100 ms). Socket errors are logged and the loop goes on.
  void Run(const std::atomic<bool>& stop,
           std::optional<std::chrono::steady_clock::time_point> deadline);

 private:
  IndexService(IndexState& state, Log& log, const IndexServiceOptions& o);
  void Pass();
  void ReceiveFrom(std::uint32_t instance);
  void OnBatch(std::uint32_t instance, std::uint64_t sequence,
               const std::string& batch);
  void FillGap(std::uint32_t instance, std::uint64_t sequence,
               const std::string& batch);
  void OnLinkDropped(std::uint32_t instance);
  void ProbeIdle(std::uint32_t instance);
  void Note(std::uint32_t instance, std::uint64_t sequence,
            BatchOutcome outcome, const Error& error);
  void AnswerQueries();

  IndexState& state_;
  Log& log_;
  ReplayLimits replay_limits_;
  zmq::context_t context_{1};
  std::vector<std::unique_ptr<InstanceLink>> links_;
  // Per instance, the last live batch's number (for the log).
  std::vector<std::optional<std::uint64_t>> last_live_;
  // Per instance, the last batch a replay after a dropped link applied:
  // live batches up to it still queued in the SUB socket are skipped.
  std::vector<std::optional<std::uint64_t>> replayed_through_;
  // Per instance, when it was last heard (a live batch or a probe), and
  // how long a silence before the next probe.
  std::vector<std::chrono::steady_clock::time_point> last_heard_;
  std::vector<std::chrono::milliseconds> probe_every_;
  std::optional<zmq::socket_t> rep_;
  std::optional<std::string> zmq_endpoint_;
};

}  // namespace hkv::cli
