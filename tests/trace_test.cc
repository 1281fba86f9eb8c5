#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "hkv/mooncake_trace.h"
#include "hkv/replay.h"
#include "replay_test_util.h"
#include "test_util.h"
#include "trace_file_fixture.h"

namespace hkv {
namespace {

using ::testing::HasSubstr;

using testing::kGoodLine;
using testing::TraceFileFixture;

class TraceReaderTest : public TraceFileFixture {};

TEST_F(TraceReaderTest, ReadsEveryFieldAndTrailingBlankLines) {
  const std::vector<TraceRequest> trace = Read(
      std::string(kGoodLine) + "\r\n" +
      R"({"hash_ids": [0, 2, 3], "input_length": 1025, "output_length": 0,)"
      R"( "timestamp": 1000000000000000, "note": "ignored"})"
      "\n\n  \n");
  ASSERT_EQ(trace.size(), 2u);
  EXPECT_EQ(trace[0].timestamp_ms, 0u);
  EXPECT_EQ(trace[0].input_length, 600u);
  EXPECT_EQ(trace[0].output_length, 7u);
  EXPECT_EQ(trace[0].hash_ids, (std::vector<std::uint64_t>{0, 1}));
  EXPECT_EQ(trace[1].timestamp_ms, 1000000000000000u);  // the limit
  EXPECT_EQ(trace[1].input_length, 1025u);
  EXPECT_EQ(trace[1].hash_ids, (std::vector<std::uint64_t>{0, 2, 3}));
}

TEST_F(TraceReaderTest, ReadsAnEmptyFile) { EXPECT_TRUE(Read("").empty()); }

TEST_F(TraceReaderTest, ReportsAMissingFileAsIoError) {
  const std::filesystem::path path = dir_ / "absent.jsonl";
  Result<std::vector<TraceRequest>> trace = ReadMooncakeTrace(path);
  ASSERT_FALSE(trace.has_value());
  EXPECT_EQ(trace.error().code, ErrorCode::kIoError);
  EXPECT_THAT(trace.error().message, HasSubstr(path.string()));
}

TEST_F(TraceReaderTest, ReportsADirectoryAsIoError) {
  Result<std::vector<TraceRequest>> trace = ReadMooncakeTrace(dir_);
  ASSERT_FALSE(trace.has_value());
  EXPECT_EQ(trace.error().code, ErrorCode::kIoError);
}

TEST_F(TraceReaderTest, RejectsABlankLineBeforeTheLastRequest) {
  const std::filesystem::path path =
      Write(std::string(kGoodLine) + "\n\n" + kGoodLine + "\n");
  Result<std::vector<TraceRequest>> trace = ReadMooncakeTrace(path);
  ASSERT_FALSE(trace.has_value());
  EXPECT_EQ(trace.error().code, ErrorCode::kCorruption);
  EXPECT_THAT(trace.error().message,
              HasSubstr(path.string() + ":2: blank line"));
}

// A malformed second line and the problem its error must name.
struct MalformedLine {
  std::string line;
  std::string problem;
};

class TraceMalformedLineTest
    : public TraceFileFixture,
      public ::testing::WithParamInterface<MalformedLine> {};

TEST_P(TraceMalformedLineTest, NamesFileLineAndProblem) {
  const std::filesystem::path path =
      Write(std::string(kGoodLine) + "\n" + GetParam().line + "\n" + kGoodLine +
            "\n");
  Result<std::vector<TraceRequest>> trace = ReadMooncakeTrace(path);
  ASSERT_FALSE(trace.has_value());
  EXPECT_EQ(trace.error().code, ErrorCode::kCorruption);
  EXPECT_THAT(trace.error().message, HasSubstr(path.string() + ":2: "));
  EXPECT_THAT(trace.error().message, HasSubstr(GetParam().problem));
}

INSTANTIATE_TEST_SUITE_P(
    TraceLines, TraceMalformedLineTest,
    ::testing::Values(
        MalformedLine{R"({"timestamp": 0, "input_length": 6)", "not JSON"},
        MalformedLine{"[0, 600, 7, [0, 1]]", "not a JSON object, got array"},
        MalformedLine{
            R"({"timestamp": 0, "output_length": 7, "hash_ids": [0, 1]})",
            R"(missing field "input_length")"},
        MalformedLine{
            R"({"timestamp": 0, "input_length": 600, "output_length": 7})",
            R"(missing field "hash_ids")"},
        MalformedLine{
            R"({"timestamp": 0, "input_length": "600", "output_length": 7, "hash_ids": [0, 1]})",
            R"("input_length" must be a non-negative integer, got string)"},
        MalformedLine{
            R"({"timestamp": 0, "input_length": 600, "output_length": 1.5, "hash_ids": [0, 1]})",
            R"("output_length" must be a non-negative integer, got 1.5)"},
        MalformedLine{
            R"({"timestamp": -3, "input_length": 600, "output_length": 7, "hash_ids": [0, 1]})",
            R"("timestamp" is negative (-3))"},
        MalformedLine{
            R"({"timestamp": 0, "input_length": 600, "output_length": 7, "hash_ids": [0, -1]})",
            R"("hash_ids[1]" is negative (-1))"},
        MalformedLine{
            R"({"timestamp": 0, "input_length": 600, "output_length": 7, "hash_ids": 0})",
            R"("hash_ids" must be an array, got number)"},
        MalformedLine{
            R"({"timestamp": 0, "input_length": 4294967296, "output_length": 7,)"
            R"( "hash_ids": [0]})",
            R"("input_length" is out of range (4294967296 > 4294967295))"},
        MalformedLine{
            R"({"timestamp": 0, "input_length": 600, "output_length": 7, "hash_ids": [0]})",
            R"("hash_ids" has 1 ids; input_length 600 needs 2)"},
        MalformedLine{
            R"({"timestamp": 0, "input_length": 0, "output_length": 7, "hash_ids": []})",
            R"("input_length" is 0)"},
        // kMaxInputSeconds = 1e12 s is 10^15 ms.
        MalformedLine{
            R"({"timestamp": 1000000000000001, "input_length": 600, "output_length": 7, "hash_ids": [0, 1]})",
            R"("timestamp" is out of range (1000000000000001 > 1000000000000000))"},
        // Numbers beyond a double: nlohmann refuses them while parsing.
        MalformedLine{
            R"({"timestamp": 1e400, "input_length": 600, "output_length": 7, "hash_ids": [0, 1]})",
            R"("timestamp" holds number '1e400', out of range of a double)"},
        MalformedLine{
            R"({"timestamp": 0, "note": -1e400, "input_length": 600, "output_length": 7, "hash_ids": [0, 1]})",
            R"("note" holds number '-1e400', out of range of a double)"},
        MalformedLine{
            R"({"timestamp": 0, "input_length": 600, "output_length": 7, "hash_ids": [0, 2e308]})",
            R"("hash_ids" holds number '2e308', out of range of a double)"},
        MalformedLine{R"([1e999])", "number '1e999' is out of range"},
        // 2^24 tokens per request at most, prompt and output together.
        MalformedLine{
            R"({"timestamp": 0, "input_length": 16777217, "output_length": 0, "hash_ids": []})",
            R"("input_length" 16777217 + "output_length" 0 tokens exceed the limit of 16777216 tokens per request)"},
        MalformedLine{
            R"({"timestamp": 0, "input_length": 600, "output_length": 4294967295, "hash_ids": [0, 1]})",
            R"("input_length" 600 + "output_length" 4294967295 tokens exceed the limit)"}),
    [](const ::testing::TestParamInfo<MalformedLine>& test) {
      return testing::Identifier(test.param.problem);
    });

// A workload's arrivals may not decrease: a line earlier than the one
// before it is refused, naming it (fuzz/regressions: the reader took
// timestamps in any order). Equal timestamps are in order.
TEST_F(TraceReaderTest, RefusesATimestampBeforeThePreviousOne) {
  const std::string line =
      R"(, "input_length": 600, "output_length": 7, "hash_ids": [0, 1]})";
  const std::filesystem::path path =
      Write(R"({"timestamp": 5000)" + line + "\n" + R"({"timestamp": 5000)" +
            line + "\n" + R"({"timestamp": 4999)" + line + "\n");
  const Result<std::vector<TraceRequest>> trace = ReadMooncakeTrace(path);
  ASSERT_FALSE(trace.has_value());
  EXPECT_EQ(trace.error().code, ErrorCode::kCorruption);
  EXPECT_EQ(trace.error().message,
            path.string() +
                R"(:3: "timestamp" 4999 is before the previous request's 5000)"
                " (a trace is in time order)");
}

TEST_F(TraceReaderTest, AcceptsEqualTimestamps) {
  EXPECT_EQ(Read(std::string(kGoodLine) + "\n" + kGoodLine + "\n").size(), 2u);
}

TEST(TraceTokensTest, HasInputLengthTokensInsideTheVocabulary) {
  const std::vector<TokenId> tokens =
      MooncakeTokens({.input_length = 1000, .hash_ids = {4, 9}});
  ASSERT_EQ(tokens.size(), 1000u);
  for (TokenId t : tokens) EXPECT_LT(t, kMooncakeVocabSize);
}

// The derivation documented in mooncake_trace.h, written out independently.
std::uint64_t ReferenceSplitMix64(std::uint64_t x) {
  std::uint64_t z = x + 0x9e3779b97f4a7c15u;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

TEST(TraceTokensTest, FollowsTheDocumentedDerivation) {
  const std::vector<TokenId> tokens =
      MooncakeTokens({.input_length = 600, .hash_ids = {7, 3}});
  for (std::uint64_t i : {0u, 1u, 511u, 512u, 599u}) {
    const std::uint64_t id = i < 512 ? 7 : 3;
    EXPECT_EQ(tokens[i],
              ReferenceSplitMix64(ReferenceSplitMix64(id) + i % 512) % 151936)
        << "token " << i;
  }
}

TEST(TraceTokensTest, IsDeterministic) {
  const TraceRequest request{.input_length = 1500, .hash_ids = {1, 2, 3}};
  EXPECT_EQ(MooncakeTokens(request), MooncakeTokens(request));
}

TEST(TraceTokensTest, EqualIdPrefixesGiveEqualTokenPrefixes) {
  const std::vector<TokenId> a =
      MooncakeTokens({.input_length = 1300, .hash_ids = {5, 6, 7}});
  const std::vector<TokenId> b =
      MooncakeTokens({.input_length = 1536, .hash_ids = {5, 6, 9}});
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + 1024, b.begin()));
  EXPECT_FALSE(std::equal(a.begin() + 1024, a.end(), b.begin() + 1024));
}

TEST(TraceTokensTest, ACutBlockIsAPrefixOfTheSameFullBlock) {
  const std::vector<TokenId> cut =
      MooncakeTokens({.input_length = 600, .hash_ids = {5, 6}});
  const std::vector<TokenId> full =
      MooncakeTokens({.input_length = 1100, .hash_ids = {5, 6, 8}});
  EXPECT_TRUE(std::equal(cut.begin(), cut.end(), full.begin()));
}

TEST(TraceTokensTest, DifferentIdsGiveDifferentBlocks) {
  EXPECT_NE(MooncakeTokens({.input_length = 16, .hash_ids = {1}}),
            MooncakeTokens({.input_length = 16, .hash_ids = {2}}));
}

TEST(TraceTokensTest, RejectsAnInvalidRequest) {
  EXPECT_THROW(MooncakeTokens({.input_length = 600, .hash_ids = {1}}),
               UsageError);
}

// Block size 16, hash unit 16: only full 16-token blocks are cached, and a
// hit is capped at N - 1 tokens, then floored to whole blocks.
//   0: ids [0],    100 tokens: nothing cached; hit 0. Caches 100/16 = 6
//      blocks (96 tokens of id 0).
//   1: ids [0, 1], 600 tokens: id 0's first 96 tokens are cached; hit 96.
//      Caches 600/16 = 37 blocks (592 tokens).
//   2: ids [0, 1], 592 tokens: all 592 cached, but the cap 591 floors to
//      576; hit 576.
//   3: ids [2],     50 tokens: a different first id; hit 0.
//   4: ids [0, 3], 700 tokens: id 0's full 512 tokens are cached (by 1);
//      id 3's are not; hit 512.
// Hits 0 + 96 + 576 + 0 + 512 = 1184 of 100 + 600 + 592 + 50 + 700 = 2042.
constexpr char kGoldenTrace[] =
    R"({"timestamp": 0, "input_length": 100, "output_length": 1, "hash_ids": [0]}
{"timestamp": 1, "input_length": 600, "output_length": 1, "hash_ids": [0, 1]}
{"timestamp": 2, "input_length": 592, "output_length": 1, "hash_ids": [0, 1]}
{"timestamp": 3, "input_length": 50, "output_length": 1, "hash_ids": [2]}
{"timestamp": 4, "input_length": 700, "output_length": 1, "hash_ids": [0, 3]}
)";

