// What the kind-independent code (the coordinator, the geometry, the split,
// the commit rules, validation, sizing) asks of a group kind: one table of
// traits, whose functions live in each kind's own file. Code outside a
// kind's files asks these instead of testing the kind.
//
// Thread-safety: constants and pure functions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/block_pool.h"
#include "groups/group_manager.h"
#include "hkv/group_spec.h"
#include "hkv/result.h"

namespace hkv::internal {

// What bounds a request's blocks in one group: the tokens a block covers
// (at least 1), the request's length, and its tokens in flight (at most the
// length).
struct RequestReach {
  std::uint64_t block = 1;
  std::uint64_t length = 0;
  std::uint64_t in_flight = 0;
  // ceil(min(tokens, length) / block): no sum of capped counts wraps.
  std::uint64_t Blocks(std::uint64_t tokens) const {
    tokens = tokens < length ? tokens : length;
    return tokens / block + (tokens % block != 0 ? 1 : 0);
  }
};

// The group's block as validation sees it.
struct KindCheck {
  std::uint64_t block = 0;  // tokens, DCP-scaled when sharded
  std::uint32_t hash_unit = 0;
  std::uint64_t scheduler_block = 0;  // the lcm of all groups' blocks
  std::uint32_t dcp = 1;
  bool sharded = false;  // block is block_size x dcp, dcp > 1
  bool caching = true;   // prefix caching on: lookups and commits happen
};

struct KindTraits {
  // Reads the whole prefix (full attention, MLA): its hit set is downward
  // closed, so one lookup serves every length; its chain is what a shorter
  // hit is measured against; its block is the engine's configured page.
  bool reads_whole_prefix = false;
  // Holds recurrent states: a position is resumable only where a state was
  // kept, and what limits its hits is a missing checkpoint.
  bool keeps_states = false;
  // Its blocks cover token positions (all but scratch pages, rewritten in
  // place).
  bool covers_positions = true;
  // Hits may end inside its blocks (all but chunked local).
  bool fine_capable = true;
  // Its FindLongestHit applies a requested draft rewind itself (attention
  // kinds): the coordinator then lets it look one unit (block) further.
  bool rewinds_itself = true;
  // Sparse retention thins its keys (windows and states).
  bool sparse_retention = false;
  // Its pages may carry an R-SWA output window.
  bool output_window = false;
  // Its BlockStored events carry its sliding window (spec §6.1).
  bool window_in_events = false;

  // The most blocks one request holds at once (MaxBlocksPerRequest).
  std::uint64_t (*max_blocks)(const GroupSpec& spec,
                              const RequestReach& reach) = nullptr;
  // The kind's own rules on a spec, as kInvalidArgument without the
  // group's name; counts, the hash unit and the scheduler block are checked
  // before.
  Result<void> (*check)(const GroupSpec& spec,
                        const KindCheck& block) = nullptr;
  // The group's manager. REQUIRES: the spec validated.
  std::unique_ptr<GroupManager> (*make)(BlockPool& pool,
                                        const CacheFacts& cache,
                                        const GroupGeometry& geometry,
                                        const GroupSpec& spec) = nullptr;
};

const KindTraits& TraitsOf(GroupKind kind);

// The `make` of a kind whose manager is M.
template <typename M>
std::unique_ptr<GroupManager> MakeManager(BlockPool& pool,
                                          const CacheFacts& cache,
                                          const GroupGeometry& geometry,
                                          const GroupSpec& spec) {
  return std::make_unique<M>(pool, cache, geometry, spec);
}

// kInvalidArgument with `message`, for `check`.
Result<void> SpecError(std::string message);

}  // namespace hkv::internal
