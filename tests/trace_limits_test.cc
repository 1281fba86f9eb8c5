// The Mooncake reader at the limits: numbers beyond a double, lines and
// traces longer than the documented limits, files that cannot be read, and
// a limit that stops the reading.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "hkv/limits.h"
#include "hkv/mooncake_trace.h"
#include "trace_file_fixture.h"
#include "traces/mooncake_reader.h"

namespace hkv {
namespace {

using testing::kGoodLine;
using TraceLimitsTest = testing::TraceFileFixture;

TEST_F(TraceLimitsTest, ReadsAByteOrderMarkAndALastLineWithoutNewline) {
  const std::vector<TraceRequest> trace =
      Read("\xEF\xBB\xBF" + std::string(kGoodLine) + "\n" + kGoodLine);
  EXPECT_EQ(trace.size(), 2u);
}

TEST_F(TraceLimitsTest, ReportsAMissingFileWithTheReason) {
  const std::filesystem::path path = dir_ / "absent.jsonl";
  Result<std::vector<TraceRequest>> trace = ReadMooncakeTrace(path);
  ASSERT_FALSE(trace.has_value());
  EXPECT_EQ(trace.error().message,
            "cannot open " + path.string() + ": No such file or directory");
}

TEST_F(TraceLimitsTest, NamesADirectory) {
  Result<std::vector<TraceRequest>> trace = ReadMooncakeTrace(dir_);
  ASSERT_FALSE(trace.has_value());
  EXPECT_EQ(trace.error().message,
            "cannot read " + dir_.string() + ": is a directory");
}

// A line of exactly kMaxTraceLineBytes (padded with spaces) is read; one
// byte more is refused, naming the line, before the next line is read.
TEST_F(TraceLimitsTest, BoundsTheLineLength) {
  std::string line = kGoodLine;
  line.resize(kMaxTraceLineBytes, ' ');
  EXPECT_EQ(Read(line + "\n" + kGoodLine + "\n").size(), 2u);
  const std::filesystem::path path =
      Write(std::string(kGoodLine) + "\n" + line + " \n" + "not json\n");
  Result<std::vector<TraceRequest>> trace = ReadMooncakeTrace(path);
  ASSERT_FALSE(trace.has_value());
  EXPECT_EQ(trace.error().code, ErrorCode::kCorruption);
  EXPECT_EQ(
      trace.error().message,
      path.string() + ":2: longer than 1048576 bytes (the limit per line)");
}

TEST_F(TraceLimitsTest, RefusesAnEndlessLine) {
  if (!std::filesystem::exists("/dev/zero")) GTEST_SKIP() << "no /dev/zero";
  Result<std::vector<TraceRequest>> trace = ReadMooncakeTrace("/dev/zero");
  ASSERT_FALSE(trace.has_value());
  EXPECT_EQ(trace.error().message,
            "/dev/zero:1: longer than 1048576 bytes (the limit per line)");
}

// The limit stops the reading: the malformed line after it is not read.
TEST_F(TraceLimitsTest, ReadsNoFurtherThanTheLimit) {
  const std::filesystem::path path =
      Write(std::string(kGoodLine) + "\n" + kGoodLine + "\n" + "not json\n");
  Result<std::vector<TraceRequest>> trace = ReadMooncakeTrace(path, 2);
  ASSERT_TRUE(trace.has_value()) << trace.error().message;
  EXPECT_EQ(trace->size(), 2u);
  EXPECT_FALSE(ReadMooncakeTrace(path, 3).has_value());
  EXPECT_EQ(ReadMooncakeTrace(path, 0).value().size(), 0u);
}

// Without a limit within kMaxRequestsPerWorkload the reader reads up to it,
// and one request more is an error; a limit within it stops the reading.
TEST(TraceQuotaTest, FollowsTheLimitPerWorkload) {
  const internal::RequestQuota none = internal::QuotaFor(std::nullopt);
  EXPECT_EQ(none.requests, kMaxRequestsPerWorkload);
  EXPECT_FALSE(none.stops);
  const internal::RequestQuota above =
      internal::QuotaFor(kMaxRequestsPerWorkload + 1);
  EXPECT_EQ(above.requests, kMaxRequestsPerWorkload);
  EXPECT_FALSE(above.stops);
  const internal::RequestQuota within =
      internal::QuotaFor(kMaxRequestsPerWorkload);
  EXPECT_EQ(within.requests, kMaxRequestsPerWorkload);
  EXPECT_TRUE(within.stops);
  EXPECT_EQ(none.TooManyProblem(),
            "more than 1048576 requests (the limit per workload)");
}

// The request after a quota that does not stop is refused at its line
// (with a quota of 3 here: the per-workload limit takes a million lines,
// which the Azure reader's test reads).
TEST_F(TraceLimitsTest, RefusesTheRequestAfterTheQuota) {
  const std::string good(kGoodLine);
  const std::filesystem::path dense =
      Write(good + "\n" + good + "\n" + good + "\n" + good + "\n");
  Result<std::vector<TraceRequest>> trace =
      internal::ReadMooncakeTrace(dense, {.requests = 3, .stops = false});
  ASSERT_FALSE(trace.has_value());
  EXPECT_EQ(trace.error().code, ErrorCode::kCorruption);
  EXPECT_EQ(
      trace.error().message,
      dense.string() + ":4: more than 3 requests (the limit per workload)");
  trace = internal::ReadMooncakeTrace(dense, {.requests = 3, .stops = true});
  ASSERT_TRUE(trace.has_value()) << trace.error().message;
  EXPECT_EQ(trace->size(), 3u);
}

TEST(TraceValidationTest, RefusesMoreTokensThanTheLimitPerRequest) {
  TraceRequest request{.input_length = kMaxTokensPerRequest, .hash_ids = {}};
  request.hash_ids.resize(kMaxTokensPerRequest / kMooncakeBlockTokens);
  EXPECT_TRUE(ValidateTraceRequest(request).has_value());
  request.output_length = 1;
  const Result<void> valid = ValidateTraceRequest(request);
  ASSERT_FALSE(valid.has_value());
  EXPECT_EQ(valid.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THROW(MooncakeTokens(request), UsageError);
}

}  // namespace
}  // namespace hkv
