// Message building for the library (it does not use fmt).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hkv::internal {

inline std::string Str(std::string_view s) { return std::string(s); }
inline std::string Str(std::uint64_t n) { return std::to_string(n); }

// Concatenates strings and unsigned numbers: Cat("TP ", tp, " ...").
template <typename... Args>
std::string Cat(const Args&... args) {
  std::string out;
  (out += ... += Str(args));
  return out;
}

}  // namespace hkv::internal