using ReplayTest = TraceFileFixture;

TEST_F(ReplayTest, GoldenTraceAtBlockSize16) {
  const ReplayResult r =
      testing::Replayed(Read(kGoldenTrace), {.block_size = 16});
  EXPECT_EQ(r.requests, 5u);
  EXPECT_EQ(r.prompt_tokens, 2042u);
  EXPECT_EQ(r.hit_tokens, 1184u);
  EXPECT_EQ(r.evicted_blocks, 0u);
  EXPECT_EQ(r.rejected_requests, 0u);
  EXPECT_LE(r.lookup_ns_median, r.lookup_ns_p99);
}

TEST_F(ReplayTest, KeyFunctionDoesNotChangeHits) {
  const ReplayResult r = testing::Replayed(
      Read(kGoldenTrace),
      {.block_size = 16, .key_function = KeyFunction::kXxh3_128Cbor});
  EXPECT_EQ(r.hit_tokens, 1184u);
}

// Capacity 112 tokens: 7 usable blocks. Requests 1 (38 blocks), 2 (37) and
// 4 (44) cannot fit and are rejected. Request 0 takes all 7 blocks and
// caches 6; its uncached tail block is freed to the front of the queue, the
// cached ones behind it. Request 3 (4 blocks, hit 0) reuses the tail block
// and evicts 3 cached ones.
TEST_F(ReplayTest, RejectsRequestsLargerThanThePool) {
  const ReplayResult r = testing::Replayed(
      Read(kGoldenTrace), {.block_size = 16, .capacity_tokens = 112});
  EXPECT_EQ(r.requests, 5u);
  EXPECT_EQ(r.prompt_tokens, 2042u);
  EXPECT_EQ(r.hit_tokens, 0u);
  EXPECT_EQ(r.rejected_requests, 3u);
  EXPECT_EQ(r.evicted_blocks, 3u);
}

