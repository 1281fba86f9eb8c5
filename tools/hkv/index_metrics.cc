#include "index_metrics.h"

#include <array>
#include <charconv>
#include <cmath>
#include <functional>

namespace hkv::cli {
namespace {

// The shortest text that reads back as `value` (0.0001, not 1e-04, in
// fixed form).
std::string Real(double value,
                 std::chars_format format = std::chars_format::general) {
  std::array<char, 400> text;  // the longest fixed double
  const auto result =
      std::to_chars(text.data(), text.data() + text.size(), value, format);
  return {text.data(), result.ptr};
}

// A label value: backslash, double quote and newline escaped.
std::string Escaped(const std::string& value) {
  std::string out;
  for (const char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out;
}

void Family(std::string& out, const char* name, const char* type,
            const std::string& help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " +
         type + "\n";
}

void Sample(std::string& out, const std::string& name,
            const std::string& labels, const std::string& value) {
  out += name + (labels.empty() ? "" : "{" + labels + "}") + " " + value + "\n";
}

std::string InstanceLabel(std::size_t i) {
  return "instance=\"" + std::to_string(i) + "\"";
}

struct PerInstance {
  const char* name;
  const char* help;
  std::function<std::uint64_t(const InstanceMetrics&)> value;
};

const std::vector<PerInstance>& PerInstanceCounters() {
  using M = InstanceMetrics;
  static const std::vector<PerInstance> counters = {
      {"hkv_index_batches_total", "Event batches applied, live or replayed.",
       [](const M& m) { return m.index.batches; }},
      {"hkv_index_stored_keys_total", "Keys announced by BlockStored events.",
       [](const M& m) { return m.index.stored_keys; }},
      {"hkv_index_removed_keys_total",
       "Keys withdrawn by BlockRemoved events that the index held.",
       [](const M& m) { return m.index.removed_keys; }},
      {"hkv_index_unknown_removals_total",
       "Keys withdrawn by BlockRemoved events that the index did not hold.",
       [](const M& m) { return m.index.unknown_removals; }},
      {"hkv_index_evicted_keys_total",
       "Keys the index forgot past its per-instance capacity.",
       [](const M& m) { return m.index.evicted_keys; }},
      {"hkv_index_clears_total",
       "Times the instance was cleared (AllBlocksCleared, a restart, a "
       "rejected batch or history lost).",
       [](const M& m) { return m.index.clears; }},
      {"hkv_index_duplicate_batches_total",
       "Replayed batches already applied, ignored.",
       [](const M& m) { return m.index.duplicates; }},
      {"hkv_index_gaps_total",
       "Live batches numbered past the next expected one.",
       [](const M& m) { return m.index.gaps; }},
      {"hkv_index_replays_total", "Replay requests sent for gaps.",
       [](const M& m) { return m.link.replays; }},
      {"hkv_index_replay_failures_total",
       "Replay requests unanswered in time, cut short or malformed.",
       [](const M& m) { return m.link.replay_failures; }},
      {"hkv_index_history_lost_total",
       "Gaps no replay filled: the instance was cleared.",
       [](const M& m) { return m.index.history_lost; }},
      {"hkv_index_restarts_total",
       "Sequence numbers that went back: the engine restarted.",
       [](const M& m) { return m.index.restarts; }},
      {"hkv_index_rejected_batches_total",
       "Batches that could not be read: the instance was cleared.",
       [](const M& m) { return m.index.rejected; }},
      {"hkv_index_bad_messages_total",
       "PUB messages dropped for their shape (not 3 frames, or a sequence "
       "number not 8 bytes).",
       [](const M& m) { return m.link.bad_messages; }},
      {"hkv_index_link_drops_total",
       "SUB connections dropped (a frame over the limit, the publisher "
       "gone or restarted): frames may be lost; the instance was cleared.",
       [](const M& m) { return m.link.link_drops; }},
  };
  return counters;
}

void Histogram(std::string& out, const LatencyHistogram& h) {
  const std::string name = "hkv_index_query_seconds";
  Family(out, name.c_str(), "histogram",
         "Time to answer a query (parse, keys, match), in seconds.");
  std::uint64_t cumulative = 0;
  for (std::size_t b = 0; b < h.kBounds.size(); ++b) {
    cumulative += h.buckets[b];
    Sample(out, name + "_bucket",
           "le=\"" + Real(h.kBounds[b], std::chars_format::fixed) + "\"",
           std::to_string(cumulative));
  }
  Sample(out, name + "_bucket", "le=\"+Inf\"", std::to_string(h.count));
  Sample(out, name + "_sum", "", Real(h.sum));
  Sample(out, name + "_count", "", std::to_string(h.count));
}

void Queries(std::string& out, const QueryCounters& q) {
  Family(out, "hkv_index_queries_total", "counter",
         "Queries answered (POST /query and the ZeroMQ REP socket).");
  Sample(out, "hkv_index_queries_total", "", std::to_string(q.queries));
  Family(out, "hkv_index_bad_queries_total", "counter",
         "Queries refused as unreadable (HTTP 400 or an error reply).");
  Sample(out, "hkv_index_bad_queries_total", "", std::to_string(q.bad_queries));
  Family(out, "hkv_index_prefix_cache_queries_total", "counter",
         "Prompt tokens queried; vLLM's vllm:prefix_cache_queries counts "
         "the same per engine.");
  Sample(out, "hkv_index_prefix_cache_queries_total", "",
         std::to_string(q.query_tokens));
  Family(out, "hkv_index_prefix_cache_hits_total", "counter",
         "Tokens the best instance could resume (hybrid-correct) over the "
         "queries; vLLM's vllm:prefix_cache_hits counts the same per engine.");
  Sample(out, "hkv_index_prefix_cache_hits_total", "",
         std::to_string(q.hit_tokens));
  Histogram(out, q.seconds);
}

void Instances(std::string& out, const std::vector<InstanceMetrics>& all) {
  Family(out, "hkv_index_instance_info", "gauge",
         "One per instance: its KV event endpoint.");
  for (std::size_t i = 0; i < all.size(); ++i) {
    Sample(out, "hkv_index_instance_info",
           InstanceLabel(i) + ",endpoint=\"" + Escaped(all[i].endpoint) + "\"",
           "1");
  }
  for (const PerInstance& counter : PerInstanceCounters()) {
    Family(out, counter.name, "counter", counter.help);
    for (std::size_t i = 0; i < all.size(); ++i) {
      Sample(out, counter.name, InstanceLabel(i),
             std::to_string(counter.value(all[i])));
    }
  }
  Family(out, "hkv_index_resident_keys", "gauge",
         "Keys the index holds per instance and cache group.");
  for (std::size_t i = 0; i < all.size(); ++i) {
    for (std::size_t g = 0; g < all[i].resident_keys.size(); ++g) {
      Sample(out, "hkv_index_resident_keys",
             InstanceLabel(i) + ",group=\"" + std::to_string(g) + "\"",
             std::to_string(all[i].resident_keys[g]));
    }
  }
}

}  // namespace

void LatencyHistogram::Observe(double seconds) {
  if (!(seconds > 0.0)) seconds = 0.0;  // NaN too
  for (std::size_t b = 0; b < kBounds.size(); ++b) {
    if (seconds <= kBounds[b]) {
      ++buckets[b];
      break;
    }
  }
  ++count;
  sum += seconds;
}

std::string PrometheusText(const IndexMetrics& metrics) {
  std::string out;
  Queries(out, metrics.queries);
  Instances(out, metrics.instances);
  Family(out, "hkv_index_memory_bytes", "gauge",
         "Bytes of the index's tables, all instances.");
  Sample(out, "hkv_index_memory_bytes", "",
         std::to_string(metrics.memory_bytes));
  return out;
}

}  // namespace hkv::cli
