#include "core/evicted_keys.h"

#include <algorithm>
#include <cstring>

namespace hkv::internal {
namespace {

// Odd multipliers spread each word over the high bits before the finalizer
// (MurmurHash3's fmix64) folds them down; keys that differ in any byte, or
// only in their group, get unrelated hashes.
std::uint64_t HashOf(const PrefixKey& key) {
  std::uint64_t w[4];
  std::memcpy(w, key.hash.bytes.data(), sizeof w);
  std::uint64_t h = w[0] ^ (w[1] * 0xc2b2ae3d27d4eb4full) ^
                    (w[2] * 0x165667b19e3779f9ull) ^
                    (w[3] * 0xd6e8feb86659fd93ull) ^
                    (std::uint64_t{ToIndex(key.group)} * kGroupMix);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

}  // namespace

EvictedKeys::EvictedKeys(std::uint32_t num_blocks)
    : sets_(std::max<std::size_t>(
          1, (2 * std::size_t{num_blocks} + kWays - 1) / kWays)) {}

EvictedKeys::Place EvictedKeys::PlaceOf(const PrefixKey& key) const {
  const std::uint64_t h = HashOf(key);
  // The high half picks the set (multiply-shift: any number of sets), the
  // low half is the fingerprint.
  const std::size_t set =
      static_cast<std::size_t>(((h >> 32) * sets_.size()) >> 32);
  const auto low = static_cast<std::uint32_t>(h);
  return {.set = set, .fingerprint = low != 0 ? low : 1};
}

void EvictedKeys::Remember(const PrefixKey& key) {
  const Place place = PlaceOf(key);
  std::array<std::uint32_t, kWays>& ways = sets_[place.set].fingerprints;
  if (ways.back() == 0) ++remembered_;  // else the oldest key goes
  std::copy_backward(ways.begin(), ways.end() - 1, ways.end());
  ways.front() = place.fingerprint;
}

void EvictedKeys::Forget(const PrefixKey& key) {
  if (empty()) return;
  const Place place = PlaceOf(key);
  std::array<std::uint32_t, kWays>& ways = sets_[place.set].fingerprints;
  auto it = std::find(ways.begin(), ways.end(), place.fingerprint);
  if (it == ways.end()) return;
  std::copy(it + 1, ways.end(), it);
  ways.back() = 0;
  --remembered_;
}

bool EvictedKeys::Contains(const PrefixKey& key) const {
  if (empty()) return false;
  const Place place = PlaceOf(key);
  bool found = false;
  for (std::uint32_t way : sets_[place.set].fingerprints)
    found |= way == place.fingerprint;
  return found;
}

void EvictedKeys::Clear() {
  std::fill(sets_.begin(), sets_.end(), Set{});
  remembered_ = 0;
}

}  // namespace hkv::internal