// 7 conversations of 10 turns, interleaved: turn t of conversation c has
// ids c*100 + 0..t and 512t + 300 tokens. Unbounded, turn t >= 1 hits what
// turn t - 1 cached: 512(t - 1) + 288 tokens (its 300-token tail block
// floored to 288). Hits 7 * sum_{t=1..9} (512(t - 1) + 288) = 7 * 21024.
std::vector<TraceRequest> Conversations() {
  std::vector<TraceRequest> trace;
  for (std::uint32_t t = 0; t < 10; ++t) {
    for (std::uint64_t c = 0; c < 7; ++c) {
      TraceRequest request{.timestamp_ms = trace.size(),
                           .input_length = 512 * t + 300};
      for (std::uint64_t i = 0; i <= t; ++i)
        request.hash_ids.push_back(c * 100 + i);
      trace.push_back(std::move(request));
    }
  }
  return trace;
}

TEST_F(ReplayTest, UnboundedConversationsHitThePreviousTurn) {
  const ReplayResult r = testing::Replayed(Conversations(), {.block_size = 16});
  EXPECT_EQ(r.requests, 70u);
  EXPECT_EQ(r.prompt_tokens, 7u * 26040u);
  EXPECT_EQ(r.hit_tokens, 7u * 21024u);
  EXPECT_EQ(r.evicted_blocks, 0u);
}

