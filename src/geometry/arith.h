// Overflow-safe arithmetic for the planner: byte and token counts of absurd
// inputs (huge pages times long contexts) must not wrap around. Saturated
// figures are larger than any budget (PlanOptions keeps budgets below 2^52),
// so a plan that meets one is refused as infeasible, never planned small.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

namespace hkv::internal {

inline constexpr std::uint64_t kSaturated =
    std::numeric_limits<std::uint64_t>::max();

// a x b, or std::nullopt when it does not fit.
inline std::optional<std::uint64_t> CheckedMul(std::uint64_t a,
                                               std::uint64_t b) {
  if (a != 0 && b > kSaturated / a) return std::nullopt;
  return a * b;
}

// a + b, or std::nullopt when it does not fit.
inline std::optional<std::uint64_t> CheckedAdd(std::uint64_t a,
                                               std::uint64_t b) {
  if (b > kSaturated - a) return std::nullopt;
  return a + b;
}

// a x b, or kSaturated when it does not fit.
inline std::uint64_t SaturatingMul(std::uint64_t a, std::uint64_t b) {
  return CheckedMul(a, b).value_or(kSaturated);
}

// a + b, or kSaturated when it does not fit.
inline std::uint64_t SaturatingAdd(std::uint64_t a, std::uint64_t b) {
  return CheckedAdd(a, b).value_or(kSaturated);
}

// ceil(a / b). REQUIRES: b > 0.
inline std::uint64_t CeilDiv(std::uint64_t a, std::uint64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

// floor(a x b / c), or kSaturated when it does not fit. REQUIRES: c > 0.
inline std::uint64_t MulDiv(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  __extension__ typedef unsigned __int128 Uint128;
  const Uint128 q = Uint128{a} * b / c;
  return q > kSaturated ? kSaturated : static_cast<std::uint64_t>(q);
}

}  // namespace hkv::internal
