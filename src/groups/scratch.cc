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
  pool_.Allocate(n, table.blocks, geometry_.pool);
  placed.insert(placed.end(),
                table.blocks.begin() + static_cast<std::ptrdiff_t>(first),
                table.blocks.end());
}

const KindTraits& ScratchTraits() {
  static constexpr KindTraits kTraits{
      .covers_positions = false,
      .max_blocks = [](const GroupSpec& spec, const RequestReach&)
          -> std::uint64_t { return spec.scratch_blocks; },
      .check = [](const GroupSpec& spec, const KindCheck&) -> Result<void> {
        if (spec.scratch_blocks == 0) {
          return SpecError("a scratch group needs scratch_blocks >= 1");
        }
        return {};
      },
      .make = &MakeManager<ScratchManager>,
  };
  return kTraits;
}

}  // namespace hkv::internal
