#include "hkv/request.h"

#include "check.h"
#include "core/plain_keys.h"
#include "hkv/limits.h"
#include "text.h"

namespace hkv {

namespace {

// Checked before anything is copied: a request never holds more than
// kMaxTokensPerRequest tokens.
std::uint32_t CheckedTokens(std::size_t count, const char* what) {
  HKV_REQUIRE(count <= kMaxTokensPerRequest,
              internal::Cat(what, " ", count, " exceed the limit of ",
                            kMaxTokensPerRequest, " tokens per request"));
  return static_cast<std::uint32_t>(count);
}

}  // namespace

Request::Request(RequestOptions options, std::span<const TokenId> prompt,
                 const KeyScheme& scheme)
    : options_(std::move(options)),
      scheme_(scheme),
      num_prompt_tokens_(CheckedTokens(prompt.size(), "prompt tokens")) {
  HKV_REQUIRE(scheme.hash_unit > 0, "the key scheme's hash unit must be >= 1");
  if (Result<void> extras_valid = options_.extras.Validate(); !extras_valid) {
    HKV_REQUIRE(extras_valid,
                "bad key extras: " + extras_valid.error().message);
  }
  tokens_.assign(prompt.begin(), prompt.end());
  num_tokens_ = num_prompt_tokens_;
  keys_.reserve(tokens_.size() / scheme_.hash_unit);
  ExtendKeys();
}

Request Request::KeyedByCaller(RequestOptions options,
                               std::uint32_t num_prompt_tokens,
                               std::vector<BlockHash> keys,
                               const KeyScheme& scheme) {
  HKV_REQUIRE(options.extras.empty(),
              "a request keyed by its caller takes no key extras (its keys "
              "hold them already)");
  CheckedTokens(num_prompt_tokens, "prompt tokens");
  HKV_REQUIRE(scheme.hash_unit > 0, "the key scheme's hash unit must be >= 1");
  HKV_REQUIRE(keys.size() == num_prompt_tokens / scheme.hash_unit,
              internal::Cat("a prompt of ", num_prompt_tokens, " tokens has ",
                            num_prompt_tokens / scheme.hash_unit,
                            " complete hash units of ", scheme.hash_unit,
                            ", but ", keys.size(), " keys were given"));
  Request r(std::move(options), {}, scheme);
  r.keyed_by_caller_ = true;
  r.num_prompt_tokens_ = num_prompt_tokens;
  r.num_tokens_ = num_prompt_tokens;
  r.keys_ = std::move(keys);
  return r;
}

void Request::AppendTokens(std::span<const TokenId> tokens) {
  HKV_REQUIRE(!keyed_by_caller_,
              "AppendTokens on a request keyed by its caller: use "
              "AppendKeyedTokens");
  // Compared, not summed: a span's size may be anything.
  HKV_REQUIRE(tokens.size() <= kMaxTokensPerRequest - num_tokens_,
              internal::Cat("request tokens ", num_tokens_, " + ",
                            tokens.size(), " exceed the limit of ",
                            kMaxTokensPerRequest, " tokens per request"));
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  num_tokens_ = static_cast<std::uint32_t>(tokens_.size());
  ExtendKeys();
}

void Request::AppendKeyedTokens(std::uint32_t num_new_tokens,
                                std::span<const BlockHash> keys) {
  HKV_REQUIRE(keyed_by_caller_,
              "AppendKeyedTokens on a request hkv keys: use AppendTokens");
  HKV_REQUIRE(num_new_tokens <= kMaxTokensPerRequest - num_tokens_,
              internal::Cat("request tokens ", num_tokens_, " + ",
                            num_new_tokens, " exceed the limit of ",
                            kMaxTokensPerRequest, " tokens per request"));
  const std::size_t units = (num_tokens_ + num_new_tokens) / scheme_.hash_unit;
  HKV_REQUIRE(
      keys.size() == units - keys_.size(),
      internal::Cat(num_new_tokens, " tokens after ", num_tokens_, " complete ",
                    units - keys_.size(), " hash units, but ", keys.size(),
                    " keys were given"));
  num_tokens_ += num_new_tokens;
  keys_.insert(keys_.end(), keys.begin(), keys.end());
}

void Request::ExtendKeys() {
  const std::size_t unit = scheme_.hash_unit;
  if (options_.extras.empty()) {
    internal::AppendPlainUnitKeys(
        scheme_, keys_.empty() ? scheme_.seed_key : keys_.back(),
        std::span(tokens_).subspan(keys_.size() * unit), keys_);
    return;
  }
  for (std::size_t k = keys_.size(); (k + 1) * unit <= tokens_.size(); ++k) {
    const BlockHash& parent = k == 0 ? scheme_.seed_key : keys_[k - 1];
    const std::span<const TokenId> unit_tokens(tokens_.data() + k * unit, unit);
    const auto start = static_cast<std::uint32_t>(k * unit);
    const std::vector<ExtraKey> extra = UnitExtraKeys(
        options_.extras, start, start + static_cast<std::uint32_t>(unit));
    keys_.push_back(HashUnit(scheme_, parent, unit_tokens, extra));
  }
}

}  // namespace hkv
