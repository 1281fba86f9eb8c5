// The text table and CSV of simulation reports: the rows of every report,
// in the order first seen, one column (text) or line (CSV) per report.
#include "sim_print.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "text_wrap.h"

namespace hkv::cli {
namespace {

// A CSV cell: quoted when it holds a separator.
std::string Cell(const std::string& text) {
  if (text.find_first_of(",\"") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Every row of any column, in the order first seen, and each column's
// fields by row.
struct Table {
  std::vector<SimReportRow> rows;  // the first column holding each key
  std::vector<std::vector<const SimReportRow*>>
      cells;  // [column][row], or null
};

Table MakeTable(const std::vector<std::vector<SimReportRow>>& columns) {
  Table table;
  for (const std::vector<SimReportRow>& column : columns) {
    for (const SimReportRow& f : column) {
      const bool seen = std::any_of(
          table.rows.begin(), table.rows.end(),
          [&](const SimReportRow& row) { return row.key == f.key; });
      if (!seen) table.rows.push_back(f);
    }
  }
  for (const std::vector<SimReportRow>& column : columns) {
    std::vector<const SimReportRow*>& cells = table.cells.emplace_back();
    for (const SimReportRow& row : table.rows) {
      auto it =
          std::find_if(column.begin(), column.end(),
                       [&](const SimReportRow& f) { return f.key == row.key; });
      cells.push_back(it == column.end() ? nullptr : &*it);
    }
  }
  return table;
}

std::vector<std::vector<SimReportRow>> Columns(
    std::span<const SimReport> reports) {
  std::vector<std::vector<SimReportRow>> columns;
  for (const SimReport& r : reports) columns.push_back(SimReportRows(r));
  return columns;
}

}  // namespace

void PrintText(std::span<const SimReport> reports) {
  const std::vector<std::vector<SimReportRow>> columns = Columns(reports);
  const Table table = MakeTable(columns);
  std::size_t width = 12;
  for (const SimReport& r : reports)
    width = std::max(width, r.label.size() + 2);
  fmt::print("{:<38}", "configuration");
  for (const SimReport& r : reports) fmt::print("{:>{}}", r.label, width);
  fmt::print("\n");
  for (std::size_t row = 0; row < table.rows.size(); ++row) {
    fmt::print("{:<38}", table.rows[row].label);
    for (const std::vector<const SimReportRow*>& cells : table.cells) {
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

void PrintHitRatioMeaning(const ExperimentOptions& options) {
  PrintWrapped(
      std::string(kPromptHitRatioMeaning) + "; " + HitRatioRegime(options),
      "  ");
}

void PrintCsv(std::span<const SimReport> reports) {
  const std::vector<std::vector<SimReportRow>> columns = Columns(reports);
  const Table table = MakeTable(columns);
  fmt::print("label,cost_model");
  for (const SimReportRow& f : table.rows) {
    fmt::print(",{}", f.key);
    if (!f.key2.empty()) fmt::print(",{}", f.key2);
  }
  fmt::print("\n");
  for (std::size_t c = 0; c < reports.size(); ++c) {
    fmt::print("{},{}", Cell(reports[c].label), Cell(reports[c].cost_model));
    for (std::size_t row = 0; row < table.rows.size(); ++row) {
      const SimReportRow* f = table.cells[c][row];
      fmt::print(",{}", f ? Cell(f->text) : "");
      if (!table.rows[row].key2.empty()) {
        fmt::print(",{}", f ? Cell(f->text2) : "");
      }
    }
    fmt::print("\n");
  }
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
