#include "groups/chunked_local.h"

#include <algorithm>

#include "check.h"

namespace hkv::internal {

ChunkedLocalManager::ChunkedLocalManager(BlockPool& pool,
                                         const GroupGeometry& geometry,
                                         std::uint32_t chunk)
    : GroupManager(pool, geometry), chunk_(chunk) {
  HKV_DCHECK(chunk >= 1);
  HKV_DCHECK(geometry.block_size == geometry.hash_unit);
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

}  // namespace hkv::internal
