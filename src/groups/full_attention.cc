#include "groups/full_attention.h"

#include <algorithm>

#include "check.h"

namespace hkv::internal {

FullAttentionManager::FullAttentionManager(BlockPool& pool,
                                           const CacheFacts& cache,
                                           const GroupGeometry& geometry,
                                           const GroupSpec& spec)
    : GroupManager(pool, cache, geometry), output_window_(spec.output_window) {
  HKV_DCHECK(geometry.block_size % cache.hash_unit == 0);
  HKV_DCHECK(cache.alignment == cache.hash_unit ||
             cache.alignment % geometry.block_size == 0);
}

GroupHit FullAttentionManager::FindLongestHit(const HitQuery& query) const {
  const std::uint32_t b = geometry_.block_size;
  const std::uint32_t units_per_block = b / cache_.hash_unit;
  const auto num_full =
      static_cast<std::uint32_t>(query.keys.size() / units_per_block);
  GroupHit hit;
  hit.blocks.resize(query.members.size());
  // Phase 1, per member: each run starts at 0, so their common part is the
  // shortest one.
  std::size_t run = std::min(query.max_length / b, num_full);
  for (std::size_t m = 0; m < query.members.size(); ++m) {
    hit.blocks[m].reserve(run + 1);
    pool_.FindCachedRun(query.keys, units_per_block, run, query.members[m],
                        hit.blocks[m]);
    run = hit.blocks[m].size();
  }
  for (std::vector<BlockId>& blocks : hit.blocks) blocks.resize(run);
  hit.num_tokens = static_cast<std::uint32_t>(run) * b;
  if (fine()) ExtendIntoPage(query, hit);

  const std::uint32_t a = cache_.alignment;
  hit.proven_tokens = hit.num_tokens;
  if (query.rewind == DraftRewind::kEagle && hit.num_tokens > 0) {
    hit.num_tokens -= std::min({a, b, hit.num_tokens});
  }
  hit.num_tokens -= hit.num_tokens % a;
  for (std::vector<BlockId>& blocks : hit.blocks) {
    blocks.resize(BlocksFor(hit.num_tokens));
  }
  return hit;
}

void FullAttentionManager::ExtendIntoPage(const HitQuery& query,
                                          GroupHit& hit) const {
  const std::uint32_t a = cache_.alignment;  // == hash unit
  const std::uint32_t per_page = geometry_.block_size / a;
  const auto num_units = static_cast<std::uint32_t>(query.keys.size());
  const std::uint32_t page = hit.num_tokens / geometry_.block_size;
  const std::uint32_t first = page * per_page;
  const std::uint32_t cap =
      std::min({first + per_page - 1, query.max_length / a, num_units});
  if (cap <= first) return;  // max_length does not reach an interior boundary
  // The request holds the whole page and the page is cached in full:
  // append-only KV covers every interior boundary.
  std::vector<BlockId> found;
  if ((page + 1) * per_page <= num_units &&
      ProbeAll(BlockKey(query.keys, page), query.members, found)) {
    Append(hit, found);
    hit.num_tokens = cap * a;
    return;
  }
  // A partial entry at a later boundary proves every earlier one in the page.
  const std::uint32_t end = std::min(first + per_page - 1, num_units);
  for (std::uint32_t u = end; u-- > first;) {
    if (ProbeAll(query.keys[u], query.members, found)) {
      Append(hit, found);
      hit.num_tokens = std::min(u + 1, cap) * a;
      return;
    }
  }
}

void FullAttentionManager::Commit(GroupTable& table, const Request& request,
                                  std::uint32_t num_tokens,
                                  std::span<const std::uint32_t> replay) {
  HKV_DCHECK(num_tokens <= request.num_tokens());
  CommitFullBlocks(table, request, num_tokens, {}, Chaining::kChained);
  if (geometry_.block_size != cache_.hash_unit) {
    CommitPartialTail(table, request, num_tokens, replay);
  }
}

void FullAttentionManager::RemoveSkippedBlocks(GroupTable& table,
                                               std::uint32_t num_processed) {
  if (output_window_ == 0) return;
  const std::uint32_t b = geometry_.block_size;
  const std::uint32_t prompt = table.num_prompt_tokens;
  const std::uint32_t first = (prompt + b - 1) / b;
  const std::uint32_t read_from = num_processed > prompt + output_window_
                                      ? num_processed - output_window_
                                      : prompt;
  const std::uint32_t end = std::min<std::uint32_t>(
      read_from / b, static_cast<std::uint32_t>(table.blocks.size()));
  std::vector<BlockId> released;
  for (std::uint32_t i = end; i-- > first;) {
    if (table.blocks[i] == kNullBlock) break;  // released by an earlier call
    released.push_back(table.blocks[i]);
    table.blocks[i] = kNullBlock;
  }
  if (!released.empty()) pool_.Free(released);
}

const KindTraits& FullAttentionTraits() {
  static constexpr KindTraits kTraits{
      .reads_whole_prefix = true,
      .output_window = true,
      .max_blocks =
          [](const GroupSpec&, const RequestReach& reach) {
            return reach.Blocks(reach.length);
          },
      .check = [](const GroupSpec&, const KindCheck&) -> Result<void> {
        return {};
      },
      .make = &MakeManager<FullAttentionManager>,
  };
  return kTraits;
}

}  // namespace hkv::internal
