#include "groups/sliding_window.h"

#include <algorithm>

#include "check.h"

namespace hkv::internal {

SlidingWindowManager::SlidingWindowManager(BlockPool& pool,
                                           const GroupGeometry& geometry,
                                           std::uint32_t window)
    : GroupManager(pool, geometry), window_(window) {
  HKV_DCHECK(window >= 1);
  HKV_DCHECK(geometry.alignment % geometry.block_size == 0);
}

void SlidingWindowManager::AlignDown(GroupHit& hit) const {
  const std::uint32_t b = geometry_.block_size;
  while (!hit.blocks.empty() &&
         (hit.blocks.size() * b) % geometry_.alignment != 0) {
    hit.blocks.pop_back();
  }
}

GroupHit SlidingWindowManager::FindLongestHit(std::span<const BlockHash> keys,
                                              std::uint32_t max_length) const {
  const std::uint32_t b = geometry_.block_size;
  const std::uint32_t a = geometry_.alignment;
  const bool rewind = geometry_.rewind == DraftRewind::kEagle;
  const std::uint32_t need = (window_ - 1 + b - 1) / b + (rewind ? 1 : 0);
  const auto num_full =
      static_cast<std::uint32_t>(keys.size() / (b / geometry_.hash_unit));
  const std::uint32_t limit = std::min(max_length / b, num_full);
  GroupHit hit;
  hit.blocks.assign(limit, kNullBlock);
  std::uint32_t run = 0;
  bool found = false;
  for (std::uint32_t i = limit; i-- > 0;) {
    const std::optional<BlockId> block =
        pool_.FindCached(FullBlockKey(keys, i));
    if (!block) {
      run = 0;
      continue;
    }
    if (run == 0 && b != a && ((rewind ? i : i + 1) * b) % a != 0) continue;
    hit.blocks[i] = *block;
    if (++run >= need) {
      hit.blocks.resize(i + run);
      found = true;
      break;
    }
  }
  if (!found) {
    hit.blocks.resize(run);  // the run that reaches position 0, if any
    AlignDown(hit);
  }
  if (rewind && !hit.blocks.empty()) {
    hit.blocks.pop_back();
    AlignDown(hit);
  }
  hit.num_tokens = static_cast<std::uint32_t>(hit.blocks.size()) * b;
  return hit;
}

void SlidingWindowManager::Commit(GroupTable& table, const Request& request,
                                  std::uint32_t num_tokens) {
  HKV_DCHECK(num_tokens <= request.num_tokens());
  CommitFullBlocks(table, request, num_tokens);
}

}  // namespace hkv::internal
