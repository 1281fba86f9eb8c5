// Chunked local attention over chunks of C tokens (spec §3.3): a position is
// resumable when the blocks from the start of its chunk up to it are cached;
// blocks of earlier chunks are never read again and are released.
//
// Thread-compatible.
#pragma once

#include "groups/group_manager.h"
#include "groups/kind_traits.h"

namespace hkv::internal {

class ChunkedLocalManager final : public GroupManager {
 public:
  // REQUIRES: chunk >= 1; alignment == block_size == hash_unit.
  ChunkedLocalManager(BlockPool& pool, const CacheFacts& cache,
                      const GroupGeometry& geometry, const GroupSpec& spec);

  // The current chunk's cached blocks from its start, after null blocks for
  // the chunks before it. O(C / b).
  GroupHit FindLongestHit(const HitQuery& query) const override;

  // Tokens of the chunks before the current one.
  std::uint32_t SkippedTokens(std::uint32_t num_computed) const override {
    return num_computed / chunk_ * chunk_;
  }

  // Registers every full block.
  void Commit(GroupTable& table, const Request& request,
              std::uint32_t num_tokens,
              std::span<const std::uint32_t> replay) override;

 private:
  std::uint32_t chunk_;
};

// The traits of chunked-local attention (groups/kind_traits.h).
const KindTraits& ChunkedLocalTraits();

}  // namespace hkv::internal
