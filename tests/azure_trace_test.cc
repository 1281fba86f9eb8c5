// The Azure trace reader's errors: each names the line and the column, and
// nothing beyond the documented limits is read or allocated.
#include "hkv/azure_trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "hkv/limits.h"
#include "test_util.h"
#include "trace_file_fixture.h"

namespace hkv {
namespace {

constexpr char kHeader[] = "TIMESTAMP,ContextTokens,GeneratedTokens\n";

// A bad row (the trace's line 3) and the error it must give.
struct BadRow {
  std::string row;
  std::string message;
};

class AzureBadRowTest : public ::testing::TestWithParam<BadRow> {};

TEST_P(AzureBadRowTest, NamesLineAndColumn) {
  const Result<std::vector<SimRequest>> w = ParseAzureTrace(
      std::string(kHeader) + "1.0,5,5\n" + GetParam().row + "\n", {});
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().code, ErrorCode::kCorruption);
  EXPECT_EQ(w.error().message, "Azure trace line 3: " + GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    AzureRows, AzureBadRowTest,
    ::testing::Values(
        BadRow{"2.0,x,5", R"(ContextTokens "x" is not a whole number >= 0)"},
        BadRow{"2.0,5,-1",
               R"(GeneratedTokens "-1" is not a whole number >= 0)"},
        BadRow{"2.0,4294967295,5",
               "ContextTokens 4294967295 exceeds the limit of 16777216 tokens "
               "per request"},
        BadRow{"2.0,99999999999999999999,5",
               "ContextTokens 99999999999999999999 exceeds the limit of "
               "16777216 tokens per request"},
        BadRow{"2.0,16777216,1",
               "ContextTokens 16777216 + GeneratedTokens 1 exceed the limit "
               "of 16777216 tokens per request"},
        BadRow{"2.0,0,5", "ContextTokens is 0; a prompt needs a token"},
        BadRow{"2.0,5", "2 columns; 3 needed"},
        BadRow{
            "nan,5,5",
            R"(TIMESTAMP "nan" is neither YYYY-MM-DD HH:MM:SS[.fraction] nor finite seconds)"},
        BadRow{
            "inf,5,5",
            R"(TIMESTAMP "inf" is neither YYYY-MM-DD HH:MM:SS[.fraction] nor finite seconds)"},
        BadRow{
            "1e400,5,5",
            R"(TIMESTAMP "1e400" is neither YYYY-MM-DD HH:MM:SS[.fraction] nor finite seconds)"},
        BadRow{
            "2023-13-01 00:00:00,5,5",
            R"(TIMESTAMP "2023-13-01 00:00:00" is neither YYYY-MM-DD HH:MM:SS[.fraction] nor finite seconds)"},
        BadRow{
            "2023-11-16 25:00:00,5,5",
            R"(TIMESTAMP "2023-11-16 25:00:00" is neither YYYY-MM-DD HH:MM:SS[.fraction] nor finite seconds)"},
        BadRow{
            "2023-11-16 18:15:nan,5,5",
            R"(TIMESTAMP "2023-11-16 18:15:nan" is neither YYYY-MM-DD HH:MM:SS[.fraction] nor finite seconds)"},
        BadRow{"0.5,5,5", "timestamp goes backwards"},
        BadRow{"1e300,5,5",
               "timestamp 1e+300 s after the first exceeds the limit of "
               "1e+12 s"}),
    [](const ::testing::TestParamInfo<BadRow>& test) {
      return testing::Identifier(test.param.row);
    });

// fuzz/regressions/azure/inf_timestamp: an infinite first timestamp made
// every arrival NaN (inf - inf).
TEST(AzureTraceTest, RefusesAnInfiniteFirstTimestamp) {
  const Result<std::vector<SimRequest>> w =
      ParseAzureTrace(std::string(kHeader) + "inf,1,1\n", {});
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().message,
            R"(Azure trace line 2: TIMESTAMP "inf" is neither YYYY-MM-DD )"
            R"(HH:MM:SS[.fraction] nor finite seconds)");
}

TEST(AzureTraceTest, ReadsAByteOrderMarkAndALastLineWithoutNewline) {
  const Result<std::vector<SimRequest>> w =
      ParseAzureTrace("\xEF\xBB\xBF" + std::string(kHeader) + "1,5,5", {});
  ASSERT_TRUE(w.has_value()) << w.error().message;
  EXPECT_EQ(w->size(), 1u);
}

TEST(AzureTraceTest, NamesTheSharedFraction) {
  const Result<std::vector<SimRequest>> w =
      ParseAzureTrace(kHeader, {.shared_fraction = 1.5});
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().message, "shared fraction must be in [0, 1], got 1.5");
}

TEST(AzureTraceTest, ParsesNoFurtherThanTheLimit) {
  const std::string csv = std::string(kHeader) + "1,5,5\n2,5,5\n2,x,5\n";
  const Result<std::vector<SimRequest>> w = ParseAzureTrace(csv, {}, 2);
  ASSERT_TRUE(w.has_value()) << w.error().message;
  EXPECT_EQ(w->size(), 2u);
  EXPECT_FALSE(ParseAzureTrace(csv, {}, 3).has_value());
}

TEST(AzureTraceTest, RefusesMoreRequestsThanTheLimitPerWorkload) {
  std::string csv = kHeader;
  csv.reserve(csv.size() + 6 * (kMaxRequestsPerWorkload + 1));
  for (std::uint64_t i = 0; i <= kMaxRequestsPerWorkload; ++i) csv += "0,1,1\n";
  const Result<std::vector<SimRequest>> w = ParseAzureTrace(csv, {});
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().message,
            "Azure trace line 1048578: more than 1048576 requests (the "
            "limit per workload)");
  EXPECT_EQ(ParseAzureTrace(csv, {}, 3).value().size(), 3u);
}

TEST(AzureTraceTest, RefusesALineLongerThanTheLimit) {
  const std::string csv =
      std::string(kHeader) + "1,5," + std::string(kMaxTraceLineBytes, '5');
  const Result<std::vector<SimRequest>> w = ParseAzureTrace(csv, {});
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().message,
            "Azure trace line 2: longer than 1048576 bytes (the limit per "
            "line)");
}

using AzureFileTest = testing::TraceFileFixture;

TEST_F(AzureFileTest, ErrorsNameTheFileAndLine) {
  const std::filesystem::path path =
      Write(std::string(kHeader) + "1,5,5\n2,5,five\n");
  const Result<std::vector<SimRequest>> w = ReadAzureTrace(path, {});
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().message,
            path.string() +
                R"(:3: GeneratedTokens "five" is not a whole number >= 0)");
}

TEST_F(AzureFileTest, NamesAMissingFileADirectoryAndAnEndlessOne) {
  const std::filesystem::path missing = dir_ / "absent.csv";
  Result<std::vector<SimRequest>> w = ReadAzureTrace(missing, {});
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().code, ErrorCode::kIoError);
  EXPECT_EQ(w.error().message,
            "cannot open " + missing.string() + ": No such file or directory");
  w = ReadAzureTrace(dir_, {});
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().message,
            "cannot read " + dir_.string() + ": is a directory");
  if (!std::filesystem::exists("/dev/zero")) GTEST_SKIP() << "no /dev/zero";
  w = ReadAzureTrace("/dev/zero", {});
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().message,
            "/dev/zero:1: longer than 1048576 bytes (the limit per line)");
}

}  // namespace
}  // namespace hkv
