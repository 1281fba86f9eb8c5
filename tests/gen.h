// RapidCheck generators for cache property tests.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <vector>

#include "hkv/types.h"

namespace hkv::testing {

// Tokens over a 3-letter alphabet, so that random requests share prefixes.
inline std::vector<TokenId> GenTokens(std::uint32_t min_len,
                                      std::uint32_t max_len) {
  const auto len = *rc::gen::inRange(min_len, max_len + 1);
  return *rc::gen::container<std::vector<TokenId>>(
      len, rc::gen::inRange<TokenId>(0, 3));
}

// A prompt that extends a random prefix of an earlier one most of the time.
inline std::vector<TokenId> GenPrompt(
    const std::vector<std::vector<TokenId>>& history, std::uint32_t max_len) {
  std::vector<TokenId> tokens;
  if (!history.empty() && *rc::gen::inRange(0, 4) > 0) {
    const auto& base =
        history[*rc::gen::inRange<std::size_t>(0, history.size())];
    tokens.assign(
        base.begin(),
        base.begin() + *rc::gen::inRange<std::ptrdiff_t>(
                           0, static_cast<std::ptrdiff_t>(base.size()) + 1));
  }
  const std::vector<TokenId> suffix =
      GenTokens(tokens.empty() ? 1 : 0, max_len / 2);
  tokens.insert(tokens.end(), suffix.begin(), suffix.end());
  if (tokens.size() > max_len) tokens.resize(max_len);
  return tokens;
}

}  // namespace hkv::testing
