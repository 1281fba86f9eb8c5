#include "groups/scratch.h"

namespace hkv::internal {

GroupHit ScratchManager::FindLongestHit(const HitQuery& query) const {
  GroupHit none;
  none.blocks.resize(query.members.size());
  return none;
}

std::uint32_t ScratchManager::NumBlocksToAllocate(
    const GroupTable& table, const AllocationDemand& /*demand*/) const {
  const auto held = static_cast<std::uint32_t>(table.blocks.size());
  return held < blocks_ ? blocks_ - held : 0;
}

void ScratchManager::AllocateNew(GroupTable& table,
                                 const AllocationDemand& demand,
                                 std::vector<BlockId>& placed,
                                 CopyLog& /*log*/) {
  const std::uint32_t n = NumBlocksToAllocate(table, demand);
  const std::size_t first = table.blocks.size();
  pool_.Allocate(n, table.blocks);
  placed.insert(placed.end(),
                table.blocks.begin() + static_cast<std::ptrdiff_t>(first),
                table.blocks.end());
}

}  // namespace hkv::internal
