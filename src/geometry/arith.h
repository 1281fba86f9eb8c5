// Saturating products for the planner: byte and token counts of absurd
// inputs (huge pages times long contexts) must not wrap around.
#pragma once

#include <cstdint>
#include <limits>

namespace hkv::internal {

inline constexpr std::uint64_t kSaturated =
    std::numeric_limits<std::uint64_t>::max();

// a x b, or kSaturated when it does not fit.
inline std::uint64_t SaturatingMul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > kSaturated / a) return kSaturated;
  return a * b;
}

// floor(a x b / c), or kSaturated when it does not fit. REQUIRES: c > 0.
inline std::uint64_t MulDiv(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  __extension__ typedef unsigned __int128 Uint128;
  const Uint128 q = Uint128{a} * b / c;
  return q > kSaturated ? kSaturated : static_cast<std::uint64_t>(q);
}

}  // namespace hkv::internal
