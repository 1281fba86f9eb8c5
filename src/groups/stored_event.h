// BlockStored events as the reference system's routers read them (spec
// §6.1-§6.2): a run of blocks of one request, or the last unit of a partial
// entry, and the re-announcement of reused blocks in "full" report mode.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/block_pool.h"
#include "groups/group_manager.h"
#include "hkv/events.h"
#include "hkv/group_spec.h"
#include "hkv/request.h"

namespace hkv::internal {

// The event for blocks [first, end) of `unit`-token hashes of `request`
// in `group`.
struct StoredRun {
  std::uint32_t first = 0;
  std::uint32_t end = 0;
  std::uint32_t unit = 0;  // tokens per hash: a block, or the hash unit
  GroupId group{0};
  // Where the request's announced tokens in this group end: tokens from
  // there to the run are reported as skipped context.
  std::uint32_t announced_upto = 0;
};
BlockStored StoredEvent(const Request& request, const StoredRun& run);

// One group's blocks of a hit the request adopts (index-aligned with its
// block table, null where the group needs nothing; empty for a group that
// caches nothing).
struct ReusedBlocks {
  std::span<const BlockId> blocks;
  std::uint32_t num_tokens = 0;  // the hit
  const GroupGeometry& geometry;
};

// What "full" report mode re-announces for a reused hit (spec §6.2): each
// run of whole blocks the hit covers, then, when the hit ends inside a
// block that holds the partial entry there, that entry's last unit.
// Changes no block state.
std::vector<BlockStored> ReuseEvents(const Request& request,
                                     const ReusedBlocks& reused,
                                     const BlockPool& pool);

// Names each BlockStored event's group kind ("full_attention", "mamba",
// ...) and, for sliding-window groups, the window (spec §6.1).
void AnnotateKinds(std::vector<KvEvent>& events,
                   std::span<const GroupSpec> groups);

}  // namespace hkv::internal
