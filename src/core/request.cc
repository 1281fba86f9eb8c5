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

// Multimodal items sorted by offset: the extra keys of a unit are found by
// walking them in order. (An item may reach past the prompt, into tokens
// appended later.)
void CheckMultimodal(const KeyExtras& extras) {
  std::uint32_t previous = 0;
  for (const MultimodalItem& item : extras.multimodal) {
    HKV_REQUIRE(
        item.offset >= previous,
        internal::Cat("multimodal item \"", item.identifier, "\" at offset ",
                      item.offset, " comes after one at ", previous,
                      ": items must be sorted by offset"));
    previous = item.offset;
  }
}

}  // namespace

Request::Request(RequestOptions options, std::span<const TokenId> prompt,
                 const KeyScheme& scheme)
    : options_(std::move(options)),
      scheme_(scheme),
      num_prompt_tokens_(CheckedTokens(prompt.size(), "prompt tokens")) {
  HKV_REQUIRE(scheme.hash_unit > 0, "the key scheme's hash unit must be >= 1");
  CheckMultimodal(options_.extras);
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
  const bool plain = options_.extras.lora_name.empty() &&
                     options_.extras.multimodal.empty() &&
                     options_.extras.cache_salt.empty();
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
