// PrintComparison (compare_print.h).
#include "compare_print.h"

#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "text_wrap.h"

namespace hkv::cli {
namespace {

constexpr std::size_t kLabelWidth = 30;
constexpr std::size_t kCellWidth = 17;
constexpr std::size_t kColumnsPerBlock = 4;  // 30 + 4 x 17 = 98 columns

using Cell = std::function<std::string(const ConfigurationOutcome&)>;
struct Row {
  std::string label;
  Cell cell;
};

double Percent(std::uint64_t part, std::uint64_t whole) {
  return whole == 0
             ? 0.0
             : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

std::string Figure(const ConfigurationOutcome& o, std::string_view kind,
                   std::string_view name, const char* format) {
  for (const ScenarioOutcome& s : o.scenarios) {
    if (s.spec.substr(0, s.spec.find(':')) != kind) continue;
    if (name == "reused_tokens") return fmt::format("{}", s.reused_tokens);
    for (const ScenarioFigure& f : s.figures) {
      if (f.name == name) return fmt::format(fmt::runtime(format), f.value);
    }
  }
  return "-";
}

std::string Micros(const LookupTimes& t) {
  if (!t.p50_ns) return fmt::format("n/a ({})", t.calls);
  return fmt::format("{:.1f}/{:.1f}", static_cast<double>(*t.p50_ns) / 1e3,
                     static_cast<double>(*t.p99_ns) / 1e3);
}

std::string Tokens(std::uint64_t part, std::uint64_t whole) {
  return fmt::format("{} {:.1f}%", part, Percent(part, whole));
}

std::vector<Row> CapacityRows() {
  return {
      {"capacity: engine pool tokens",
       [](const auto& o) {
         return o.config.capacity
                    ? fmt::format("{}", o.config.capacity->engine_pool_tokens)
                    : "-";
       }},
      {"capacity: engine max conc.",
       [](const auto& o) {
         return o.config.capacity
                    ? fmt::format("{:.2f}x",
                                  o.config.capacity->engine_max_concurrency)
                    : "-";
       }},
      {"capacity: hkv whole requests",
       [](const auto& o) {
         return o.config.capacity
                    ? fmt::format("{}", o.config.capacity->whole_requests)
                    : "-";
       }},
      {"hash unit (tokens)",
       [](const auto& o) {
         return fmt::format("{}", o.config.cache.keys.hash_unit);
       }},
  };
}

std::vector<Row> TraceRows() {
  return {
      {"trace: reused tokens",
       [](const auto& o) {
         return Tokens(o.trace.reused_tokens, o.trace.prompt_tokens);
       }},
      {"  of which resends",
       [](const auto& o) { return fmt::format("{}", o.reuse.resend_tokens); }},
      {"  multi-turn continuations",
       [](const auto& o) {
         return fmt::format("{}", o.reuse.continuation_tokens);
       }},
      {"  shared-prefix junctions",
       [](const auto& o) {
         return fmt::format("{}", o.reuse.junction_tokens);
       }},
      {"trace: TTFT p50/p99 (s)*",
       [](const auto& o) {
         return fmt::format("{:.2f}/{:.2f}", o.trace.ttft.p50_s,
                            o.trace.ttft.p99_s);
       }},
      {"trace: evicted chains (req)",
       [](const auto& o) {
         return fmt::format("{}", o.trace.evicted_chains.requests);
       }},
  };
}

std::vector<Row> ScenarioRows() {
  const auto figure = [](const char* kind, const char* name,
                         const char* format) -> Cell {
    return [=](const auto& o) { return Figure(o, kind, name, format); };
  };
  return {
      {"cold-prefill: TTFT (s)*", figure("cold-prefill", "ttft_s", "{:.2f}")},
      {"resend: reused tokens", figure("resend", "reused_tokens", "")},
      {"resend: 2nd TTFT (s)*", figure("resend", "ttft_second_s", "{:.3f}")},
      {"shared-prefix: reused", figure("shared-prefix", "reused_tokens", "")},
      {"needle: reused tokens", figure("needle", "reused_tokens", "")},
      {"decode-cell: tokens/s*",
       figure("decode-cell", "decode_tokens_per_s", "{:.1f}")},
  };
}

std::vector<Row> LookupRows() {
  std::vector<Row> rows;
  const char* names[kNumHitClasses] = {"cold miss", "sparse hit", "warm hit",
                                       "evicted miss"};
  for (std::size_t h = 0; h < kNumHitClasses; ++h) {
    rows.push_back({fmt::format("lookup {} p50/p99 us", names[h]),
                    [h](const auto& o) { return Micros(o.lookups[h]); }});
  }
  return rows;
}

std::vector<Row> Rows() {
  std::vector<Row> rows = CapacityRows();
  for (auto more : {TraceRows(), ScenarioRows(), LookupRows()}) {
    rows.insert(rows.end(), more.begin(), more.end());
  }
  return rows;
}

// `label`'s words packed into lines that fit a cell (a longer word alone).
std::vector<std::string> WrapWords(const std::string& label) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < label.size()) {
    std::size_t end = label.find(' ', start);
    if (end == std::string::npos) end = label.size();
    const std::string word = label.substr(start, end - start);
    if (!lines.empty() && lines.back().size() + 1 + word.size() < kCellWidth) {
      lines.back() += " " + word;
    } else {
      lines.push_back(word);
    }
    start = end + 1;
  }
  return lines;
}

void PrintBlock(const Comparison& c, std::size_t first, std::size_t end) {
  const std::vector<Row> rows = Rows();
  // A label too long for its cell (a geometry, its pool layout and
  // retention) goes on as many lines as its words need.
  std::vector<std::vector<std::string>> heads;
  std::size_t num_lines = 1;
  for (std::size_t i = first; i < end; ++i) {
    heads.push_back(WrapWords(c.configurations[i].config.label));
    num_lines = std::max(num_lines, heads.back().size());
  }
  for (std::size_t line = 0; line < num_lines; ++line) {
    fmt::print("{:<{}}", line == 0 ? "configuration" : "", kLabelWidth);
    for (const std::vector<std::string>& head : heads) {
      fmt::print(" {:>{}}", line < head.size() ? head[line] : "",
                 kCellWidth - 1);
    }
    fmt::print("\n");
  }
  for (const Row& row : rows) {
    fmt::print("{:<{}}", row.label, kLabelWidth);
    for (std::size_t i = first; i < end; ++i) {
      fmt::print("{:>{}}", row.cell(c.configurations[i]), kCellWidth);
    }
    fmt::print("\n");
  }
}

std::string Ranking(const Comparison& c, const Recommendation& r) {
  std::string out;
  for (std::size_t k = 0; k < r.ranking.size(); ++k) {
    out += (k == 0            ? ""
            : k == r.eligible ? " | "
                              : " > ") +
           c.candidates[r.ranking[k]].label;
  }
  return out;
}

void PrintSensitivity(const Comparison& c) {
  fmt::print(
      "sensitivity (ranked by {}; after '|': beyond {:.0f} % of the "
      "best capacity):\n",
      ObjectiveName(c.objective), 100 * c.capacity_tolerance);
  // A configuration whose label names its retention (placement) keeps it.
  PrintWrapped("  as run (" + c.retention +
                   " unless the label says): " + Ranking(c, c.recommendation),
               "    ");
  if (c.interval0) {
    PrintWrapped("  retention interval 0 (placement as run): " +
                     Ranking(c, *c.interval0),
                 "    ");
  }
  std::string bound = "  unlimited-pool bound on reuse:";
  for (const ConfigurationOutcome& o : c.configurations) {
    if (!o.unlimited_reused_tokens) continue;
    bound +=
        fmt::format(" {} {:.1f}%,", o.config.label,
                    Percent(*o.unlimited_reused_tokens, o.trace.prompt_tokens));
  }
  if (bound.back() == ',')
    PrintWrapped(bound.substr(0, bound.size() - 1), "    ");
}

std::string Quoted(const std::string& text) {
  if (text.find_first_of(",\"") == std::string::npos) return text;
  std::string out = "\"";
  for (char ch : text)
    out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

// The recommendation's part for the reference engine today.
void PrintOnTheEngine(const Comparison& c) {
  fmt::print("on the reference engine today (vLLM {}):\n", kEngineCommit);
  for (const std::string& line : c.on_the_engine) {
    PrintWrapped("  " + line, "    ");
  }
}

}  // namespace

void PrintSearch(const Comparison& c) {
  fmt::print("deployment {}, trace {} ({} requests)\n",
             c.preset.empty() ? "(flags)" : c.preset,
             c.trace.empty() ? "bundled conversation" : c.trace,
             c.trace_requests);
  fmt::print(
      "ranked by {} among the configurations within {:.0f} % of the "
      "best capacity,\nthen the others by capacity\n",
      ObjectiveName(c.objective), 100 * c.capacity_tolerance);
  std::size_t width = 28;  // the labels' column
  for (const ConfigurationOutcome& o : c.configurations) {
    width = std::max(width, o.config.label.size() + 2);
  }
  fmt::print("{:>4}  {:<{}}{:>12}{:>14}{:>18}\n", "rank", "configuration",
             width, "capacity", "reused", "TTFT p50/p99 (s)*");
  const Recommendation& r = c.recommendation;
  for (std::size_t k = 0; k < r.ranking.size(); ++k) {
    const ConfigurationOutcome& o = c.configurations[r.ranking[k]];
    const Candidate& x = c.candidates[r.ranking[k]];
    fmt::print("{:>4}  {:<{}}{:>11.2f}x{:>13.1f}%{:>18}\n", k + 1,
               o.config.label, width, x.capacity,
               Percent(o.trace.reused_tokens, o.trace.prompt_tokens),
               fmt::format("{:.2f}/{:.2f}", x.ttft_p50_s, x.ttft_p99_s));
    if (k + 1 == r.eligible && k + 1 < r.ranking.size()) {
      fmt::print("      (below: beyond {:.0f} % of the best capacity)\n",
                 100 * c.capacity_tolerance);
    }
  }
  fmt::print("recommendation:\n");
  PrintWrapped("  " + r.why, "    ");
  if (!c.beyond_reference.empty()) {
    fmt::print("beyond the reference:\n");
    PrintWrapped("  " + c.beyond_reference, "    ");
  }
  PrintOnTheEngine(c);
  fmt::print("* modelled by cost model {}\n", c.cost_model);
}

void PrintComparisonCsv(const Comparison& c) {
  const std::vector<Row> rows = Rows();
  fmt::print("label");
  for (const Row& row : rows) fmt::print(",{}", Quoted(row.label));
  fmt::print(",recommended\n");
  for (std::size_t i = 0; i < c.configurations.size(); ++i) {
    fmt::print("{}", Quoted(c.configurations[i].config.label));
    for (const Row& row : rows) {
      fmt::print(",{}", Quoted(row.cell(c.configurations[i])));
    }
    fmt::print(",{}\n", i == c.recommendation.winner ? 1 : 0);
  }
}

void PrintComparison(const Comparison& c) {
  fmt::print("deployment {}, trace {} ({} requests)\n",
             c.preset.empty() ? "(flags)" : c.preset,
             c.trace.empty() ? "bundled conversation" : c.trace,
             c.trace_requests);
  for (const std::string& skipped : c.skipped) {
    fmt::print("left out (the model cannot run it): {}\n", skipped);
  }
  for (std::size_t i = 0; i < c.configurations.size(); i += kColumnsPerBlock) {
    if (i > 0) fmt::print("\n");
    PrintBlock(c, i, std::min(c.configurations.size(), i + kColumnsPerBlock));
  }
  for (const ConfigurationOutcome& o : c.configurations) {
    if (!o.load || !o.load->saturated) continue;
    fmt::print(
        "{}: saturated: offered {:.2f} requests/s, served {:.2f}; the "
        "queue grew without bound (peak {} waiting)\n",
        o.config.label, o.load->offered_per_s, o.load->served_per_s,
        o.load->peak_waiting);
  }
  fmt::print("groups:\n");
  for (const ConfigurationOutcome& o : c.configurations) {
    PrintWrapped("  " + o.config.label + ": " + o.config.groups, "    ");
  }
  PrintSensitivity(c);
  fmt::print(
      "recommendation ({}, among those within {:.0f} % of the best "
      "capacity):\n",
      ObjectiveName(c.objective), 100 * c.capacity_tolerance);
  PrintWrapped("  " + c.recommendation.why, "    ");
  if (!c.beyond_reference.empty()) {
    fmt::print("beyond the reference:\n");
    PrintWrapped("  " + c.beyond_reference, "    ");
  }
  PrintOnTheEngine(c);
  fmt::print(
      "* modelled by cost model {}; lookup times measured here, "
      "fastest of repeats,\n  n/a below {} calls (count shown)\n",
      c.cost_model, kMinTimedLookups);
}

void PrintSweep(std::span<const BudgetSweepPoint> points) {
  if (points.empty()) return;
  const Comparison& first = points.front().comparison;
  fmt::print("deployment {}, trace {} ({} requests)\n",
             first.preset.empty() ? "(flags)" : first.preset,
             first.trace.empty() ? "bundled conversation" : first.trace,
             first.trace_requests);
  fmt::print(
      "trace hit ratio (reused / prompt tokens) by KV budget per rank\n");
  // Eight budgets a line: the labels' column + 8 x 9 columns.
  constexpr std::size_t kPerLine = 8;
  std::size_t width = 28;
  for (const ConfigurationOutcome& o : first.configurations) {
    width = std::max(width, o.config.label.size() + 2);
  }
  for (std::size_t from = 0; from < points.size(); from += kPerLine) {
    const std::size_t to = std::min(points.size(), from + kPerLine);
    fmt::print("{:<{}}", "configuration \\ GiB", width);
    for (std::size_t p = from; p < to; ++p) {
      fmt::print("{:>9}", fmt::format("{:g}", points[p].budget_gib));
    }
    fmt::print("\n");
    for (std::size_t i = 0; i < first.configurations.size(); ++i) {
      fmt::print("{:<{}}", first.configurations[i].config.label, width);
      for (std::size_t p = from; p < to; ++p) {
        const SimulationResult& t =
            points[p].comparison.configurations[i].trace;
        fmt::print("{:>8.1f}%", Percent(t.reused_tokens, t.prompt_tokens));
      }
      fmt::print("\n");
    }
  }
  fmt::print("details and charts: --json, then python3 -m hkv.plot\n");
}

}  // namespace hkv::cli
