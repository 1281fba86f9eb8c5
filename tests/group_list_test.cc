#include "hkv/group_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"

namespace hkv {
namespace {

using ::testing::HasSubstr;

std::vector<GroupSpec> Parse(std::string_view text) {
  Result<std::vector<GroupSpec>> groups = ParseGroupList(text);
  EXPECT_TRUE(groups.has_value()) << groups.error().message;
  return groups.value_or(std::vector<GroupSpec>{});
}

TEST(GroupListTest, ParsesTheDocumentedExample) {
  const std::vector<GroupSpec> groups =
      Parse("full:2048,recurrent:256,sliding:2048:window=4096:eagle");
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].kind, GroupKind::kFullAttention);
  EXPECT_EQ(groups[0].block_size, 2048u);
  EXPECT_EQ(groups[0].speculation, Speculation::kNone);
  EXPECT_EQ(groups[0].dcp_layout, DcpLayout::kSharded);
  EXPECT_EQ(groups[1].kind, GroupKind::kRecurrent);
  EXPECT_EQ(groups[1].block_size, 256u);
  EXPECT_EQ(groups[1].recurrent_mode, RecurrentMode::kAlign);
  EXPECT_EQ(groups[1].speculative_blocks, 0u);
  EXPECT_EQ(groups[2].kind, GroupKind::kSlidingWindow);
  EXPECT_EQ(groups[2].block_size, 2048u);
  EXPECT_EQ(groups[2].sliding_window, 4096u);
  EXPECT_EQ(groups[2].speculation, Speculation::kEagle);
}

TEST(GroupListTest, ParsesEveryOption) {
  const std::vector<GroupSpec> groups = Parse(
      "chunked:64:chunk=8192:replicated, recurrent:16:mode=all:spec=2:eagle,"
      "recurrent:16:mode=align:spec=0,full:16:replicated:eagle");
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(groups[0].kind, GroupKind::kChunkedLocal);
  EXPECT_EQ(groups[0].chunk_size, 8192u);
  EXPECT_EQ(groups[0].dcp_layout, DcpLayout::kReplicated);
  EXPECT_EQ(groups[1].recurrent_mode, RecurrentMode::kAll);
  EXPECT_EQ(groups[1].speculative_blocks, 2u);
  EXPECT_EQ(groups[1].speculation, Speculation::kEagle);
  EXPECT_EQ(groups[2].recurrent_mode, RecurrentMode::kAlign);
  EXPECT_EQ(groups[2].speculative_blocks, 0u);
  EXPECT_EQ(groups[3].dcp_layout, DcpLayout::kReplicated);
  EXPECT_EQ(groups[3].speculation, Speculation::kEagle);
  EXPECT_EQ(Parse("scratch:64:blocks=2")[0].scratch_blocks, 2u);
  EXPECT_EQ(Parse("recurrent:16:mode=none")[0].recurrent_mode,
            RecurrentMode::kNone);
  EXPECT_EQ(Parse("recurrent:16:export")[0].checkpoint_blocks, 1u);
  EXPECT_EQ(Parse("full:16:output_window=128")[0].output_window, 128u);
}

TEST(GroupListTest, KindNamesAreTheSyntaxNames) {
  const std::pair<std::string, GroupKind> cases[] = {
      {"full:16", GroupKind::kFullAttention},
      {"sliding:16:window=1", GroupKind::kSlidingWindow},
      {"chunked:16:chunk=1", GroupKind::kChunkedLocal},
      {"recurrent:16", GroupKind::kRecurrent},
      {"scratch:64:blocks=2", GroupKind::kScratch}};
  for (const auto& [text, kind] : cases) {
    const std::vector<GroupSpec> groups = Parse(text);
    ASSERT_EQ(groups.size(), 1u) << text;
    EXPECT_EQ(groups[0].kind, kind) << text;
    EXPECT_EQ(text.substr(0, text.find(':')), GroupKindName(kind));
  }
}

// A malformed list, the group its error must name and the problem.
struct Malformed {
  std::string text;
  std::string group;
  std::string problem;
};

class GroupListErrorTest : public ::testing::TestWithParam<Malformed> {};

TEST_P(GroupListErrorTest, NamesTheGroupAndTheProblem) {
  const Result<std::vector<GroupSpec>> groups = ParseGroupList(GetParam().text);
  ASSERT_FALSE(groups.has_value());
  EXPECT_EQ(groups.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(groups.error().message, HasSubstr(GetParam().group));
  EXPECT_THAT(groups.error().message, HasSubstr(GetParam().problem));
}

INSTANTIATE_TEST_SUITE_P(
    GroupLists, GroupListErrorTest,
    ::testing::Values(
        Malformed{"", "", "empty group list"},
        Malformed{"full:16,,full:16", "group 1 \"\"", "empty group"},
        Malformed{"mamba:16", "group 0 \"mamba:16\"",
                  "unknown kind \"mamba\" (full, sliding, chunked, "
                  "recurrent or scratch)"},
        Malformed{"full:16,full", "group 1 \"full\"", "missing block size"},
        Malformed{"full:", "group 0 \"full:\"", "block size \"\" is not"},
        Malformed{"full:0", "group 0", "block size must be at least 1, got 0"},
        Malformed{"full:16k", "group 0", "block size \"16k\" is not"},
        Malformed{"full:-16", "group 0", "block size \"-16\" is not"},
        Malformed{"full:4294967296", "group 0", "\"4294967296\" is not"},
        Malformed{"full:16:fast", "group 0", "unknown option \"fast\""},
        Malformed{"full:16:speed=2", "group 0", "unknown option \"speed=\""},
        Malformed{"full:16::eagle", "group 0", "empty option"},
        Malformed{"sliding:16", "group 0 \"sliding:16\"",
                  "sliding needs window=W"},
        Malformed{"sliding:16:window=0", "group 0",
                  "window must be at least 1, got 0"},
        Malformed{"sliding:16:window=", "group 0", "window \"\" is not"},
        Malformed{"chunked:16", "group 0", "chunked needs chunk=C"},
        Malformed{"full:16:window=64", "group 0",
                  "option window= applies to sliding groups, not full"},
        Malformed{"sliding:16:window=64:mode=all", "group 0",
                  "option mode= applies to recurrent groups, not sliding"},
        Malformed{"recurrent:16:mode=some", "group 0",
                  "mode must be align, all or none, got \"some\""},
        Malformed{"recurrent:16:spec=x", "group 0", "spec \"x\" is not"},
        Malformed{"scratch:64", "group 0", "scratch needs blocks=N"},
        Malformed{"full:16:eagle:eagle", "group 0", "option eagle given twice"},
        Malformed{"full:16:export", "group 0",
                  "option export applies to recurrent groups, not full"},
        Malformed{"sliding:16:window=4:output_window=4", "group 0",
                  "option output_window= applies to full groups, not sliding"},
        Malformed{"sliding:16:window=1:window=2", "group 0",
                  "option window given twice"}),
    [](const ::testing::TestParamInfo<Malformed>& test) {
      // Unique by the index: problems repeat across groups.
      return testing::Identifier(test.param.problem) +
             std::to_string(test.index);
    });

}  // namespace
}  // namespace hkv
