// Sliding-window attention over W tokens: position p is resumable when the
// blocks holding the W-1 tokens before p are cached (spec §3.2). Blocks that
// fall out of the window are released as the request advances.
//
// This is the block-aligned (coarse) lookup, for alignments that are
// multiples of the block.
//
// Thread-compatible.
#pragma once

#include "groups/group_manager.h"

namespace hkv::internal {

class SlidingWindowManager final : public GroupManager {
 public:
  // REQUIRES: window >= 1; alignment a multiple of block_size.
  SlidingWindowManager(BlockPool& pool, const GroupGeometry& geometry,
                       std::uint32_t window);

  // Scans right to left for the longest prefix whose last `need` blocks are
  // cached, need = ceil((W-1)/b) (+1 with a draft rewind, which then drops
  // the last block); a run touching position 0 is a shorter valid hit.
  // O(max_length / b).
  GroupHit FindLongestHit(std::span<const BlockHash> keys,
                          std::uint32_t max_length) const override;

  // Tokens before the last W-1 ones.
  std::uint32_t SkippedTokens(std::uint32_t num_computed) const override {
    return num_computed + 1 > window_ ? num_computed + 1 - window_ : 0;
  }

  // Registers every full block (dense retention).
  void Commit(GroupTable& table, const Request& request,
              std::uint32_t num_tokens) override;

 private:
  // Drops trailing blocks until the hit is a multiple of the alignment.
  void AlignDown(GroupHit& hit) const;

  std::uint32_t window_;
};

}  // namespace hkv::internal
