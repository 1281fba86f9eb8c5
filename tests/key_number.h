// Distinct prefix keys by number, for the block pool's tests.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/prefix_index.h"

namespace hkv::testing {

// Key number n: spread like a digest's first word (so that index homes are
// uniform), the number itself in the second.
inline internal::PrefixKey KeyNumber(std::uint64_t n) {
  internal::PrefixKey key;
  const std::uint64_t word = n * 0x9e3779b97f4a7c15ull;
  std::memcpy(key.hash.bytes.data(), &word, sizeof word);
  std::memcpy(key.hash.bytes.data() + 8, &n, sizeof n);
  return key;
}

}  // namespace hkv::testing
