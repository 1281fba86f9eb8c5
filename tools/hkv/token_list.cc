#include "token_list.h"

#include <cstdint>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "hkv/limits.h"
#include "token_json.h"

namespace hkv::cli {
namespace {

using Json = nlohmann::json;

// Streams the array's integers straight into `tokens`: no JSON tree, and the
// first bad element ends the parse with `error` naming it.
class TokenSax final : public nlohmann::json_sax<Json> {
 public:
  explicit TokenSax(std::vector<TokenId>& tokens) : tokens_(tokens) {}

  std::string error;

  bool number_unsigned(std::uint64_t value) override {
    if (!InArray("an integer")) return false;
    if (std::string problem = UnsignedTokenProblem(value); !problem.empty()) {
      return Bad(problem);
    }
    if (tokens_.size() >= kMaxTokensPerRequest) {
      return Fail("more than " + std::to_string(kMaxTokensPerRequest) +
                  " tokens (kMaxTokensPerRequest)");
    }
    tokens_.push_back(static_cast<TokenId>(value));
    return true;
  }
  bool number_integer(std::int64_t value) override {
    return InArray("an integer") && Bad(NegativeTokenProblem(value));
  }
  bool number_float(double /*value*/, const std::string& text) override {
    return InArray("a number") && Bad(FloatTokenProblem(text, text));
  }
  bool null() override { return NotAToken("null"); }
  bool boolean(bool /*value*/) override { return NotAToken("a boolean"); }
  bool string(std::string& /*value*/) override { return NotAToken("a string"); }
  bool binary(Json::binary_t& /*value*/) override {
    return NotAToken("binary");
  }
  bool start_object(std::size_t /*size*/) override {
    return NotAToken("an object");
  }
  bool key(std::string& /*value*/) override { return false; }
  bool end_object() override { return false; }
  bool start_array(std::size_t /*size*/) override {
    if (depth_ == 0) return ++depth_ == 1;
    return NotAToken("an array");
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& e) override {
    if (error.empty()) {
      error = MalformedJson(position, e);
    }
    return false;
  }

 private:
  bool Fail(std::string message) {
    error = std::move(message);
    return false;
  }
  // An element that is not a token, named by its index.
  bool Bad(const std::string& what) {
    return Fail("token " + std::to_string(tokens_.size()) + ": " + what);
  }
  bool InArray(const char* what) {
    if (depth_ == 1) return true;
    return Fail(std::string(what) + " is not a JSON array of token ids");
  }
  bool NotAToken(const char* what) {
    return InArray(what) && Bad(std::string(what) + " is not a token id");
  }

  std::vector<TokenId>& tokens_;
  int depth_ = 0;
};

// The whole input, refusing more than kMaxTokenListBytes.
Result<std::string> ReadAll(std::istream& in, std::string_view source) {
  std::string text;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxTokenListBytes) {
      return hkv::Fail(ErrorCode::kCorruption,
                       std::string(source) + ": more than " +
                           std::to_string(kMaxTokenListBytes) +
                           " bytes (kMaxTokenListBytes)");
    }
  }
  if (in.bad()) {
    return hkv::Fail(ErrorCode::kIoError, "cannot read " + std::string(source));
  }
  return text;
}

}  // namespace

Result<std::vector<TokenId>> ReadTokenList(std::istream& in,
                                           std::string_view source) {
  Result<std::string> text = ReadAll(in, source);
  if (!text) return tl::unexpected(text.error());
  std::vector<TokenId> tokens;
  TokenSax sax(tokens);
  if (!Json::sax_parse(*text, &sax)) {
    return hkv::Fail(ErrorCode::kCorruption,
                     std::string(source) + ": " + sax.error);
  }
  return tokens;
}

Result<std::vector<TokenId>> ReadTokenFile(const std::string& path) {
  if (path == "-") return ReadTokenList(std::cin, "stdin");
  std::ifstream in(path, std::ios::binary);
  if (!in) return hkv::Fail(ErrorCode::kIoError, "cannot read " + path);
  return ReadTokenList(in, path);
}

}  // namespace hkv::cli
