// `hkv index`'s shared state: the ClusterIndex (thread-compatible) and the
// service's counters behind one mutex. The service thread applies batches;
// HTTP handler threads and the REP socket ask queries and metrics. A query
// is read and its keys computed outside the lock; only the match and the
// counters are inside, so a long prompt does not hold batches back.
//
// Thread-safety: every member may be called from any thread.
//
// Example:
//   IndexState state(std::move(index), endpoints, log);
//   state.Apply(0, seq, batch, BatchSource::kLive, &error);   // service
//   QueryReply reply = state.Query(R"({"tokens":[1,2,3]})");  // handler
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/cluster_index.h"
#include "index_log.h"
#include "index_metrics.h"

namespace hkv::cli {

struct QueryReply {
  int http_status = 200;  // 200, or 400 for a query that cannot be read
  std::string json;       // the answer, or {"error": ...}
};

class IndexState {
 public:
  // `endpoints[i]` names instance i in answers. `log` must outlive this.
  // REQUIRES: one endpoint per instance of `index`.
  IndexState(std::unique_ptr<ClusterIndex> index,
             std::vector<std::string> endpoints, Log& log);
  IndexState(const IndexState&) = delete;
  IndexState& operator=(const IndexState&) = delete;

  std::uint32_t num_instances() const;
  const std::string& endpoint(std::uint32_t instance) const;

  // ClusterIndex::ApplyBatch under the lock.
  BatchOutcome Apply(std::uint32_t instance, std::uint64_t sequence,
                     std::string_view batch, BatchSource source, Error* error);
  // ClusterIndex::expected_sequence under the lock.
  std::optional<std::uint64_t> expected_sequence(std::uint32_t instance) const;
  // The service's per-instance counts.
  void CountBadMessage(std::uint32_t instance);
  void CountReplay(std::uint32_t instance, bool answered);
  // Counts a dropped SUB connection.
  void CountLinkDrop(std::uint32_t instance);
  // ClusterIndex::Resync under the lock.
  void Resync(std::uint32_t instance);
  // ClusterIndex::ReplayCompleted under the lock.
  void ReplayCompleted(std::uint32_t instance);

  // Answers one query body (index_query.h); a bad one is counted, logged
  // and answered with status 400. O(prompt) outside the lock, O(keys x
  // instances) inside.
  QueryReply Query(std::string_view body);
  // A query refused before its body was read (`message` says why):
  // counted, logged and answered as a bad one.
  QueryReply Refuse(const std::string& message);
  // Every count, copied under the lock.
  IndexMetrics Snapshot() const;

 private:
  Log& log_;
  const std::vector<std::string> endpoints_;
  const KeyScheme scheme_;  // the index's, copied: read without the lock
  mutable std::mutex mutex_;
  std::unique_ptr<ClusterIndex> index_;  // guarded by mutex_
  QueryCounters queries_;                // guarded by mutex_
  std::vector<LinkCounters> links_;      // guarded by mutex_, per instance
};

}  // namespace hkv::cli
