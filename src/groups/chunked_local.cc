#include "groups/chunked_local.h"

#include <algorithm>
#include <string>

#include "check.h"

namespace hkv::internal {

ChunkedLocalManager::ChunkedLocalManager(BlockPool& pool,
                                         const CacheFacts& cache,
                                         const GroupGeometry& geometry,
                                         const GroupSpec& spec)
    : GroupManager(pool, cache, geometry), chunk_(spec.chunk_size) {
  HKV_DCHECK(chunk_ >= 1);
  HKV_DCHECK(geometry.block_size == cache.hash_unit);
}

GroupHit ChunkedLocalManager::FindLongestHit(const HitQuery& query) const {
  const std::uint32_t b = geometry_.block_size;
  const std::uint32_t limit = std::min(
      query.max_length / b, static_cast<std::uint32_t>(query.keys.size()));
  const std::uint32_t start = query.max_length / chunk_ * chunk_ / b;
  GroupHit hit;
  hit.blocks.assign(query.members.size(),
                    std::vector<BlockId>(std::min(start, limit), kNullBlock));
  std::vector<BlockId> found;
  for (std::uint32_t i = start; i < limit; ++i) {
    if (!ProbeAll(BlockKey(query.keys, i), query.members, found)) break;
    Append(hit, found);
  }
  hit.num_tokens = static_cast<std::uint32_t>(hit.blocks[0].size()) * b;
  hit.proven_tokens = hit.num_tokens;
  return hit;
}

void ChunkedLocalManager::Commit(GroupTable& table, const Request& request,
                                 std::uint32_t num_tokens,
                                 std::span<const std::uint32_t> /*replay*/) {
  HKV_DCHECK(num_tokens <= request.num_tokens());
  CommitFullBlocks(table, request, num_tokens);
}

const KindTraits& ChunkedLocalTraits() {
  static constexpr KindTraits kTraits{
      .fine_capable = false,
      .rewinds_itself = false,
      .max_blocks =
          [](const GroupSpec& spec, const RequestReach& reach) {
            return reach.Blocks(std::uint64_t{spec.chunk_size} +
                                reach.in_flight);
          },
      .check = [](const GroupSpec& spec,
                  const KindCheck& block) -> Result<void> {
        if (spec.chunk_size == 0) return SpecError("chunk size must be >= 1");
        if (spec.speculation == Speculation::kEagle) {
          return SpecError("a chunked-local group cannot feed a draft model");
        }
        if (block.sharded) {
          return SpecError("a chunked-local group cannot be DCP-sharded");
        }
        if (block.block != block.hash_unit) {
          return SpecError(
              "a chunked-local group needs hash unit == block size (" +
              std::to_string(block.block) + "), got " +
              std::to_string(block.hash_unit));
        }
        // Its hits are whole blocks, so all hits align to them.
        if (spec.block_size != block.scheduler_block) {
          return SpecError(
              "a chunked-local group's block must be the scheduler block (the "
              "lcm of all blocks, " +
              std::to_string(block.scheduler_block) + "), got " +
              std::to_string(spec.block_size));
        }
        return {};
      },
      .make = &MakeManager<ChunkedLocalManager>,
  };
  return kTraits;
}

}  // namespace hkv::internal
