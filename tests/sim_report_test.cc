#include "hkv/sim_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace hkv {
namespace {

using nlohmann::json;

const SimReportRow& RowOf(const std::vector<SimReportRow>& rows,
                          const std::string& key) {
  const auto it =
      std::find_if(rows.begin(), rows.end(),
                   [&key](const SimReportRow& r) { return r.key == key; });
  EXPECT_NE(it, rows.end()) << key;
  return *it;
}

SimulationResult SmallResult() {
  SimulationResult r;
  r.requests = 3;
  r.finished = 3;
  r.prompt_tokens = 300;
  r.reused_tokens = 100;
  r.ttft.p50_s = 0.0625;  // a tie at 3 digits: rounds to even
  r.usage_mean = 0.5;
  r.usage_peak = 0.75;
  r.peak_running = 2;
  r.peak_waiting = 1;
  r.groups = {{.kind = "full", .block_size = 16, .cached_blocks = 7},
              {.kind = "full", .block_size = 32, .cached_blocks = 5}};
  return r;
}

TEST(SimReportTest, RowsShowFiguresAsTheTextTablePrintsThem) {
  const SimulationResult r = SmallResult();
  const std::vector<ScenarioFigure> figures = {{"ttft_s", 1.0 / 3}};
  const std::vector<SimReportRow> rows =
      SimReportRows({.label = "a", .result = &r, .figures = &figures});
  EXPECT_EQ(RowOf(rows, "hit_percent").text, "33.33");
  EXPECT_EQ(RowOf(rows, "ttft_s_p50").text, "0.062");
  EXPECT_EQ(RowOf(rows, "kv_usage_mean_percent").Shown(), "50.0/75.0");
  EXPECT_EQ(RowOf(rows, "peak_running").key2, "peak_waiting");
  EXPECT_EQ(RowOf(rows, "cached_blocks_full").text, "12");  // per kind
  EXPECT_EQ(RowOf(rows, "scenario_ttft_s").text, "0.333333");
  EXPECT_EQ(RowOf(rows, "lookup_cold_median_ns").text, "-");  // no calls
  EXPECT_EQ(rows.back().key, "wall_s");
}

TEST(SimReportTest, JsonTableHoldsTheRowsAsNumbers) {
  const SimulationResult r = SmallResult();
  const json j = json::parse(SimReportJson(
      {.label = "a", .result = &r, .cost_model = "m", .load = Load{}}));
  EXPECT_EQ(j["label"], "a");
  EXPECT_EQ(j["table"]["requests"], 3);
  EXPECT_EQ(j["table"]["hit_percent"], 33.33);
  EXPECT_EQ(j["table"]["peak_waiting"], 1);
  EXPECT_TRUE(j["table"]["lookup_cold_median_ns"].is_null());
  EXPECT_EQ(j["saturation"]["saturated"], false);
  EXPECT_EQ(j["miss_causes"]["evicted"]["requests"], 0);
  EXPECT_EQ(j["groups"].size(), 2u);
}

TEST(SimReportTest, SeveralReportsAreAnArray) {
  const SimulationResult r = SmallResult();
  const std::vector<SimReport> reports = {{.label = "a", .result = &r},
                                          {.label = "b", .result = &r}};
  const json j = json::parse(SimReportsJson(reports));
  ASSERT_TRUE(j.is_array());
  EXPECT_EQ(j[1]["label"], "b");
  EXPECT_TRUE(j[0]["saturation"].is_null());  // closed loop
}

TEST(SimReportTest, ReportsOfRunsCarryTheLoadOnlyOpenLoop) {
  SimRuns runs{.cost_model = "m"};
  SimRun run;
  run.config.label = "x";
  run.result = SmallResult();
  runs.runs.push_back(std::move(run));
  EXPECT_FALSE(ReportsOf(runs, {})[0].load);
  const std::vector<SimReport> open = ReportsOf(runs, {.open_loop = true});
  ASSERT_EQ(open.size(), 1u);
  EXPECT_TRUE(open[0].load);
  EXPECT_EQ(open[0].label, "x");
  EXPECT_EQ(open[0].result, &runs.runs[0].result);
}

}  // namespace
}  // namespace hkv
