// A bounded, approximate record of keys evicted by reuse, kept only to tell
// that a lookup missed because its prefix was evicted (the "evicted" miss
// cause). Every call is constant time; nothing allocates after construction.
// While nothing is remembered (a pool that has not evicted since its last
// reset) a registration's Forget touches no memory.
//
// Keys are kept as 32-bit fingerprints in sets of 16 (one 64-byte cache
// line), the set and the fingerprint both drawn from a hash of the whole key.
// A set keeps its 16 most recent evictions (the oldest goes first), and a key
// registered again leaves its set. The sets hold 2 x num_blocks fingerprints
// in all: 8 bytes per block.
//
// Accuracy:
//  - False negatives: a key is forgotten once 16 later evictions landed in
//    its set. A key evicted k evictions ago is still remembered with
//    probability at least P(Poisson(8 k / num_blocks) <= 15): above 99.99 %
//    for k = num_blocks / 2, 99.2 % for k = num_blocks, 47 % for
//    k = 2 num_blocks, 3.4 % for k = 3 num_blocks.
//  - False positives: a key never evicted (or registered since) reads as
//    evicted when its set holds an equal fingerprint, with probability at
//    most 16 / 2^32 (3.7e-9) per query; a registration forgets another key
//    that way with the same probability.
//
// Thread-compatible.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/prefix_index.h"

namespace hkv::internal {

class EvictedKeys {
 public:
  explicit EvictedKeys(std::uint32_t num_blocks);
  EvictedKeys(const EvictedKeys&) = delete;
  EvictedKeys& operator=(const EvictedKeys&) = delete;

  // Records that `key` was evicted, dropping the oldest key of its set.
  void Remember(const PrefixKey& key);
  // Drops `key` (it was registered again); a no-op when not remembered.
  void Forget(const PrefixKey& key);
  // Whether `key` is remembered (see the accuracy above).
  bool Contains(const PrefixKey& key) const;
  // Forgets every key. O(num_blocks).
  void Clear();
  // Whether no key is remembered (none evicted since construction or the
  // last Clear, or every one registered again): Forget and Contains then
  // touch no set.
  bool empty() const { return remembered_ == 0; }
  // Where Remember, Forget and Contains read for `key` (its set), to
  // prefetch.
  const void* SetOf(const PrefixKey& key) const {
    return &sets_[PlaceOf(key).set];
  }

  // Bytes of the sets (capacity times element size).
  std::size_t MemoryBytes() const { return sets_.capacity() * sizeof(Set); }

 private:
  static constexpr std::size_t kWays = 16;
  // Most recent first; 0 marks an empty way.
  struct alignas(64) Set {
    std::array<std::uint32_t, kWays> fingerprints{};
  };
  struct Place {
    std::size_t set;
    std::uint32_t fingerprint;  // never 0
  };

  Place PlaceOf(const PrefixKey& key) const;

  std::vector<Set> sets_;
  std::size_t remembered_ = 0;  // ways in use over all sets
};

}  // namespace hkv::internal
