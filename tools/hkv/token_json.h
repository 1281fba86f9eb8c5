// What an element of a JSON array of token ids must be, shared by the
// streaming readers of token lists (`hkv keys`, `hkv index` queries): the
// words that name a bad element, and a malformed document.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

namespace hkv::cli {

// Empty when `value` is a token id (at most 2^32 - 1), else why not.
inline std::string UnsignedTokenProblem(std::uint64_t value) {
  return value > UINT32_MAX ? std::to_string(value) + " exceeds 2^32 - 1"
                            : std::string();
}

// The parser reports non-negative integers as unsigned: a signed one is
// negative.
inline std::string NegativeTokenProblem(std::int64_t value) {
  return std::to_string(value) + " is negative";
}

// The parser reports fractions, and integers beyond 64 bits, as floats;
// `shown` is the text to name it by.
inline std::string FloatTokenProblem(std::string_view text,
                                     std::string_view shown) {
  const bool integral = text.find_first_of(".eE") == std::string_view::npos;
  return std::string(shown) +
         (integral ? " exceeds 2^32 - 1" : " is not an integer");
}

inline std::string MalformedJson(std::size_t position,
                                 const std::exception& e) {
  return "malformed JSON at byte " + std::to_string(position) + " (" +
         e.what() + ")";
}

}  // namespace hkv::cli
