// What `hkv index` counts, and GET /metrics: the counts in Prometheus' text
// format (version 0.0.4). Names and labels are listed in
// docs/cluster.md; where vLLM counts the same quantity the
// HELP text names its metric.
//
// Thread-safety: value types and a pure function; the service copies the
// counts under its lock and formats the copy.
//
// Example:
//   IndexMetrics m = state.Snapshot();
//   respond(PrometheusText(m), kPrometheusContentType);
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "hkv/cluster_index.h"

namespace hkv::cli {

inline constexpr char kPrometheusContentType[] =
    "text/plain; version=0.0.4; charset=utf-8";

// Query latency in seconds, in Prometheus' cumulative-bucket form.
struct LatencyHistogram {
  static constexpr std::array<double, 14> kBounds = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
      0.025,  0.05,    0.1,    0.25,  0.5,    1.0,   2.5};
  // Observations at most kBounds[b] (not cumulative); beyond the last:
  // count minus their sum.
  std::array<std::uint64_t, kBounds.size()> buckets = {};
  std::uint64_t count = 0;
  double sum = 0.0;

  // A negative or NaN time counts as 0.
  void Observe(double seconds);
};

struct QueryCounters {
  std::uint64_t queries = 0;       // answered
  std::uint64_t bad_queries = 0;   // refused (HTTP 400, or an error reply)
  std::uint64_t query_tokens = 0;  // prompt tokens of the answered queries
  std::uint64_t hit_tokens = 0;    // the best instance's hybrid tokens
  LatencyHistogram seconds = {};   // answered queries
};

// What the service counts per instance beside the index's own counters.
struct LinkCounters {
  std::uint64_t replays = 0;          // replay requests sent
  std::uint64_t replay_failures = 0;  // unanswered, cut short or malformed
  std::uint64_t bad_messages = 0;     // PUB messages of the wrong shape
  std::uint64_t link_drops = 0;       // SUB connections dropped
};

struct InstanceMetrics {
  std::string endpoint;
  InstanceCounters index = {};
  LinkCounters link = {};
  std::vector<std::uint64_t> resident_keys = {};  // per group
};

struct IndexMetrics {
  QueryCounters queries = {};
  std::vector<InstanceMetrics> instances = {};
  std::uint64_t memory_bytes = 0;
};

// The metrics as Prometheus text: HELP and TYPE lines, then the samples,
// per instance labelled instance="I" (and group="G"). O(instances x groups).
std::string PrometheusText(const IndexMetrics& metrics);

}  // namespace hkv::cli
