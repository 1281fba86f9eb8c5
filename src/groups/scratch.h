// Scratch groups (spec §3: circular buffers, K-pool tails): a fixed number of
// pages per request, rewritten in place, never cached, never limiting a hit.
// The pages a request frees are unkeyed and so reused first.
//
// Thread-compatible.
#pragma once

#include "groups/group_manager.h"
#include "groups/kind_traits.h"

namespace hkv::internal {

class ScratchManager final : public GroupManager {
 public:
  ScratchManager(BlockPool& pool, const CacheFacts& cache,
                 const GroupGeometry& geometry, const GroupSpec& spec)
      : GroupManager(pool, cache, geometry), blocks_(spec.scratch_blocks) {}

  // Never asked: the coordinator leaves groups that cache nothing out.
  GroupHit FindLongestHit(const HitQuery& query) const override;
  std::uint32_t SkippedTokens(std::uint32_t) const override { return 0; }

  // The request's pages until it holds blocks_per_request, then nothing.
  std::uint32_t NumBlocksToAllocate(
      const GroupTable& table, const AllocationDemand& demand) const override;
  void AllocateNew(GroupTable& table, const AllocationDemand& demand,
                   std::vector<BlockId>& placed, CopyLog& log) override;
  void RemoveSkippedBlocks(GroupTable&, std::uint32_t) override {}

  // Registers nothing.
  void Commit(GroupTable&, const Request&, std::uint32_t,
              std::span<const std::uint32_t>) override {}

 private:
  std::uint32_t blocks_;
};

// The traits of scratch pages (groups/kind_traits.h).
const KindTraits& ScratchTraits();

}  // namespace hkv::internal