TEST_F(ReplayTest, LimitedCapacityHitsAtMostTheUnboundedFigure) {
  const ReplayResult unbounded =
      testing::Replayed(Conversations(), {.block_size = 16});
  const ReplayResult limited = testing::Replayed(
      Conversations(), {.block_size = 16, .capacity_tokens = 8192});
  EXPECT_EQ(limited.requests, 70u);
  EXPECT_EQ(limited.rejected_requests, 0u);
  EXPECT_GT(limited.evicted_blocks, 0u);
  EXPECT_LE(limited.hit_tokens, unbounded.hit_tokens);
}

TEST_F(ReplayTest, ReportsProgressEveryThousandRequestsAndAtTheEnd) {
  std::vector<TraceRequest> trace;
  for (std::uint64_t i = 0; i < 2001; ++i) {
    trace.push_back({.input_length = 1, .hash_ids = {i}});
  }
  std::vector<std::size_t> calls;
  testing::Replayed(trace,
                    {.progress = [&](std::size_t done, std::size_t total) {
                      EXPECT_EQ(total, 2001u);
                      calls.push_back(done);
                    }});
  EXPECT_EQ(calls, (std::vector<std::size_t>{1000, 2000, 2001}));
}

TEST_F(ReplayTest, RejectsBadOptionsNamingTheNumbers) {
  const std::vector<TraceRequest> trace = Read(kGoldenTrace);
  Error e = testing::ReplayFailure(trace, {.block_size = 0});
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("block size"));
  e = testing::ReplayFailure(trace, {.block_size = 16, .hash_unit = 5});
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(e.message,
              HasSubstr("hash unit 5 does not divide block size 16"));
  e = testing::ReplayFailure(trace, {.block_size = 16, .capacity_tokens = 10});
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(e.message,
              HasSubstr("capacity of 10 tokens is below one block of 16"));
}

TEST_F(ReplayTest, RejectsAnInvalidRequestNamingItsIndex) {
  const Error e = testing::ReplayFailure(
      {{.input_length = 5, .hash_ids = {1}}, {.input_length = 5}}, {});
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(e.message, HasSubstr("trace request 1"));
}

}  // namespace
}  // namespace hkv
