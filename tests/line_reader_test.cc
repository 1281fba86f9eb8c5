// The bounded line reader under the trace readers: line ends, the byte
// order mark, the length limit and how it reports a file it cannot open.
#include "traces/line_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace hkv::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Status = LineReader::Status;

// Every line of `text` read with a limit of `max_bytes`, and the status
// that ended the reading.
struct Lines {
  std::vector<std::string> lines;
  Status end = Status::kLine;
};
Lines ReadAll(const std::string& text, std::uint64_t max_bytes) {
  std::istringstream in(text);
  LineReader reader(in, max_bytes);
  Lines out;
  while ((out.end = reader.Next()) == Status::kLine) {
    out.lines.emplace_back(reader.line());
  }
  return out;
}

TEST(LineReaderTest, SplitsLinesAndDropsCrlfAndTheByteOrderMark) {
  const Lines r = ReadAll(
      "\xEF\xBB\xBF"
      "a\r\nbc\n\n d \r\nlast",
      100);
  EXPECT_THAT(r.lines, ElementsAre("a", "bc", "", " d ", "last"));
  EXPECT_EQ(r.end, Status::kEnd);
}

TEST(LineReaderTest, KeepsAByteOrderMarkAfterTheFirstLine) {
  const Lines r = ReadAll(
      "a\n\xEF\xBB\xBF"
      "b\n",
      100);
  EXPECT_THAT(r.lines, ElementsAre("a",
                                   "\xEF\xBB\xBF"
                                   "b"));
}

TEST(LineReaderTest, KeepsNulBytes) {
  const Lines r = ReadAll(std::string("a\0b\n", 4), 100);
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_EQ(r.lines[0], std::string("a\0b", 3));
}

TEST(LineReaderTest, AcceptsALineOfExactlyTheLimit) {
  const Lines r = ReadAll("12345\n123\n12345", 5);
  EXPECT_THAT(r.lines, ElementsAre("12345", "123", "12345"));
  EXPECT_EQ(r.end, Status::kEnd);
}

TEST(LineReaderTest, RefusesALongerLineAndStops) {
  std::istringstream in("ok\n123456\nnext\n");
  LineReader reader(in, 5);
  ASSERT_EQ(reader.Next(), Status::kLine);
  EXPECT_EQ(reader.Next(), Status::kTooLong);
  EXPECT_EQ(reader.line_number(), 2u);
  EXPECT_EQ(reader.Next(), Status::kTooLong);  // stays refused
  EXPECT_EQ(reader.TooLongProblem(),
            "longer than 5 bytes (the limit per line)");
}

TEST(LineReaderTest, RefusesALongLastLineWithoutNewline) {
  EXPECT_EQ(ReadAll("123456", 5).end, Status::kTooLong);
}

TEST(LineReaderTest, ReadsNoFurtherThanTheLimitOfAnEndlessLine) {
  if (!std::filesystem::exists("/dev/zero")) GTEST_SKIP() << "no /dev/zero";
  Result<std::ifstream> in = OpenForReading("/dev/zero");
  ASSERT_TRUE(in.has_value()) << in.error().message;
  LineReader reader(*in, 1 << 16);
  EXPECT_EQ(reader.Next(), Status::kTooLong);
  EXPECT_EQ(reader.line_number(), 1u);
}

TEST(LineReaderTest, OpenNamesThePathAndTheReason) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  Result<std::ifstream> in = OpenForReading(dir);
  ASSERT_FALSE(in.has_value());
  EXPECT_EQ(in.error().code, ErrorCode::kIoError);
  EXPECT_EQ(in.error().message,
            "cannot read " + dir.string() + ": is a directory");
  const std::filesystem::path missing = dir / "hkv-line-reader-no-such-file";
  in = OpenForReading(missing);
  ASSERT_FALSE(in.has_value());
  EXPECT_EQ(in.error().code, ErrorCode::kIoError);
  EXPECT_EQ(in.error().message,
            "cannot open " + missing.string() + ": No such file or directory");
}

}  // namespace
}  // namespace hkv::internal
