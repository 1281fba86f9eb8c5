// Synthetic token ids for traces that carry none: a token depends only on
// the id of the segment it belongs to and its position there (see
// MooncakeTokens in hkv/mooncake_trace.h).
#pragma once

#include <cstdint>

#include "hkv/mooncake_trace.h"
#include "hkv/types.h"

namespace hkv::internal {

// The splitmix64 output function (all arithmetic mod 2^64).
constexpr std::uint64_t SplitMix64(std::uint64_t x) {
  std::uint64_t z = x + 0x9e3779b97f4a7c15;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
  z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
  return z ^ (z >> 31);
}

// Token `position` of the segment whose id, passed through SplitMix64, is
// `mixed_id`.
constexpr TokenId SegmentToken(std::uint64_t mixed_id, std::uint64_t position) {
  return static_cast<TokenId>(SplitMix64(mixed_id + position) %
                              kMooncakeVocabSize);
}

}  // namespace hkv::internal
