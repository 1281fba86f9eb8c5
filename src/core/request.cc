#include "hkv/request.h"

#include "check.h"
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
  keys_.reserve(tokens_.size() / scheme_.hash_unit);
  ExtendKeys();
}

std::uint32_t Request::num_tokens() const {
  return static_cast<std::uint32_t>(tokens_.size());
}

void Request::AppendTokens(std::span<const TokenId> tokens) {
  // Compared, not summed: a span's size may be anything.
  HKV_REQUIRE(tokens.size() <= kMaxTokensPerRequest - tokens_.size(),
              internal::Cat("request tokens ", tokens_.size(), " + ",
                            tokens.size(), " exceed the limit of ",
                            kMaxTokensPerRequest, " tokens per request"));
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  ExtendKeys();
}

void Request::ExtendKeys() {
  const std::size_t unit = scheme_.hash_unit;
  const bool plain = options_.extras.empty();
  for (std::size_t k = keys_.size(); (k + 1) * unit <= tokens_.size(); ++k) {
    const BlockHash& parent = k == 0 ? scheme_.seed_key : keys_[k - 1];
    const std::span<const TokenId> unit_tokens(tokens_.data() + k * unit, unit);
    if (plain) {
      keys_.push_back(HashUnit(scheme_, parent, unit_tokens, {}));
    } else {
      const auto start = static_cast<std::uint32_t>(k * unit);
      const std::vector<ExtraKey> extra = UnitExtraKeys(
          options_.extras, start, start + static_cast<std::uint32_t>(unit));
      keys_.push_back(HashUnit(scheme_, parent, unit_tokens, extra));
    }
  }
}

}  // namespace hkv
