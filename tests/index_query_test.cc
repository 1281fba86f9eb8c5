// `hkv index`'s query body and answer (tools/hkv/index_query.h): both query
// forms, every way a body can be refused, and the answer's JSON.
#include "index_query.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "hkv/limits.h"

namespace hkv::cli {
namespace {

constexpr std::size_t kSha256 = 32;

// The message a refused body gets, or "" when it is read.
std::string Refusal(std::string_view body, std::size_t digest = kSha256) {
  Result<IndexQuery> query = ParseIndexQuery(body, digest);
  return query ? "" : query.error().message;
}

std::string Hex(std::size_t bytes, char digit = 'a') {
  return std::string(2 * bytes, digit);
}

TEST(IndexQueryTest, ReadsTokens) {
  Result<IndexQuery> q =
      ParseIndexQuery(R"({"tokens": [0, 7, 4294967295]})", kSha256);
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_FALSE(q->by_keys);
  EXPECT_EQ(q->tokens, (std::vector<TokenId>{0, 7, 4294967295U}));
  EXPECT_EQ(q->num_tokens, 3u);
  EXPECT_TRUE(ParseIndexQuery(R"({"tokens": []})", kSha256));
}

TEST(IndexQueryTest, ReadsKeysOfEitherCase) {
  const std::string body = R"({"num_tokens": 40, "keys": [")" + Hex(16, 'F') +
                           R"(", ")" + Hex(16, '0') + R"("]})";
  Result<IndexQuery> q = ParseIndexQuery(body, 16);
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_TRUE(q->by_keys);
  EXPECT_EQ(q->num_tokens, 40u);
  ASSERT_EQ(q->keys.size(), 2u);
  EXPECT_EQ(q->keys[0].Hex(16), Hex(16, 'f'));
  EXPECT_EQ(q->keys[0].bytes[16], 0);  // the digest's bytes only
  EXPECT_EQ(q->keys[1], BlockHash{});
}

TEST(IndexQueryTest, RefusesTokensThatAreNotIds) {
  EXPECT_EQ(Refusal(R"({"tokens": [1, -3]})"), "token 1: -3 is negative");
  EXPECT_EQ(Refusal(R"({"tokens": [1.5]})"), "token 0: 1.5 is not an integer");
  EXPECT_EQ(Refusal(R"({"tokens": [4294967296]})"),
            "token 0: 4294967296 exceeds 2^32 - 1");
  EXPECT_EQ(Refusal(R"({"tokens": [1, "2"]})"),
            "token 1: a string is not a token id");
  EXPECT_EQ(Refusal(R"({"tokens": [[1]]})"),
            "token 0: an array is not a token id");
  EXPECT_EQ(Refusal(R"({"tokens": 5})"),
            "tokens must be an array, not a number");
}

TEST(IndexQueryTest, RefusesKeysOfTheWrongLengthOrNotHex) {
  EXPECT_EQ(Refusal(R"({"keys": [")" + Hex(31) + R"("], "num_tokens": 16})"),
            "key 0: 62 characters, want 64 hex digits (a 32-byte digest)");
  EXPECT_EQ(
      Refusal(R"({"keys": [")" + Hex(32, 'g') + R"("], "num_tokens": 16})"),
      "key 0: not hex");
  EXPECT_EQ(Refusal(R"({"keys": [7], "num_tokens": 16})"),
            "key 0: a number is not a hex string");
}

TEST(IndexQueryTest, RefusesBadShapes) {
  EXPECT_EQ(Refusal("[1, 2]"), "a query is a JSON object, not an array");
  EXPECT_EQ(Refusal(R"({"tokens": [1], "tokens": [2]})"),
            "field tokens given twice");
  EXPECT_EQ(Refusal(R"({"prompt": [1]})"),
            "unknown field \"prompt\" (a query has tokens, or keys and "
            "num_tokens)");
  EXPECT_EQ(Refusal("{}"), "a query has tokens, or keys and num_tokens");
  EXPECT_EQ(Refusal(R"({"tokens": [], "keys": []})"),
            "give tokens or keys, not both");
  EXPECT_EQ(Refusal(R"({"keys": []})"),
            "keys need num_tokens (the prompt's length)");
  EXPECT_EQ(Refusal(R"({"tokens": [1], "num_tokens": 1})"),
            "num_tokens goes with keys; tokens give their own length");
  EXPECT_EQ(Refusal(R"({"keys": [], "num_tokens": 1.5})"),
            "num_tokens must be a whole number, not a fraction");
  EXPECT_EQ(Refusal(R"({"keys": [], "num_tokens": 16777217})"),
            "num_tokens 16777217 exceeds kMaxTokensPerRequest (16777216)");
  EXPECT_NE(Refusal("{\"tokens\": [1"), "");
  EXPECT_NE(Refusal(R"({"tokens": [1]} x)").find("malformed JSON"),
            std::string::npos);
  EXPECT_NE(Refusal("").find("malformed JSON at byte"), std::string::npos);
}

TEST(IndexQueryTest, StopsPastTheTokenLimit) {
  std::string body = R"({"tokens": [)";
  for (std::uint32_t i = 0; i < kMaxTokensPerRequest; ++i) body += "1,";
  EXPECT_EQ(Refusal(body + "1]}"),
            "more than 16777216 tokens (kMaxTokensPerRequest)");
  body.back() = ']';
  EXPECT_EQ(Refusal(body + "}"), "");
}

TEST(IndexQueryTest, DeepNestingIsRefusedAtOnce) {
  EXPECT_EQ(Refusal(std::string(1'000'000, '[')),
            "a query is a JSON object, not an array");
  EXPECT_EQ(Refusal(R"({"tokens": )" + std::string(1'000'000, '[')),
            "token 0: an array is not a token id");
}

TEST(IndexQueryTest, AnswerNamesEachInstanceAndTheBest) {
  const std::vector<InstanceMatch> matches = {
      {.hybrid_tokens = 64, .attention_tokens = 192},
      {.hybrid_tokens = 128, .attention_tokens = 128},
      {.hybrid_tokens = 128, .attention_tokens = 144}};
  const std::vector<std::string> endpoints = {"tcp://a:1", "tcp://b:1",
                                              "tcp://\"c\":1"};
  const nlohmann::json answer =
      nlohmann::json::parse(AnswerJson(matches, endpoints));
  EXPECT_EQ(answer["best"], 1);  // the first of the longest
  ASSERT_EQ(answer["instances"].size(), 3u);
  EXPECT_EQ(answer["instances"][0],
            nlohmann::json({{"instance", 0},
                            {"endpoint", "tcp://a:1"},
                            {"hybrid_tokens", 64},
                            {"attention_tokens", 192}}));
  EXPECT_EQ(answer["instances"][2]["endpoint"], "tcp://\"c\":1");
  EXPECT_EQ(BestInstance(std::vector<InstanceMatch>(2)), 0u);
}

TEST(IndexQueryTest, ErrorJsonSurvivesBytesThatAreNotUtf8) {
  const nlohmann::json error =
      nlohmann::json::parse(ErrorJson("bad \xff key \"x\""));
  EXPECT_EQ(error["error"], "bad \xef\xbf\xbd key \"x\"");
}

}  // namespace
}  // namespace hkv::cli
