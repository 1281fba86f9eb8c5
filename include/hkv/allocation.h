// What one allocation asks for and what it places: the arguments of
// CacheManager::Allocate, the blocks and state exports it returns, and the
// prefill chunk SplitPrefill sizes.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <vector>

#include "hkv/cache_hit.h"
#include "hkv/types.h"

namespace hkv {

// What an allocation must find room for before it takes anything.
enum class AdmissionGate { kNextChunk, kWholeSequence };

struct AllocationRequest {
  // Tokens this request already computed before this call, excluding `hit`;
  // 0 when `hit` is set (a hit is adopted on the first allocation only).
  std::uint32_t num_computed_tokens = 0;
  // Tokens after those that a connector (an offload tier, a remote
  // cache) loads into the request's blocks before the step: computed, not
  // hits. The blocks to hold them are allocated here.
  std::uint32_t num_external_computed_tokens = 0;
  // Tokens to compute in this step (drafts included).
  std::uint32_t num_new_tokens = 0;
  // Extra slots for speculative tokens, beyond num_new_tokens.
  std::uint32_t num_lookahead_tokens = 0;
  // Of num_computed_tokens, those scheduled in steps whose results are not
  // back yet (async scheduling): blocks they read are not released.
  std::uint32_t num_in_flight_tokens = 0;
  // The request's lookup result to adopt; only on its first allocation.
  // Nullable. One of no tokens adopts nothing (its miss cause is counted).
  const CacheHit* hit = nullptr;
  // kWholeSequence: refuse unless the request's whole current sequence fits
  // now, window groups counted at MaxBlocksPerRequest (an admission that
  // must not stall mid-prefill).
  AdmissionGate gate = AdmissionGate::kNextChunk;
};

// A prefill chunk the scheduler's budget allows, for SplitPrefill.
struct PrefillChunk {
  std::uint32_t num_computed_tokens = 0;  // computed so far, hit included
  std::uint32_t num_new_tokens = 0;       // what the budget allows next
  std::uint32_t max_num_scheduled_tokens = 8192;
  std::uint32_t long_prefill_threshold = 0;  // 0: none
  std::uint32_t shared_prefix_boundary = 0;  // from the request's lookup
};

// A state the recurrent kernel must leave from inside the step's chunk: the
// state after `position` tokens, written into `block` (a block of the
// request's table, placed by the same allocation).
struct StateExport {
  GroupId group{0};
  BlockId block{0};
  std::uint32_t position = 0;
  friend bool operator==(const StateExport&, const StateExport&) = default;
};

// Blocks placed in the request's tables by one allocation, per group, and
// the states the step must export.
struct NewBlocks {
  std::vector<std::vector<BlockId>> blocks = {};  // [group]
  std::vector<StateExport> state_exports = {};
  // [group]: where the slots this allocation computes into start in the
  // request's table, past the hit it adopted and the blocks for a
  // connector's tokens: table[table_starts[g]:] is what the reference
  // engine's allocate_slots returns (null slots included).
  std::vector<std::uint32_t> table_starts = {};
};

}  // namespace hkv
