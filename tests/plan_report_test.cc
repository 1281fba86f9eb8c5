// hkv/plan_report.h: what `hkv plan` and hkv.plan report, from the library.
#include "hkv/plan_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hkv {
namespace {

using ::testing::HasSubstr;

const PlanOptions kOptions = {
    .tp = 4, .budget_bytes = 33ull << 30, .context_tokens = 262144};

TEST(PlanReportTest, LoadsAPresetOrAFileAndNamesWhatFailed) {
  Result<ModelSpec> preset = LoadModel("glm53-flash-like");
  ASSERT_TRUE(preset) << preset.error().message;
  EXPECT_EQ(preset->name, "glm53-flash-like");
  EXPECT_TRUE(IsModelFile("models/x.json"));
  EXPECT_FALSE(IsModelFile("llama-3.1-8b"));
  Result<ModelSpec> missing = LoadModel("no/such/model.json");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kIoError);
  EXPECT_THAT(missing.error().message, HasSubstr("no/such/model.json"));
  const std::string bad = ::testing::TempDir() + "/bad_model.json";
  std::ofstream(bad) << "{\"name\": 1}";
  Result<ModelSpec> unreadable = LoadModel(bad);
  ASSERT_FALSE(unreadable);
  EXPECT_EQ(unreadable.error().code, ErrorCode::kCorruption);
  EXPECT_THAT(unreadable.error().message, HasSubstr(bad + ": "));
  EXPECT_EQ(LoadModel("no-such-preset").error().code, ErrorCode::kNotFound);
}

TEST(PlanReportTest, PlansEachGeometryAsAskedAndNamesTheBadOne) {
  const ModelSpec model = LoadModel("glm53-flash-like").value();
  const std::vector<std::string> asked = {"2048/256/256", "auto"};
  Result<PlanReport> report = PlanGeometries(model, kOptions, asked);
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->rows.size(), 2u);
  EXPECT_EQ(report->rows[0].label, "2048/256/256");
  EXPECT_EQ(report->rows[0].plan.geometry, (Geometry{2048, 256, 256}));
  EXPECT_EQ(report->rows[1].label, "auto");
  const std::vector<std::string> bad = {"2048/256/256", "2048/0/256"};
  Result<PlanReport> refused = PlanGeometries(model, kOptions, bad);
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message, HasSubstr("geometry 2048/0/256: "));
}

// A search row stands for every recurrent block with the same capacity.
TEST(PlanReportTest, SearchMergesRecurrentBlocksOfEqualCapacity) {
  const ModelSpec model = LoadModel("glm53-flash-like").value();
  Result<PlanReport> report = SearchPlans(model, kOptions, 2048, 5);
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_FALSE(report->rows.empty());
  EXPECT_LE(report->rows.size(), 5u);
  for (std::size_t i = 1; i < report->rows.size(); ++i) {
    EXPECT_NE(report->rows[i].label, report->rows[i - 1].label);
    EXPECT_LE(report->rows[i].plan.geometry.hash_unit, 2048u);
  }
  bool merged = false;
  for (const PlanRow& row : report->rows) {
    merged = merged || row.label.find("..") != std::string::npos;
  }
  EXPECT_TRUE(merged);  // the split layout: state pages ignore R
}

TEST(PlanReportTest, JsonHoldsTheInputsAndEveryRow) {
  const ModelSpec model = LoadModel("glm53-flash-like").value();
  const std::vector<std::string> asked = {"256/256/256"};
  const PlanReport report = PlanGeometries(model, kOptions, asked).value();
  const nlohmann::json j = nlohmann::json::parse(PlanReportJson(report));
  EXPECT_EQ(j["model"], "glm53-flash-like");
  EXPECT_EQ(j["tp"], 4);
  EXPECT_EQ(j["budget_bytes"], 33ull << 30);
  ASSERT_EQ(j["plans"].size(), 1u);
  const nlohmann::json& row = j["plans"][0];
  EXPECT_EQ(row["geometry"], "256/256/256");
  EXPECT_EQ(row["shared"]["tokens"], report.rows[0].plan.shared.tokens);
  EXPECT_EQ(row["groups"].size(), report.rows[0].plan.groups.size());
}

}  // namespace
}  // namespace hkv
