// The token-id trace: prompts are the given token ids, prefixes are shared,
// sessions chain their turns, LoRA and salt split the key space, and every
// bad line is refused naming the line and the field.
#include "hkv/token_trace.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hkv/workload.h"

namespace hkv {
namespace {

std::vector<SimRequest> Parse(const std::string& text) {
  Result<std::vector<SimRequest>> w = ParseTokenTrace(text);
  EXPECT_TRUE(w.has_value()) << w.error().message;
  return w ? *w : std::vector<SimRequest>{};
}

TEST(TokenTraceTest, PromptsAreTheTokensGivenAfterTheirPrefix) {
  const std::vector<SimRequest> w = Parse(
      "{\"define\": \"sys\", \"token_ids\": [7, 8, 9]}\n"
      "\n"
      "{\"arrival_s\": 0.5, \"prefix\": \"sys\", \"token_ids\": [1, 2],"
      " \"output_tokens\": 4}\n"
      "{\"arrival_s\": 0.5, \"prefix\": \"sys\", \"token_ids\": [3],"
      " \"output_tokens\": 1}\n"
      "{\"token_ids\": [4294967295], \"output_tokens\": 2}\n");
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(PromptTokens(w[0]), (std::vector<TokenId>{7, 8, 9, 1, 2}));
  EXPECT_EQ(PromptTokens(w[1]), (std::vector<TokenId>{7, 8, 9, 3}));
  EXPECT_EQ(PromptTokens(w[2]), (std::vector<TokenId>{4294967295u}));
  EXPECT_EQ(w[0].output_length, 4u);
  EXPECT_EQ(w[2].arrival_s, 0.5);  // the line before's
  // The prefix is one segment, shared: the requests' prefixes compare equal.
  EXPECT_EQ(w[0].prompt[0], w[1].prompt[0]);
  EXPECT_NE(w[0].output_id, w[1].output_id);
  EXPECT_TRUE(ValidateWorkload(w).has_value());
}

TEST(TokenTraceTest, ASessionsTurnsWaitForTheTurnBefore) {
  const std::vector<SimRequest> w = Parse(
      "{\"session\": \"a\", \"turn\": 1, \"token_ids\": [1], "
      "\"output_tokens\": 1}\n"
      "{\"session\": \"b\", \"turn\": 1, \"token_ids\": [2], "
      "\"output_tokens\": 1}\n"
      "{\"session\": \"a\", \"turn\": 2, \"think_s\": 1.5, \"token_ids\": [3],"
      " \"output_tokens\": 1}\n");
  ASSERT_EQ(w.size(), 3u);
  EXPECT_FALSE(w[0].after.has_value());
  EXPECT_FALSE(w[1].after.has_value());
  EXPECT_EQ(w[2].after, std::optional<std::size_t>{0});
  EXPECT_EQ(w[2].delay_s, 1.5);
}

TEST(TokenTraceTest, LoraAndSaltGiveAKeySpaceOfTheirOwn) {
  const std::vector<SimRequest> w = Parse(
      "{\"token_ids\": [1, 2, 3], \"output_tokens\": 1}\n"
      "{\"token_ids\": [1, 2, 3], \"output_tokens\": 1, \"lora\": \"x\"}\n"
      "{\"token_ids\": [1, 2, 3], \"output_tokens\": 1, \"lora\": \"x\"}\n"
      "{\"token_ids\": [1, 2, 3], \"output_tokens\": 1, \"salt\": \"x\"}\n");
  ASSERT_EQ(w.size(), 4u);
  const std::vector<TokenId> plain = PromptTokens(w[0]);
  EXPECT_NE(PromptTokens(w[1]), plain);
  EXPECT_EQ(PromptTokens(w[1]), PromptTokens(w[2]));
  EXPECT_NE(PromptTokens(w[3]), PromptTokens(w[1]));  // lora x != salt x
  EXPECT_EQ(PromptTokens(w[1]).size(), plain.size());
}

TEST(TokenTraceTest, TheLimitStopsReading) {
  Result<std::vector<SimRequest>> w = ParseTokenTrace(
      "{\"token_ids\": [1], \"output_tokens\": 1}\n"
      "{\"token_ids\": [2], \"output_tokens\": 1}\n"
      "this line is never read\n",
      2);
  ASSERT_TRUE(w.has_value()) << w.error().message;
  EXPECT_EQ(w->size(), 2u);
}

struct BadLine {
  std::string line;
  std::string message;
};

class TokenTraceBadLineTest : public ::testing::TestWithParam<BadLine> {};

TEST_P(TokenTraceBadLineTest, NamesTheLineAndTheField) {
  const Result<std::vector<SimRequest>> w = ParseTokenTrace(
      "{\"define\": \"p\", \"token_ids\": [1]}\n"
      "{\"arrival_s\": 2, \"token_ids\": [1], \"output_tokens\": 1}\n" +
      GetParam().line + "\n");
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().code, ErrorCode::kCorruption);
  EXPECT_EQ(w.error().message, "token trace line 3: " + GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Lines, TokenTraceBadLineTest,
    ::testing::Values(
        BadLine{"{\"token_ids\": [1]", "not one JSON object"},
        BadLine{"[1, 2]", "not one JSON object"},
        BadLine{"{\"token_ids\": [1], \"output_tokens\": 1, \"tokens\": 1}",
                "unknown field \"tokens\""},
        BadLine{"{\"token_ids\": [1]}", "output_tokens is missing"},
        BadLine{"{\"token_ids\": [1], \"output_tokens\": 0}",
                "output_tokens must be at least 1"},
        BadLine{"{\"token_ids\": [1], \"output_tokens\": -3}",
                "output_tokens must be an integer in [0, 16777216]"},
        BadLine{"{\"token_ids\": [1.5], \"output_tokens\": 1}",
                "token_ids[0] must be an integer in [0, 4294967295]"},
        BadLine{"{\"token_ids\": [4294967296], \"output_tokens\": 1}",
                "token_ids[0] must be an integer in [0, 4294967295]"},
        BadLine{"{\"token_ids\": \"1 2\", \"output_tokens\": 1}",
                "token_ids must be an array"},
        BadLine{"{\"token_ids\": [], \"output_tokens\": 1}",
                "the prompt has no tokens"},
        BadLine{"{\"prefix\": \"q\", \"token_ids\": [], \"output_tokens\": 1}",
                "prefix \"q\" is not defined on an earlier line"},
        BadLine{"{\"define\": \"p\", \"token_ids\": [2]}",
                "prefix \"p\" is defined twice"},
        BadLine{"{\"arrival_s\": 1, \"token_ids\": [1], \"output_tokens\": 1}",
                "arrival_s goes backwards"},
        BadLine{"{\"arrival_s\": -1, \"token_ids\": [1], \"output_tokens\": 1}",
                "arrival_s must be seconds in [0, 1e+12]"},
        BadLine{"{\"turn\": 2, \"token_ids\": [1], \"output_tokens\": 1}",
                "turn and think_s need a session"},
        BadLine{
            "{\"session\": \"s\", \"token_ids\": [1], \"output_tokens\": 1}",
            "a session's request needs turn"},
        BadLine{"{\"lora\": 3, \"token_ids\": [1], \"output_tokens\": 1}",
                "lora must be a string"},
        BadLine{"{\"token_ids\": [1], \"output_tokens\": 16777216}",
                "more than 16777216 tokens (prompt and output; the limit per "
                "request)"}));

TEST(TokenTraceTest, ATurnNotAfterTheSessionsLastIsRefused) {
  const Result<std::vector<SimRequest>> w = ParseTokenTrace(
      "{\"session\": \"s\", \"turn\": 2, \"token_ids\": [1], "
      "\"output_tokens\": 1}\n"
      "{\"session\": \"s\", \"turn\": 2, \"token_ids\": [1], "
      "\"output_tokens\": 1}\n");
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().message,
            "token trace line 2: turn 2 of session \"s\" is not after its "
            "turn 2");
}

TEST(TokenTraceTest, AMissingFileIsAnIoErrorNamingIt) {
  const Result<std::vector<SimRequest>> w =
      ReadTokenTrace("/nonexistent/trace.jsonl");
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().code, ErrorCode::kIoError);
  EXPECT_NE(w.error().message.find("/nonexistent/trace.jsonl"),
            std::string::npos);
}

}  // namespace
}  // namespace hkv
