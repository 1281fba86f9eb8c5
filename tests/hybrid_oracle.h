// A brute-force hit oracle for any mix of groups, from the definitions of
// docs/design.md rather than from the finders: it enumerates what the pool
// holds, (key, group) pairs, and for each candidate position p tests every
// group's resumable set explicitly:
//   full attention  every full block before p cached, and (p inside a page)
//                   an entry at some q >= p in p's page;
//   sliding window  an entry at some q >= p in the block holding token p-1
//                   (q = p for block-aligned hits), and the full blocks
//                   over the W-1 tokens before p;
//   chunked local   the blocks from p's chunk start up to p;
//   recurrent       an entry at exactly p.
// A rewinding group's set is {p : p + r in its set with the window r
// longer}, r one unit (fine hits) or one block. The hit is the largest p on
// the alignment, at most num_tokens - 1, in every set.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "cache/cache_core.h"
#include "cache/cache_geometry.h"

namespace hkv::testing {

class HybridOracle {
 public:
  // Reads the pool's current entries.
  HybridOracle(const CacheConfig& config, const internal::BlockPool& pool);

  std::uint32_t Hit(const Request& request) const;

 private:
  struct Probe {
    std::span<const BlockHash> keys;
    std::uint32_t held;  // tokens the request holds keys for
  };
  bool Cached(const Probe& probe, GroupId group, std::uint32_t q) const;
  // Some entry at q in [from, to] (multiples of the unit).
  bool CachedIn(const Probe& probe, GroupId group, std::uint32_t from,
                std::uint32_t to) const;
  bool Resumable(const Probe& probe, std::size_t group, std::uint32_t p,
                 std::uint32_t extra_window) const;
  bool FullAttention(const Probe& probe, std::size_t group,
                     std::uint32_t p) const;
  bool Window(const Probe& probe, std::size_t group, std::uint32_t p,
              std::uint32_t window) const;

  CacheConfig config_;
  internal::CacheGeometry geometry_;
  absl::flat_hash_set<internal::PrefixKey, internal::PrefixKeyHash> entries_;
};

}  // namespace hkv::testing
