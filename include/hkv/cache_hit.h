// A prefix lookup's result: the hit, its blocks per group, and why it is
// shorter than the longest prefix full attention holds.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <vector>

#include "hkv/types.h"

namespace hkv {

// Why a hit is shorter than the longest prefix full attention holds.
enum class MissCause {
  kNone,               // it is not shorter
  kSpeculativeRewind,  // a draft model recomputes the last unit or block
  kNoCheckpoint,       // a recurrent group kept no state at a usable boundary
  kWindowNotCovered,   // a sliding-window or chunked group lacks window blocks
  // The limiting group had the data there once, and it was evicted by reuse.
  // Approximate: a bounded record forgets evictions older than about
  // num_blocks evictions (99 % of those num_blocks ago are remembered, half
  // of those 2 num_blocks ago), and takes a key for an evicted one with
  // probability at most 4e-9 (docs/design.md, BlockPool).
  kEvicted,
};

// What a lookup result was computed for: the cache (an id unique in the
// process; 0 for a hit no lookup made), the request, and the request's key
// of the prefix the lookup found (its first num_tokens tokens).
struct HitOrigin {
  std::uint64_t cache = 0;
  RequestId request{0};
  std::uint32_t num_tokens = 0;
  BlockHash key = {};  // zero when num_tokens is 0
};

// A lookup result: the hit in tokens and, per group, the cached blocks that
// cover it (index-aligned with the block table; the null block marks
// positions the group does not need). Valid until the next mutating call.
// Only the cache that made it adopts or truncates it, for its request.
struct CacheHit {
  std::uint32_t num_tokens = 0;
  std::vector<std::vector<BlockId>> blocks = {};  // [group][block index]
  // The cache's key generation at lookup; Allocate re-checks a hit whose
  // blocks may have lost their keys since.
  std::uint64_t key_generation = 0;
  // The longest prefix full attention holds (at most num_tokens - 1), and,
  // when the hit is shorter, which group limited it and why.
  std::uint32_t chain_tokens = 0;
  MissCause miss_cause = MissCause::kNone;
  GroupId limiting_group{0};
  // Where some group's cached prefix ends when it is longer than the hit (a
  // group that keeps few states limited it): a chunk stopping there lets
  // the shorter group cache its state for the next request. 0 otherwise.
  std::uint32_t shared_prefix_boundary = 0;
  // Set by Lookup, kept by TruncateHit; checked by Allocate.
  HitOrigin origin = {};
};

}  // namespace hkv
