// Full attention (and MLA): every position up to the end of the longest chain
// of the request's keys is resumable. With an output window (R-SWA), decode
// reads the prompt and the last W outputs only, and the blocks between are
// released as the request advances. With a hash unit finer than the block,
// a hit may end inside a page: a cached entry at a later boundary of the same
// page proves every earlier boundary there (spec §3.1, phase 2).
//
// Thread-compatible.
#pragma once

#include "groups/group_manager.h"
#include "groups/kind_traits.h"

namespace hkv::internal {

class FullAttentionManager final : public GroupManager {
 public:
  // REQUIRES: hash_unit divides block_size; alignment is hash_unit (fine
  // hits) or a multiple of block_size.
  // `output_window`: 0, or the R-SWA window over the outputs.
  FullAttentionManager(BlockPool& pool, const CacheFacts& cache,
                       const GroupGeometry& geometry, const GroupSpec& spec);

  // Phase 1: the run of cached full blocks from position 0. Phase 2 (fine):
  // the first page not matched in full, proven by its own full entry or by a
  // partial entry at or above the boundary, capped by max_length. Then the
  // draft rewind of one alignment unit (at most one block). O(hit blocks +
  // b/u).
  GroupHit FindLongestHit(const HitQuery& query) const override;

  std::uint32_t SkippedTokens(std::uint32_t) const override { return 0; }

  // With an output window: releases the output blocks no longer read, the
  // gap [ceil(P / b), max(P, processed - window) / b), last first.
  void RemoveSkippedBlocks(GroupTable& table,
                           std::uint32_t num_processed) override;

  // Registers full blocks, then (block != hash unit) the prompt's partial
  // tail entries (spec §3.7.1).
  void Commit(GroupTable& table, const Request& request,
              std::uint32_t num_tokens,
              std::span<const std::uint32_t> replay) override;

 private:
  bool fine() const { return cache_.alignment < geometry_.block_size; }
  std::uint32_t output_window_;
  // Extends `hit` into the first page not matched in full (phase 2).
  void ExtendIntoPage(const HitQuery& query, GroupHit& hit) const;
};

// The traits of full attention (groups/kind_traits.h).
const KindTraits& FullAttentionTraits();

}  // namespace hkv::internal
