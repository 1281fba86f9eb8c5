// Sliding-window attention over W tokens (spec §3.2): position p is
// resumable when the block holding token p-1 proves p (a full entry, or a
// partial entry at p or at a later boundary of the same block) and the
// blocks holding the W-1 tokens before p are cached. Blocks that fall out of
// the window are released as the request advances.
//
// Thread-compatible.
#pragma once

#include "groups/group_manager.h"
#include "groups/kind_traits.h"

namespace hkv::internal {

class SlidingWindowManager final : public GroupManager {
 public:
  // REQUIRES: window >= 1; alignment is the hash unit or a multiple of the
  // block.
  SlidingWindowManager(BlockPool& pool, const CacheFacts& cache,
                       const GroupGeometry& geometry, const GroupSpec& spec);

  // Block-aligned alignment: scans right to left for the longest prefix
  // whose last ceil((W-1)/b) blocks are cached (one more, then dropped, with
  // a rewind); a run touching position 0 is a shorter valid hit.
  // Finer alignment: the largest unit boundary whose tail block covers it
  // and whose window (one unit longer with a rewind) is cached.
  // O(max_length / b) probes, times the window in blocks when fine.
  GroupHit FindLongestHit(const HitQuery& query) const override;

  // Tokens before the last W-1 ones.
  std::uint32_t SkippedTokens(std::uint32_t num_computed) const override {
    return num_computed + 1 > window_ ? num_computed + 1 - window_ : 0;
  }

  // Registers every full block (dense retention), then, when hits may end
  // inside blocks, the prompt's partial tail.
  void Commit(GroupTable& table, const Request& request,
              std::uint32_t num_tokens,
              std::span<const std::uint32_t> replay) override;

 private:
  GroupHit FindBlockAligned(const HitQuery& query) const;
  GroupHit FindFine(const HitQuery& query) const;
  // Drops trailing blocks until the hit is a multiple of the alignment.
  void AlignDown(GroupHit& hit) const;
  // Whether blocks [first, end) are cached in every member; appends them.
  bool ProbeRun(const HitQuery& query, std::uint32_t first, std::uint32_t end,
                GroupHit& hit) const;

  std::uint32_t window_;
};

// The traits of sliding-window attention (groups/kind_traits.h).
const KindTraits& SlidingWindowTraits();

}  // namespace hkv::internal
