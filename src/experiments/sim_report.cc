// A simulation run's report (hkv/sim_report.h): its rows and its JSON.
// The JSON's "table" holds each row's text read back as a number, so that
// both show the same figures.
#include "hkv/sim_report.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <utility>

namespace hkv {
namespace {

using nlohmann::json;
using Row = SimReportRow;

// `value` as printf's "%.{precision}{f|g}" in the C locale.
std::string Chars(double value, std::chars_format format, int precision) {
  std::array<char, 400> text;  // 309 integer digits at most, and a fraction
  const std::to_chars_result out = std::to_chars(
      text.data(), text.data() + text.size(), value, format, precision);
  return std::string(text.data(), out.ptr);
}
std::string Fixed(double value, int digits) {
  return Chars(value, std::chars_format::fixed, digits);
}
std::string Significant(double value, int digits) {
  return Chars(value, std::chars_format::general, digits);
}
std::string Whole(std::uint64_t value) { return std::to_string(value); }

double Percent(std::uint64_t part, std::uint64_t whole) {
  return whole == 0
             ? 0.0
             : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

constexpr std::array<const char*, kNumManagerCalls> kCalls = {
    "lookup", "allocate", "commit", "free"};
constexpr std::array<const char*, kNumHitClasses> kClasses = {
    "cold", "sparse", "warm", "evicted"};

struct Miss {
  const char* key;
  const MissCounters* counters;
};
std::array<Miss, 5> Misses(const SimulationResult& r) {
  const PrefixCacheStats& s = r.manager_stats;
  return {{{"speculative_rewind", &s.speculative_rewind},
           {"no_checkpoint", &s.no_checkpoint},
           {"window_not_covered", &s.window_not_covered},
           {"evicted", &s.evicted},
           {"evicted_chain", &r.evicted_chains}}};
}

void AddLatencies(std::vector<Row>& f, const SimulationResult& r) {
  auto add = [&f](const std::string& key, const std::string& label,
                  const LatencySummary& s, double scale,
                  const std::string& unit) {
    f.push_back({key + "_p50", label + " p50 (" + unit + ")",
                 Fixed(s.p50_s * scale, 3)});
    f.push_back({key + "_p99", label + " p99 (" + unit + ")",
                 Fixed(s.p99_s * scale, 3)});
  };
  add("ttft_s", "TTFT*", r.ttft, 1.0, "s");
  add("tpot_ms", "TPOT*", r.tpot, 1e3, "ms");
  add("e2e_s", "e2e latency*", r.e2e, 1.0, "s");
}

void AddManagerTimes(std::vector<Row>& f, const SimulationResult& r) {
  for (std::size_t c = 0; c < kNumManagerCalls; ++c) {
    for (std::size_t h = 0; h < kNumHitClasses; ++h) {
      const CallTimes& t = r.manager_ns[c][h];
      const bool none = t.calls == 0;
      const std::string name = std::string(kCalls[c]) + "_" + kClasses[h];
      f.push_back({name + "_median_ns",
                   std::string(kCalls[c]) + " " + kClasses[h] + " ns p50/p99",
                   none ? "-" : Whole(t.median_ns), name + "_p99_ns",
                   none ? "-" : Whole(t.p99_ns)});
    }
  }
}

// Miss causes and per-group residency.
void AddCacheCounters(std::vector<Row>& f, const SimulationResult& r) {
  for (const Miss& m : Misses(r)) {
    f.push_back({"miss_" + std::string(m.key) + "_requests",
                 "miss " + std::string(m.key) + " (req/tokens)",
                 Whole(m.counters->requests),
                 "miss_" + std::string(m.key) + "_tokens",
                 Whole(m.counters->tokens)});
  }
  // Per kind, so that geometries with other groupings line up.
  std::vector<std::pair<std::string, std::uint64_t>> kinds;
  for (const GroupResidency& g : r.groups) {
    auto it = std::find_if(kinds.begin(), kinds.end(),
                           [&](const auto& k) { return k.first == g.kind; });
    if (it == kinds.end()) it = kinds.insert(kinds.end(), {g.kind, 0});
    it->second += g.cached_blocks;
  }
  for (const auto& [kind, blocks] : kinds) {
    f.push_back({"cached_blocks_" + kind, "cached blocks, " + kind + " groups",
                 Whole(blocks)});
  }
}

// A deployment's capacity, both ways, and a scenario's figures.
void AddDeployment(std::vector<Row>& f, const SimReport& report) {
  if (report.capacity) {
    const DeploymentCapacity& c = *report.capacity;
    f.push_back({"max_model_len", "capacity: at max_model_len",
                 Whole(report.max_model_len)});
    f.push_back({"engine_pool_tokens", "capacity: engine-logged pool tokens",
                 Whole(c.engine_pool_tokens)});
    f.push_back({"engine_max_concurrency", "capacity: engine-logged max conc.",
                 Fixed(c.engine_max_concurrency, 2)});
    f.push_back({"whole_requests", "capacity: whole requests (hkv)",
                 Whole(c.whole_requests)});
  }
  if (report.figures == nullptr) return;
  for (const ScenarioFigure& fig : *report.figures) {
    f.push_back({"scenario_" + fig.name, "scenario: " + fig.name + "*",
                 Significant(fig.value, 6)});
  }
}

// Requests, tokens and reuse.
std::vector<Row> Counts(const SimulationResult& r) {
  return {{"requests", "requests", Whole(r.requests)},
          {"finished", "finished", Whole(r.finished)},
          {"pool_blocks", "pool blocks", Whole(r.usable_blocks)},
          {"capacity_tokens", "longest request alone (tokens)",
           Whole(r.capacity_tokens)},
          {"capacity_concurrency", "mean-length requests at once",
           Fixed(r.capacity_concurrency, 1)},
          {"prompt_tokens", "prompt tokens", Whole(r.prompt_tokens)},
          {"reused_tokens", "reused tokens", Whole(r.reused_tokens)},
          {"computed_tokens", "computed tokens", Whole(r.computed_tokens)},
          {"recomputed_tokens", "recomputed (preemption)",
           Whole(r.recomputed_tokens)},
          {"hit_percent", "prompt hit ratio (%)",
           Fixed(Percent(r.reused_tokens, r.prompt_tokens), 2)}};
}

// Throughput, steps and the engine's peaks.
void AddEngine(std::vector<Row>& f, const SimulationResult& r) {
  f.push_back({"output_tokens_per_s", "output tokens/s*",
               Fixed(r.output_tokens_per_s, 1)});
  f.push_back({"makespan_s", "makespan* (s)", Fixed(r.makespan_s, 1)});
  f.push_back({"steps", "engine steps", Whole(r.steps)});
  f.push_back({"preemptions", "preemptions", Whole(r.preemptions)});
  f.push_back({"cow_copies", "copy-on-write copies", Whole(r.copies)});
  f.push_back({"evicted_blocks", "evicted blocks", Whole(r.evicted_blocks)});
  f.push_back({"pool_moved_blocks", "blocks moved between pools",
               Whole(r.parked_blocks)});
  f.push_back({"kv_usage_mean_percent", "KV usage mean/peak (%)",
               Fixed(100 * r.usage_mean, 1), "kv_usage_peak_percent",
               Fixed(100 * r.usage_peak, 1)});
  f.push_back({"peak_running", "peak running/waiting", Whole(r.peak_running),
               "peak_waiting", Whole(r.peak_waiting)});
}

// A cluster's routing: what the router counted and what was realised.
void AddCluster(std::vector<Row>& f, const SimulationResult& r) {
  if (!r.cluster) return;
  const ClusterFigures& c = *r.cluster;
  f.push_back({"instances", "instances", Whole(c.instances), "router",
               std::string(RouterName(c.router))});
  f.push_back({"routed_tokens", "routed/realised hit tokens",
               Whole(c.routed_tokens), "realised_tokens",
               Whole(r.reused_tokens)});
  f.push_back({"unresumable_routes", "routes on unresumable hits",
               Whole(c.unresumable_routes), "unresumable_tokens",
               Whole(c.unresumable_tokens)});
  f.push_back({"load_imbalance", "load imbalance (max/mean)",
               Fixed(c.load_imbalance, 2)});
}

// The offload tiers: per tier its hit tokens and loads, named by kind (a
// second tier of a kind gets its position: "host2").
std::vector<std::string> TierNames(const SimulationResult& r) {
  std::vector<std::string> names;
  for (std::size_t t = 0; t < r.tiers.size(); ++t) {
    std::string name = r.tiers[t].name;
    if (std::find(names.begin(), names.end(), name) != names.end())
      name += std::to_string(t + 1);
    names.push_back(name);
  }
  return names;
}

void AddTiers(std::vector<Row>& f, const SimulationResult& r) {
  if (r.tiers.empty()) return;
  const std::vector<std::string> names = TierNames(r);
  for (std::size_t t = 0; t < r.tiers.size(); ++t) {
    const TierFigures& tier = r.tiers[t];
    f.push_back({"tier_hit_tokens_" + names[t],
                 "tier " + names[t] + ": hit tokens/loads",
                 Whole(tier.hit_tokens), "tier_loads_" + names[t],
                 Whole(tier.loads)});
    f.push_back({"tier_load_gib_" + names[t],
                 "tier " + names[t] + ": loaded/stored GiB",
                 Fixed(static_cast<double>(tier.load_bytes) / 0x1p30, 2),
                 "tier_stored_gib_" + names[t],
                 Fixed(static_cast<double>(tier.stored_bytes) / 0x1p30, 2)});
  }
  f.push_back({"tier_loads", "tier loads/load time (s, modelled)",
               Whole(r.tier_loads), "tier_load_s",
               Significant(r.tier_load_s, 4)});
}

void AddTiersJson(json& out, const SimulationResult& r) {
  if (r.tiers.empty()) return;
  const std::vector<std::string> names = TierNames(r);
  for (std::size_t t = 0; t < r.tiers.size(); ++t) {
    const TierFigures& tier = r.tiers[t];
    out["tier_hit_tokens"][names[t]] = tier.hit_tokens;
    out["tier_load_seconds"][names[t]] = tier.load_s;
    out["tier_load_bytes"][names[t]] = tier.load_bytes;
    out["tiers"].push_back({{"name", names[t]},
                            {"capacity_bytes", tier.capacity_bytes},
                            {"hit_tokens", tier.hit_tokens},
                            {"loads", tier.loads},
                            {"load_groups", tier.load_groups},
                            {"load_bytes", tier.load_bytes},
                            {"load_s", tier.load_s},
                            {"stored_groups", tier.stored_groups},
                            {"stored_bytes", tier.stored_bytes},
                            {"evicted_groups", tier.evicted_groups}});
  }
}

// A row's text as JSON: a number when the text is one, null for "-".
json Value(const std::string& text) {
  if (text == "-") return nullptr;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != 0) return text;
  if (text.find_first_of(".eE") == std::string::npos && v >= 0 && v < 9e15) {
    return static_cast<std::uint64_t>(v);
  }
  return v;
}

// A deployment's groups and capacity, a scenario's figures.
void AddDeploymentJson(json& out, const SimReport& report) {
  if (!report.groups.empty()) out["groups_resolved"] = report.groups;
  if (report.capacity) {
    const DeploymentCapacity& c = *report.capacity;
    out["capacity"] = {{"max_model_len", report.max_model_len},
                       {"engine_pool_tokens", c.engine_pool_tokens},
                       {"engine_max_concurrency", c.engine_max_concurrency},
                       {"whole_requests", c.whole_requests},
                       {"blocks", c.blocks},
                       {"blocks_per_request", c.blocks_per_request},
                       {"stride_bytes", c.stride_bytes}};
  }
  if (report.figures == nullptr) return;
  for (const ScenarioFigure& fig : *report.figures) {
    out["scenario"][fig.name] = fig.value;
  }
}

json Latency(const LatencySummary& s) {
  return {{"mean_s", s.mean_s},
          {"p50_s", s.p50_s},
          {"p90_s", s.p90_s},
          {"p99_s", s.p99_s}};
}

// Every request's figures and the usage over time.
void AddSeries(json& out, const SimulationResult& r) {
  for (const RequestMetrics& m : r.per_request) {
    out["requests"].push_back({{"arrival_s", m.arrival_s},
                               {"first_token_s", m.first_token_s},
                               {"finish_s", m.finish_s},
                               {"prompt_tokens", m.prompt_tokens},
                               {"reused_tokens", m.reused_tokens},
                               {"output_tokens", m.output_tokens},
                               {"preemptions", m.preemptions}});
  }
  for (const UsageSample& s : r.usage) {
    out["kv_usage"].push_back({s.time_s, s.usage});
  }
  for (const ResidencySample& s : r.residency) {
    out["residency"].push_back({s.time_s, s.cached_blocks});
  }
}

// Latencies, miss causes, call times and groups.
void AddResultJson(json& out, const SimulationResult& r) {
  out["ttft"] = Latency(r.ttft);
  out["tpot"] = Latency(r.tpot);
  out["e2e"] = Latency(r.e2e);
  for (const Miss& m : Misses(r)) {
    out["miss_causes"][m.key] = {{"requests", m.counters->requests},
                                 {"tokens", m.counters->tokens}};
  }
  for (std::size_t c = 0; c < kNumManagerCalls; ++c) {
    for (std::size_t h = 0; h < kNumHitClasses; ++h) {
      const CallTimes& t = r.manager_ns[c][h];
      out["manager_ns"][kCalls[c]][kClasses[h]] = {
          {"calls", t.calls}, {"median", t.median_ns}, {"p99", t.p99_ns}};
    }
  }
  for (const GroupResidency& g : r.groups) {
    out["groups"].push_back({{"kind", g.kind},
                             {"block_size", g.block_size},
                             {"cached_blocks", g.cached_blocks}});
  }
  AddSeries(out, r);
}

json ReportJson(const SimReport& report) {
  json out = {{"label", report.label},
              {"cost_model", report.cost_model},
              {"times_are_modelled", true},
              {"wall_time_s", report.wall_s}};
  for (const Row& f : SimReportRows(report)) {
    out["table"][f.key] = Value(f.text);
    if (!f.key2.empty()) out["table"][f.key2] = Value(f.text2);
  }
  AddDeploymentJson(out, report);
  out["saturation"] = nullptr;  // closed loop
  if (report.load) {
    out["saturation"] = {{"offered_per_s", report.load->offered_per_s},
                         {"served_per_s", report.load->served_per_s},
                         {"peak_waiting", report.load->peak_waiting},
                         {"saturated", report.load->saturated}};
  }
  AddResultJson(out, *report.result);
  AddTiersJson(out, *report.result);
  return out;
}

}  // namespace

std::vector<SimReport> ReportsOf(const SimRuns& runs,
                                 const ExperimentOptions& options) {
  std::vector<SimReport> reports;
  for (const SimRun& run : runs.runs) {
    reports.push_back(
        {.label = run.config.label,
         .result = &run.result,
         .cost_model = runs.cost_model,
         .wall_s = run.wall_s,
         .groups = run.config.groups,
         .capacity = run.config.capacity,
         .max_model_len = run.config.max_model_len,
         .figures = &run.figures,
         .load = options.open_loop
                     ? std::optional<Load>(LoadOf(runs.workload, run.result))
                     : std::nullopt});
  }
  return reports;
}

std::vector<SimReportRow> SimReportRows(const SimReport& report) {
  const SimulationResult& r = *report.result;
  std::vector<Row> f = Counts(r);
  AddLatencies(f, r);
  AddEngine(f, r);
  AddCluster(f, r);
  AddTiers(f, r);
  AddDeployment(f, report);
  AddCacheCounters(f, r);
  AddManagerTimes(f, r);
  f.push_back({"wall_s", "wall time, real (s)", Fixed(report.wall_s, 2)});
  return f;
}

std::string SimReportJson(const SimReport& report) {
  return ReportJson(report).dump(2);
}

std::string SimReportsJson(std::span<const SimReport> reports) {
  json out = json::array();
  for (const SimReport& report : reports) out.push_back(ReportJson(report));
  return out.dump(2);
}

std::string HitRatioRegime(const ExperimentOptions& o) {
  std::string out = o.open_loop
                        ? "open loop at the workload's arrival times"
                        : "closed loop, " + std::to_string(o.concurrency) +
                              " requests in the system";
  if (o.instances > 1) {
    out += ", " + std::to_string(o.instances) + " instances behind the " +
           o.router + " router";
  }
  return out +
         "; requests running together share only blocks already computed, "
         "and the pool evicts (hkv replay: one request at a time, pool "
         "unbounded unless --capacity-tokens)";
}

}  // namespace hkv
