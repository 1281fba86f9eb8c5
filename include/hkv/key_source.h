// A request's keys as its caller holds them, read on demand: a lookup of a
// long prompt reads only the keys it probes (chained keys prove a cached
// prefix from its deepest key, so a bisection reads a few dozen of the
// thousands), where building the request would take in every one.
//
// Example (hkv.vllm reads an engine's list of block hashes this way):
//   class ListKeys : public KeySource { ... };
//   CacheHit hit = cache.LookupKeys(RequestId{7}, num_tokens, ListKeys(...));
#pragma once

#include <cstddef>
#include <span>

#include "hkv/types.h"

namespace hkv {

class KeySource {
 public:
  virtual ~KeySource() = default;

  // The number of keys: one per complete hash unit, chained.
  virtual std::size_t size() const = 0;

  // Writes keys [first, first + out.size()) to `out`, each of up to 32
  // bytes, shorter digests zero-padded. REQUIRES: first + out.size() <=
  // size(). May throw (a key the caller cannot give): the call reading it
  // fails and changes nothing.
  virtual void Read(std::size_t first, std::span<BlockHash> out) const = 0;
};

}  // namespace hkv
