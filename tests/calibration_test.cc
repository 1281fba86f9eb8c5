// Calibration: the solver, the data file, and a re-run of the fit against
// the bounds the presets are held to (docs/calibration.md).
#include "hkv/calibration.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "sim/nnls.h"

namespace hkv {
namespace {

using ::testing::HasSubstr;

TEST(NonNegativeLeastSquaresTest, SolvesAnExactSystem) {
  // x = (1, 2): rows (1,0) -> 1, (0,1) -> 2, (1,1) -> 3.
  const auto x =
      internal::SolveNonNegative({{1, 0}, {0, 1}, {1, 1}}, {1, 2, 3});
  ASSERT_TRUE(x);
  EXPECT_NEAR((*x)[0], 1.0, 1e-12);
  EXPECT_NEAR((*x)[1], 2.0, 1e-12);
}

TEST(NonNegativeLeastSquaresTest, ClampsAtZero) {
  // Unconstrained: x = (3, -1); with x >= 0 the best is (x0 only) 2.5.
  const auto x = internal::SolveNonNegative({{1, 1}, {1, 0}}, {2, 3});
  ASSERT_TRUE(x);
  EXPECT_NEAR((*x)[0], 2.5, 1e-12);
  EXPECT_EQ((*x)[1], 0.0);
}

std::string DataText() {
  std::ifstream in(HKV_DATA_DIR "/calibration/glm53-flash.json");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(CalibrationDataTest, BadFiguresAreNamed) {
  const auto error = [](const char* text) {
    Result<CalibrationData> d = ParseCalibrationData(text);
    return d ? std::string("parsed") : d.error().message;
  };
  EXPECT_THAT(error(R"({"figures": [{"id": "a"}]})"), HasSubstr("figure 0"));
  EXPECT_THAT(error(R"({"figures": [{"id": "a", "preset": "p",
      "geometry": "1/1/1", "scenario": "x", "value": 1, "bogus": 2}]})"),
              HasSubstr("bogus"));
  EXPECT_THAT(error(R"({"figures": [{"id": "a", "preset": "p",
      "geometry": "1/1/1", "scenario": "x", "value": -1}]})"),
              HasSubstr("value"));
}

class CalibrationFitTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Result<CalibrationData> data = ParseCalibrationData(DataText());
    ASSERT_TRUE(data) << data.error().message;
    Result<CalibrationReport> report = Calibrate(*data, {});
    ASSERT_TRUE(report) << report.error().message;
    report_ = new CalibrationReport(std::move(*report));
  }
  static void TearDownTestSuite() { delete report_; }

  static const FigureResult& Figure(const std::string& id) {
    for (const FigureResult& f : report_->figures) {
      if (f.measured.id == id) return f;
    }
    ADD_FAILURE() << "no figure " << id;
    return report_->figures.front();
  }

  static CalibrationReport* report_;
};
CalibrationReport* CalibrationFitTest::report_ = nullptr;

// Every fitted figure within 10 %, every capacity within 5 % (the
// held-out checks are reported, not bounded).
TEST_F(CalibrationFitTest, FitsEveryFigureWithinTheBounds) {
  ASSERT_EQ(report_->figures.size(), 16u);
  std::size_t fitted = 0;
  for (const FigureResult& f : report_->figures) {
    if (!f.fitted && !f.measured.scenario.empty()) continue;
    fitted += f.fitted ? 1 : 0;
    const double bound = f.measured.scenario.empty() ? 0.05 : 0.10;
    EXPECT_LE(std::abs(f.error), bound) << f.measured.id;
  }
  EXPECT_EQ(fitted, 11u);  // every timed figure of the calibration file
  EXPECT_LE(report_->median_fitted_error, 0.05);
}

// The 32K prefill gap between 2048- and 256-token recurrent pages on the
// DCP4 box (12,759 against 10,200 tokens/s, -20.1 %) within 5 points.
TEST_F(CalibrationFitTest, ReproducesTheRecurrentPageGap) {
  const FigureResult& coarse = Figure("rtx-dcp4-cold-prefill-32k-rec2048");
  const FigureResult& fine = Figure("rtx-dcp4-cold-prefill-32k-rec256");
  const double measured = 10200.0 / 12759.0 - 1.0;
  const double model = fine.model / coarse.model - 1.0;
  EXPECT_NEAR(model, measured, 0.05);
  bool ranked = false;
  for (const RankCheck& k : report_->rankings) {
    if (k.faster_measured == "rtx-dcp4-cold-prefill-32k-rec2048") {
      ranked = true;
      EXPECT_TRUE(k.agrees);
    }
  }
  EXPECT_TRUE(ranked);
}

// The checked-in presets are the fit: re-running it moves no coefficient.
TEST_F(CalibrationFitTest, CheckedInPresetsAreTheFit) {
  ASSERT_EQ(report_->presets.size(), 3u);
  for (const DeploymentPreset& fitted : report_->presets) {
    Result<DeploymentPreset> stored = LoadDeploymentPreset(fitted.name);
    ASSERT_TRUE(stored) << stored.error().message;
    for (std::size_t i = 0; i < kCostCoefficients.size(); ++i) {
      const double a = Coefficient(fitted.cost, i);
      const double b = Coefficient(stored->cost, i);
      EXPECT_NEAR(a, b, 1e-6 * std::max(std::abs(a), std::abs(b)))
          << fitted.name << " " << kCostCoefficients[i];
    }
  }
}

// Held out (leave one out): the prefill figures of GB10 are predicted by a
// fit without them within 10 %.
TEST_F(CalibrationFitTest, PrefillGeneralisesWhenLeftOut) {
  for (const char* id :
       {"gb10-cold-prefill-8k-256", "gb10-cold-prefill-32k-256",
        "gb10-cold-prefill-128k-256", "gb10-cold-prefill-32k-2048r256"}) {
    const FigureResult& f = Figure(id);
    ASSERT_TRUE(f.held_out_error.has_value()) << id;
    EXPECT_LE(std::abs(*f.held_out_error), 0.10) << id;
  }
}

}  // namespace
}  // namespace hkv
