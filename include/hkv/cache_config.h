// A cache's configuration: its groups, pool, keys and policies, and the
// validation CacheManager::Create runs.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "hkv/group_spec.h"
#include "hkv/keys.h"
#include "hkv/limits.h"
#include "hkv/result.h"
#include "hkv/types.h"

namespace hkv {

enum class PrefixCaching { kEnabled, kDisabled };
enum class KvEventMode { kDisabled, kEnabled };

// Whether a miss can say its prefix was evicted (MissCause::kEvicted).
// kKept (default): the pool keeps a bounded record of the keys it evicted
// (8 bytes a block; an eviction and each registration touch one random
// cache line of it). kOff: no record; such a miss names its limiting group's
// own cause instead, and an evicting allocation runs about a fifth faster.
enum class EvictionRecord { kKept, kOff };

// Where sparse retention keeps window tails and recurrent states
// (docs/beyond.md). kReference: as CacheConfig::retention_interval says
// (spec §3.5: at a boundary, every position a lookup may land on, at the
// alignment and at the scheduler block). kPlacement: sparse, with one
// position per prompt end and per shared-prefix junction (where a later
// request diverged from a cached chain): the one a lookup reaching that
// boundary lands on, the alignment below it, one unit lower when a draft
// model rewinds; a state costs a whole slot, so none is kept where no hit
// lands.
enum class Retention { kReference, kPlacement };

// "reference" or "placement"; kInvalidArgument naming the text otherwise.
[[nodiscard]] Result<Retention> ParseRetention(std::string_view text);

// Whose behaviour the cache follows where the two references differ.
// kSpec: the reference system of the spec (the fork's prefix cache, with
// hits inside blocks where hash units are finer, partial tail entries and
// copy-on-write of shared states). kEngine: the reference engine that
// hkv.vllm drops into (vLLM at 28be48fa): hits only on the scheduler block
// (the lcm of the groups' blocks), no partial entries, so that its own
// scheduler sees the block tables its manager would give.
enum class Behaviour { kSpec, kEngine };

// Limits (hkv/limits.h), refused by Validate: num_blocks, speculative and
// scratch blocks at most kMaxPoolBlocks; max_model_len, max_in_flight_tokens,
// the hash unit, the retention interval, every group's block (DCP-scaled),
// window, output window and chunk, and the scheduler block (the blocks'
// lcm) at most kMaxTokensPerRequest.
struct CacheConfig {
  std::vector<GroupSpec> groups = {};
  std::uint32_t num_blocks = 0;  // including the null block (id 0)
  // Per-group pools. Empty (default): every group draws from one pool of
  // num_blocks - 1 usable blocks, as the reference does. Else one count per
  // group: group g draws only from its own pool of group_pool_blocks[g]
  // blocks, whose ids follow those of the pools before it (group 0's from
  // 1), so an id says its pool; num_blocks must be 1 + their sum (one null
  // block for all). Allocations stay all or nothing across pools.
  std::vector<std::uint32_t> group_pool_blocks = {};
  // Rebalancing per-group pools (docs/beyond.md). Empty (default): each pool
  // keeps its blocks. Else one slot size per group, in bytes (1 to
  // kMaxSlotBytes): the pools share an arena of sum(group_pool_blocks[g] x
  // pool_slot_bytes[g]) bytes, group g's ids range over as many blocks as
  // the whole arena holds at its slot size, and an allocation one pool
  // cannot meet takes the bytes from other pools' oldest free blocks (their
  // keys evicted): CacheManager::TakePoolMoves says which ids gave up their
  // memory and which took it. Ids then run up to num_block_ids(), past
  // num_blocks; all ids at most kMaxPoolBlocks.
  std::vector<std::uint64_t> pool_slot_bytes = {};
  // Hash unit: must divide every group's block (after DCP scaling).
  KeySchemeOptions keys = {};
  std::uint32_t dcp = 1;  // decode-context-parallel width
  // Which window blocks and recurrent states stay keyed after a request.
  // Unset: all of them (dense). 0: only where a resend of the prompt lands.
  // R > 0 (a multiple of the scheduler block): also one per R tokens.
  std::optional<std::uint32_t> retention_interval = std::nullopt;
  // kPlacement chooses its own positions: retention_interval must be unset.
  Retention retention = Retention::kReference;
  PrefixCaching caching = PrefixCaching::kEnabled;
  KvEventMode events = KvEventMode::kDisabled;
  EvictionRecord eviction_record = EvictionRecord::kKept;
  // Where freed blocks without a key go (spec §1.3): the front of the free
  // queue (default), or, with kAppendAll, the back like every other block.
  FreeOrder free_order = FreeOrder::kPrependUncached;
  Behaviour behaviour = Behaviour::kSpec;
  // Tokens one request holds at most.
  std::uint32_t max_model_len = kMaxTokensPerRequest;
  // Tokens scheduled but not yet processed, at most (the step's chunk
  // included); unset: max_model_len. Bounds window groups' blocks for
  // whole-sequence admission (MaxBlocksPerRequest).
  std::optional<std::uint32_t> max_in_flight_tokens = std::nullopt;

  // kInvalidArgument naming the offending field and its value.
  [[nodiscard]] Result<void> Validate() const;
};

}  // namespace hkv
