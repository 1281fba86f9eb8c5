#include "sim_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace hkv::cli {
namespace {

// One row of the text table: one value, or two shown as "a/b" (then
// key names the first CSV column and key2 the second).
struct Field {
  std::string key;    // CSV column
  std::string label;  // text row
  std::string text;   // value as shown
  std::string key2 = {};
  std::string text2 = {};

  std::string Shown() const { return key2.empty() ? text : text + "/" + text2; }
};

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

void AddLatencies(std::vector<Field>& f, const SimulationResult& r) {
  auto add = [&f](const char* key, const char* label, const LatencySummary& s,
                  double scale, const char* unit) {
    f.push_back({fmt::format("{}_p50", key),
                 fmt::format("{} p50 ({})", label, unit),
                 fmt::format("{:.3f}", s.p50_s * scale)});
    f.push_back({fmt::format("{}_p99", key),
                 fmt::format("{} p99 ({})", label, unit),
                 fmt::format("{:.3f}", s.p99_s * scale)});
  };
  add("ttft_s", "TTFT*", r.ttft, 1.0, "s");
  add("tpot_ms", "TPOT*", r.tpot, 1e3, "ms");
  add("e2e_s", "e2e latency*", r.e2e, 1.0, "s");
}

void AddManagerTimes(std::vector<Field>& f, const SimulationResult& r) {
  for (std::size_t c = 0; c < kNumManagerCalls; ++c) {
    for (std::size_t h = 0; h < kNumHitClasses; ++h) {
      const CallTimes& t = r.manager_ns[c][h];
      const bool none = t.calls == 0;
      f.push_back({fmt::format("{}_{}_median_ns", kCalls[c], kClasses[h]),
                   fmt::format("{} {} ns p50/p99", kCalls[c], kClasses[h]),
                   none ? "-" : fmt::format("{}", t.median_ns),
                   fmt::format("{}_{}_p99_ns", kCalls[c], kClasses[h]),
                   none ? "-" : fmt::format("{}", t.p99_ns)});
    }
  }
}

// Miss causes and per-group residency.
void AddCacheCounters(std::vector<Field>& f, const SimulationResult& r) {
  for (const Miss& m : Misses(r)) {
    f.push_back({fmt::format("miss_{}_requests", m.key),
                 fmt::format("miss {} (req/tokens)", m.key),
                 fmt::format("{}", m.counters->requests),
                 fmt::format("miss_{}_tokens", m.key),
                 fmt::format("{}", m.counters->tokens)});
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
    f.push_back({fmt::format("cached_blocks_{}", kind),
                 fmt::format("cached blocks, {} groups", kind),
                 fmt::format("{}", blocks)});
  }
}

// A deployment's capacity, both ways, and a scenario's figures.
void AddDeployment(std::vector<Field>& f, const SimReport& report) {
  if (report.capacity) {
    const DeploymentCapacity& c = *report.capacity;
    f.push_back({"max_model_len", "capacity: at max_model_len",
                 fmt::format("{}", report.max_model_len)});
    f.push_back({"engine_pool_tokens", "capacity: engine-logged pool tokens",
                 fmt::format("{}", c.engine_pool_tokens)});
    f.push_back({"engine_max_concurrency", "capacity: engine-logged max conc.",
                 fmt::format("{:.2f}", c.engine_max_concurrency)});
    f.push_back({"whole_requests", "capacity: whole requests (hkv)",
                 fmt::format("{}", c.whole_requests)});
  }
  if (report.figures == nullptr) return;
  for (const ScenarioFigure& fig : *report.figures) {
    f.push_back({"scenario_" + fig.name, "scenario: " + fig.name + "*",
                 fmt::format("{:.6g}", fig.value)});
  }
}

// A table value as JSON: a number when the text is one, null for "-".
nlohmann::json Value(const std::string& text) {
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
void AddDeploymentJson(nlohmann::json& out, const SimReport& report) {
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

std::vector<Field> Fields(const SimReport& report) {
  const SimulationResult& r = *report.result;
  std::vector<Field> f = {
      {"requests", "requests", fmt::format("{}", r.requests)},
      {"finished", "finished", fmt::format("{}", r.finished)},
      {"pool_blocks", "pool blocks", fmt::format("{}", r.usable_blocks)},
      {"capacity_tokens", "longest request alone (tokens)",
       fmt::format("{}", r.capacity_tokens)},
      {"capacity_concurrency", "mean-length requests at once",
       fmt::format("{:.1f}", r.capacity_concurrency)},
      {"prompt_tokens", "prompt tokens", fmt::format("{}", r.prompt_tokens)},
      {"reused_tokens", "reused tokens", fmt::format("{}", r.reused_tokens)},
      {"computed_tokens", "computed tokens",
       fmt::format("{}", r.computed_tokens)},
      {"recomputed_tokens", "recomputed (preemption)",
       fmt::format("{}", r.recomputed_tokens)},
      {"hit_percent", "prompt hit ratio (%)",
       fmt::format("{:.2f}", Percent(r.reused_tokens, r.prompt_tokens))}};
  AddLatencies(f, r);
  f.push_back({"output_tokens_per_s", "output tokens/s*",
               fmt::format("{:.1f}", r.output_tokens_per_s)});
  f.push_back(
      {"makespan_s", "makespan* (s)", fmt::format("{:.1f}", r.makespan_s)});
  f.push_back({"steps", "engine steps", fmt::format("{}", r.steps)});
  f.push_back({"preemptions", "preemptions", fmt::format("{}", r.preemptions)});
  f.push_back(
      {"cow_copies", "copy-on-write copies", fmt::format("{}", r.copies)});
  f.push_back({"evicted_blocks", "evicted blocks",
               fmt::format("{}", r.evicted_blocks)});
  f.push_back({"kv_usage_mean_percent", "KV usage mean/peak (%)",
               fmt::format("{:.1f}", 100 * r.usage_mean),
               "kv_usage_peak_percent",
               fmt::format("{:.1f}", 100 * r.usage_peak)});
  f.push_back({"peak_running", "peak running/waiting",
               fmt::format("{}", r.peak_running), "peak_waiting",
               fmt::format("{}", r.peak_waiting)});
  AddDeployment(f, report);
  AddCacheCounters(f, r);
  AddManagerTimes(f, r);
  f.push_back(
      {"wall_s", "wall time, real (s)", fmt::format("{:.2f}", report.wall_s)});
  return f;
}

// A CSV cell: quoted when it holds a separator.
std::string Cell(const std::string& text) {
  if (text.find_first_of(",\"") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

nlohmann::json Latency(const LatencySummary& s) {
  return {{"mean_s", s.mean_s},
          {"p50_s", s.p50_s},
          {"p90_s", s.p90_s},
          {"p99_s", s.p99_s}};
}

// Every request's figures and the usage over time.
void AddSeries(nlohmann::json& out, const SimulationResult& r) {
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

// Every row of any column, in the order first seen, and each column's
// fields by row.
struct Table {
  std::vector<Field> rows;  // the first column holding each key
  std::vector<std::vector<const Field*>> cells;  // [column][row], or null
};

Table MakeTable(const std::vector<std::vector<Field>>& columns) {
  Table table;
  for (const std::vector<Field>& column : columns) {
    for (const Field& f : column) {
      const bool seen =
          std::any_of(table.rows.begin(), table.rows.end(),
                      [&](const Field& row) { return row.key == f.key; });
      if (!seen) table.rows.push_back(f);
    }
  }
  for (const std::vector<Field>& column : columns) {
    std::vector<const Field*>& cells = table.cells.emplace_back();
    for (const Field& row : table.rows) {
      auto it = std::find_if(column.begin(), column.end(),
                             [&](const Field& f) { return f.key == row.key; });
      cells.push_back(it == column.end() ? nullptr : &*it);
    }
  }
  return table;
}

std::vector<std::vector<Field>> Columns(const std::vector<SimReport>& reports) {
  std::vector<std::vector<Field>> columns;
  for (const SimReport& r : reports) columns.push_back(Fields(r));
  return columns;
}

}  // namespace

void PrintText(const std::vector<SimReport>& reports) {
  const std::vector<std::vector<Field>> columns = Columns(reports);
  const Table table = MakeTable(columns);
  std::size_t width = 12;
  for (const SimReport& r : reports)
    width = std::max(width, r.label.size() + 2);
  fmt::print("{:<38}", "configuration");
  for (const SimReport& r : reports) fmt::print("{:>{}}", r.label, width);
  fmt::print("\n");
  for (std::size_t row = 0; row < table.rows.size(); ++row) {
    fmt::print("{:<38}", table.rows[row].label);
    for (const std::vector<const Field*>& cells : table.cells) {
      fmt::print("{:>{}}", cells[row] ? cells[row]->Shown() : "-", width);
    }
    fmt::print("\n");
  }
  for (const SimReport& r : reports) {
    if (!r.groups.empty()) fmt::print("{}: groups {}\n", r.label, r.groups);
  }
  fmt::print(
      "* modelled by cost model {} (not measured); manager call times are "
      "measured on this machine\n",
      reports[0].cost_model);
}

void PrintCsv(const std::vector<SimReport>& reports) {
  const std::vector<std::vector<Field>> columns = Columns(reports);
  const Table table = MakeTable(columns);
  fmt::print("label,cost_model");
  for (const Field& f : table.rows) {
    fmt::print(",{}", f.key);
    if (!f.key2.empty()) fmt::print(",{}", f.key2);
  }
  fmt::print("\n");
  for (std::size_t c = 0; c < reports.size(); ++c) {
    fmt::print("{},{}", Cell(reports[c].label), Cell(reports[c].cost_model));
    for (std::size_t row = 0; row < table.rows.size(); ++row) {
      const Field* f = table.cells[c][row];
      fmt::print(",{}", f ? Cell(f->text) : "");
      if (!table.rows[row].key2.empty()) {
        fmt::print(",{}", f ? Cell(f->text2) : "");
      }
    }
    fmt::print("\n");
  }
}

nlohmann::json ReportJson(const SimReport& report) {
  const SimulationResult& r = *report.result;
  nlohmann::json out = {{"label", report.label},
                        {"cost_model", report.cost_model},
                        {"times_are_modelled", true},
                        {"wall_time_s", report.wall_s}};
  for (const Field& f : Fields(report)) {
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
  return out;
}

void PrintLoad(const SimReport& report) {
  if (!report.load || report.load->offered_per_s <= 0.0) return;
  const Load& load = *report.load;
  fmt::print(stderr,
             "{}: offered {:.2f} requests/s; the modelled engine served "
             "{:.2f} requests/s\n",
             report.label, load.offered_per_s, load.served_per_s);
  if (load.saturated) {
    fmt::print(stderr,
               "{}: warning: the queue grew without bound (peak {} waiting): "
               "the offered load exceeds the modelled capacity; latencies "
               "measure the backlog\n",
               report.label, load.peak_waiting);
  }
}

}  // namespace hkv::cli
