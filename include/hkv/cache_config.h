// A cache's configuration: its groups, pool, keys and policies, and the
// validation CacheManager::Create runs.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "hkv/group_spec.h"
#include "hkv/keys.h"
#include "hkv/limits.h"
#include "hkv/result.h"
#include "hkv/types.h"

namespace hkv {

enum class PrefixCaching { kEnabled, kDisabled };
enum class KvEventMode { kDisabled, kEnabled };

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
  // Hash unit: must divide every group's block (after DCP scaling).
  KeySchemeOptions keys = {};
  std::uint32_t dcp = 1;  // decode-context-parallel width
  // Which window blocks and recurrent states stay keyed after a request.
  // Unset: all of them (dense). 0: only where a resend of the prompt lands.
  // R > 0 (a multiple of the scheduler block): also one per R tokens.
  std::optional<std::uint32_t> retention_interval = std::nullopt;
  PrefixCaching caching = PrefixCaching::kEnabled;
  KvEventMode events = KvEventMode::kDisabled;
  // Where freed blocks without a key go (spec §1.3): the front of the free
  // queue (default), or, with kAppendAll, the back like every other block.
  FreeOrder free_order = FreeOrder::kPrependUncached;
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
