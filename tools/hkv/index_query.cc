#include "index_query.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "hkv/limits.h"
#include "token_json.h"

namespace hkv::cli {
namespace {

using Json = nlohmann::json;

enum class Field { kNone, kTokens, kKeys, kNumTokens };

const char* FieldName(Field field) {
  switch (field) {
    case Field::kTokens:
      return "tokens";
    case Field::kKeys:
      return "keys";
    case Field::kNumTokens:
      return "num_tokens";
    case Field::kNone:
      break;
  }
  return "";
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Streams the query object into an IndexQuery: no JSON tree, at most two
// levels deep, and the first problem ends the parse with `error` naming it.
class QuerySax final : public nlohmann::json_sax<Json> {
 public:
  QuerySax(IndexQuery& query, std::size_t digest_size)
      : query_(query), digest_size_(digest_size) {}

  std::string error;
  std::optional<std::uint64_t> num_tokens;

  bool number_unsigned(std::uint64_t value) override {
    if (depth_ == 1 && field_ == Field::kNumTokens) {
      if (value > kMaxTokensPerRequest) {
        return Fail("num_tokens " + std::to_string(value) +
                    " exceeds kMaxTokensPerRequest (" +
                    std::to_string(kMaxTokensPerRequest) + ")");
      }
      num_tokens = value;
      return true;
    }
    if (depth_ != 2 || array_ != Field::kTokens) return Wrong("a number");
    if (std::string problem = UnsignedTokenProblem(value); !problem.empty()) {
      return Bad(problem);
    }
    if (!Room(query_.tokens.size())) return false;
    query_.tokens.push_back(static_cast<TokenId>(value));
    return true;
  }
  bool number_integer(std::int64_t value) override {
    if (depth_ == 2 && array_ == Field::kTokens) {
      return Bad(NegativeTokenProblem(value));
    }
    return Wrong("a negative number");
  }
  bool number_float(double /*value*/, const std::string& text) override {
    if (depth_ == 2 && array_ == Field::kTokens) {
      return Bad(FloatTokenProblem(text, text.substr(0, 32)));
    }
    const bool integral = text.find_first_of(".eE") == std::string::npos;
    return Wrong(integral ? "a number beyond 64 bits" : "a fraction");
  }
  bool string(std::string& value) override {
    if (depth_ != 2 || array_ != Field::kKeys) return Wrong("a string");
    if (!Room(query_.keys.size())) return false;
    BlockHash key;
    if (value.size() != 2 * digest_size_) {
      return Bad(std::to_string(value.size()) + " characters, want " +
                 std::to_string(2 * digest_size_) + " hex digits (a " +
                 std::to_string(digest_size_) + "-byte digest)");
    }
    for (std::size_t i = 0; i < digest_size_; ++i) {
      const int high = HexDigit(value[2 * i]);
      const int low = HexDigit(value[2 * i + 1]);
      if (high < 0 || low < 0) return Bad("not hex");
      key.bytes[i] = static_cast<std::uint8_t>(high * 16 + low);
    }
    query_.keys.push_back(key);
    return true;
  }
  bool null() override { return Wrong("null"); }
  bool boolean(bool /*value*/) override { return Wrong("a boolean"); }
  bool binary(Json::binary_t& /*value*/) override { return Wrong("binary"); }
  bool start_object(std::size_t /*size*/) override {
    if (depth_ == 0) return ++depth_ == 1;
    return Wrong("an object");
  }
  bool key(std::string& name) override {
    const Field field = name == "tokens"       ? Field::kTokens
                        : name == "keys"       ? Field::kKeys
                        : name == "num_tokens" ? Field::kNumTokens
                                               : Field::kNone;
    if (field == Field::kNone) {
      return Fail("unknown field \"" + name.substr(0, 64) +
                  "\" (a query has tokens, or keys and num_tokens)");
    }
    const auto bit = 1U << static_cast<unsigned>(field);
    if ((seen_ & bit) != 0) return Fail("field " + name + " given twice");
    seen_ |= bit;
    field_ = field;
    return true;
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(std::size_t /*size*/) override {
    if (depth_ != 1 || field_ == Field::kNumTokens) return Wrong("an array");
    array_ = field_;
    return ++depth_ == 2;
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

  bool Has(Field field) const {
    return (seen_ & (1U << static_cast<unsigned>(field))) != 0;
  }

 private:
  bool Fail(std::string message) {
    error = std::move(message);
    return false;
  }
  // An element of the array being read, named by its index.
  bool Bad(const std::string& what) {
    const bool tokens = array_ == Field::kTokens;
    const std::size_t index =
        tokens ? query_.tokens.size() : query_.keys.size();
    return Fail((tokens ? "token " : "key ") + std::to_string(index) + ": " +
                what);
  }
  // A value of the wrong type where it stands.
  bool Wrong(const std::string& what) {
    if (depth_ == 0) return Fail("a query is a JSON object, not " + what);
    if (depth_ == 2) {
      return Bad(what + (array_ == Field::kTokens ? " is not a token id"
                                                  : " is not a hex string"));
    }
    if (field_ == Field::kNumTokens) {
      return Fail("num_tokens must be a whole number, not " + what);
    }
    return Fail(std::string(FieldName(field_)) + " must be an array, not " +
                what);
  }
  bool Room(std::size_t count) {
    if (count < kMaxTokensPerRequest) return true;
    return Fail(std::string("more than ") +
                std::to_string(kMaxTokensPerRequest) + " " + FieldName(array_) +
                " (kMaxTokensPerRequest)");
  }

  IndexQuery& query_;
  std::size_t digest_size_;
  int depth_ = 0;
  Field field_ = Field::kNone;  // the field whose value comes next
  Field array_ = Field::kNone;  // the array being read
  unsigned seen_ = 0;           // 1 << Field, per field given
};

}  // namespace

Result<IndexQuery> ParseIndexQuery(std::string_view body,
                                   std::size_t digest_size) {
  IndexQuery query;
  QuerySax sax(query, digest_size);
  if (!Json::sax_parse(body, &sax)) {
    return Fail(ErrorCode::kInvalidArgument, sax.error);
  }
  const bool tokens = sax.Has(Field::kTokens);
  const bool keys = sax.Has(Field::kKeys);
  const char* problem = nullptr;
  if (tokens && keys) {
    problem = "give tokens or keys, not both";
  } else if (!tokens && !keys) {
    problem = "a query has tokens, or keys and num_tokens";
  } else if (keys && !sax.num_tokens) {
    problem = "keys need num_tokens (the prompt's length)";
  } else if (tokens && sax.num_tokens) {
    problem = "num_tokens goes with keys; tokens give their own length";
  }
  if (problem != nullptr) return Fail(ErrorCode::kInvalidArgument, problem);
  query.by_keys = keys;
  query.num_tokens =
      static_cast<std::uint32_t>(keys ? *sax.num_tokens : query.tokens.size());
  return query;
}

std::size_t BestInstance(std::span<const InstanceMatch> matches) {
  const auto best =
      std::max_element(matches.begin(), matches.end(),
                       [](const InstanceMatch& a, const InstanceMatch& b) {
                         return a.hybrid_tokens < b.hybrid_tokens;
                       });
  return static_cast<std::size_t>(best - matches.begin());
}

std::string AnswerJson(std::span<const InstanceMatch> matches,
                       std::span<const std::string> endpoints) {
  Json instances = Json::array();
  for (std::size_t i = 0; i < matches.size(); ++i) {
    instances.push_back({{"instance", i},
                         {"endpoint", endpoints[i]},
                         {"hybrid_tokens", matches[i].hybrid_tokens},
                         {"attention_tokens", matches[i].attention_tokens}});
  }
  const Json answer = {{"instances", std::move(instances)},
                       {"best", BestInstance(matches)}};
  return answer.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string ErrorJson(std::string_view message) {
  const Json error = {{"error", message}};
  return error.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace hkv::cli
