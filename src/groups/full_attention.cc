#include "groups/full_attention.h"

#include <algorithm>
#include <functional>

#include "check.h"

namespace hkv::internal {

FullAttentionManager::FullAttentionManager(BlockPool& pool,
                                           const GroupGeometry& geometry)
    : GroupManager(pool, geometry) {
  HKV_DCHECK(geometry.block_size % geometry.hash_unit == 0);
  HKV_DCHECK(geometry.alignment == geometry.hash_unit ||
             geometry.alignment % geometry.block_size == 0);
}

GroupHit FullAttentionManager::FindLongestHit(std::span<const BlockHash> keys,
                                              std::uint32_t max_length) const {
  const std::uint32_t b = geometry_.block_size;
  const std::uint32_t units_per_block = b / geometry_.hash_unit;
  const auto num_full =
      static_cast<std::uint32_t>(keys.size() / units_per_block);
  GroupHit hit;
  const std::uint32_t limit = std::min(max_length / b, num_full);
  hit.blocks.reserve(limit + 1);
  pool_.FindCachedRun(keys, units_per_block, limit, geometry_.id, hit.blocks);
  hit.num_tokens = static_cast<std::uint32_t>(hit.blocks.size()) * b;
  if (fine()) ExtendIntoPage(keys, max_length, hit);

  const std::uint32_t a = geometry_.alignment;
  if (geometry_.rewind == DraftRewind::kEagle && hit.num_tokens > 0) {
    hit.num_tokens -= std::min({a, b, hit.num_tokens});
  }
  hit.num_tokens -= hit.num_tokens % a;
  hit.blocks.resize(BlocksFor(hit.num_tokens));
  return hit;
}

void FullAttentionManager::ExtendIntoPage(std::span<const BlockHash> keys,
                                          std::uint32_t max_length,
                                          GroupHit& hit) const {
  const std::uint32_t a = geometry_.alignment;  // == hash unit
  const std::uint32_t per_page = geometry_.block_size / a;
  const auto num_units = static_cast<std::uint32_t>(keys.size());
  const auto page = static_cast<std::uint32_t>(hit.blocks.size());
  const std::uint32_t first = page * per_page;
  const std::uint32_t cap =
      std::min({first + per_page - 1, max_length / a, num_units});
  if (cap <= first) return;  // max_length does not reach an interior boundary
  if ((page + 1) * per_page <= num_units) {
    // The request holds the whole page and the page is cached in full:
    // append-only KV covers every interior boundary.
    if (std::optional<BlockId> full =
            pool_.FindCached(FullBlockKey(keys, page))) {
      hit.blocks.push_back(*full);
      hit.num_tokens = cap * a;
      return;
    }
  }
  // A partial entry at a later boundary proves every earlier one in the page.
  const std::uint32_t end = std::min(first + per_page - 1, num_units);
  for (std::uint32_t u = end; u-- > first;) {
    const std::optional<BlockId> block =
        pool_.FindCached({.hash = keys[u], .group = geometry_.id});
    if (!block) continue;
    hit.blocks.push_back(*block);
    hit.num_tokens = std::min(u + 1, cap) * a;
    return;
  }
}

void FullAttentionManager::Commit(GroupTable& table, const Request& request,
                                  std::uint32_t num_tokens) {
  HKV_DCHECK(num_tokens <= request.num_tokens());
  CommitFullBlocks(table, request, num_tokens);
  if (geometry_.block_size != geometry_.hash_unit) {
    CommitPartialTail(table, request, num_tokens);
  }
}

void FullAttentionManager::CommitPartialTail(GroupTable& table,
                                             const Request& request,
                                             std::uint32_t num_tokens) {
  const std::uint32_t h = geometry_.hash_unit;
  const std::uint32_t prompt = request.num_prompt_tokens();
  std::vector<std::uint32_t> boundaries = {prompt / h * h};
  if (fine() && prompt > 0) {
    // Where a resend (capped at prompt - 1) or a draft rewind lands, at both
    // the hit alignment and the scheduler block.
    for (std::uint32_t a : {geometry_.alignment, geometry_.scheduler_block}) {
      const std::uint32_t aligned = (prompt - 1) / a * a;
      boundaries.push_back(aligned);
      if (geometry_.rewind == DraftRewind::kEagle && aligned >= a) {
        boundaries.push_back(aligned - a);
      }
    }
  }
  std::sort(boundaries.begin(), boundaries.end(), std::greater<>());
  boundaries.erase(std::unique(boundaries.begin(), boundaries.end()),
                   boundaries.end());
  const std::uint32_t b = geometry_.block_size;
  for (std::uint32_t boundary : boundaries) {
    if (boundary == 0 || boundary > num_tokens || boundary % b == 0) continue;
    const std::uint32_t index = boundary / b;
    if (index >= table.blocks.size()) continue;
    CommitPartialEntry(table, request, boundary);
  }
}

}  // namespace hkv::internal
