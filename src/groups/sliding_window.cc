#include "groups/sliding_window.h"

#include <algorithm>
#include <string>

#include "check.h"
#include "groups/retention.h"

namespace hkv::internal {

SlidingWindowManager::SlidingWindowManager(BlockPool& pool,
                                           const CacheFacts& cache,
                                           const GroupGeometry& geometry,
                                           const GroupSpec& spec)
    : GroupManager(pool, cache, geometry), window_(spec.sliding_window) {
  HKV_DCHECK(window_ >= 1);
  HKV_DCHECK(cache.alignment == cache.hash_unit ||
             cache.alignment % geometry.block_size == 0);
}

GroupHit SlidingWindowManager::FindLongestHit(const HitQuery& query) const {
  return cache_.alignment < geometry_.block_size ? FindFine(query)
                                                 : FindBlockAligned(query);
}

void SlidingWindowManager::AlignDown(GroupHit& hit) const {
  const std::uint32_t b = geometry_.block_size;
  std::size_t n = hit.blocks[0].size();
  while (n > 0 && (n * b) % cache_.alignment != 0) --n;
  for (std::vector<BlockId>& blocks : hit.blocks) blocks.resize(n);
}

GroupHit SlidingWindowManager::FindBlockAligned(const HitQuery& query) const {
  const std::uint32_t b = geometry_.block_size;
  const std::uint32_t a = cache_.alignment;
  const bool rewind = query.rewind == DraftRewind::kEagle;
  const std::uint32_t need = (window_ - 1 + b - 1) / b + (rewind ? 1 : 0);
  const auto num_full =
      static_cast<std::uint32_t>(query.keys.size() / (b / cache_.hash_unit));
  const std::uint32_t limit = std::min(query.max_length / b, num_full);
  GroupHit hit;
  hit.blocks.resize(query.members.size());
  for (std::vector<BlockId>& blocks : hit.blocks)
    blocks.assign(limit, kNullBlock);
  std::vector<BlockId> found;
  std::uint32_t run = 0;
  bool full_window = false;
  for (std::uint32_t i = limit; i-- > 0;) {
    if (!ProbeAll(BlockKey(query.keys, i), query.members, found)) {
      run = 0;
      continue;
    }
    // A run's end must land on the alignment (after the rewind's drop).
    if (run == 0 && b != a && ((rewind ? i : i + 1) * b) % a != 0) continue;
    for (std::size_t m = 0; m < found.size(); ++m) hit.blocks[m][i] = found[m];
    if (++run >= need) {
      for (std::vector<BlockId>& blocks : hit.blocks) blocks.resize(i + run);
      full_window = true;
      break;
    }
  }
  if (!full_window) {
    // No full window: the run reaching position 0 proves every block end in
    // it. (The reference aligns that run before dropping the rewound block
    // and again after, which can lose an aligned position the run proves.)
    for (std::vector<BlockId>& blocks : hit.blocks) blocks.resize(run);
    hit.proven_tokens = run * b;
    if (rewind && run > 0) {
      for (std::vector<BlockId>& blocks : hit.blocks) blocks.pop_back();
    }
    AlignDown(hit);
  } else {
    hit.proven_tokens = static_cast<std::uint32_t>(hit.blocks[0].size()) * b;
    // The run's end was chosen so that dropping one block lands aligned.
    if (rewind) {
      for (std::vector<BlockId>& blocks : hit.blocks) blocks.pop_back();
    }
  }
  hit.num_tokens = static_cast<std::uint32_t>(hit.blocks[0].size()) * b;
  return hit;
}

bool SlidingWindowManager::ProbeRun(const HitQuery& query, std::uint32_t first,
                                    std::uint32_t end, GroupHit& hit) const {
  std::vector<BlockId> found;
  for (std::uint32_t i = first; i < end; ++i) {
    if (!ProbeAll(BlockKey(query.keys, i), query.members, found)) return false;
    Append(hit, found);
  }
  return true;
}

GroupHit SlidingWindowManager::FindFine(const HitQuery& query) const {
  const std::uint32_t a = cache_.alignment;  // == hash unit
  const std::uint32_t b = geometry_.block_size;
  const std::uint32_t per_block = b / a;
  const auto num_units = static_cast<std::uint32_t>(query.keys.size());
  const bool rewind = query.rewind == DraftRewind::kEagle;
  // A rewind recomputes one more unit, so the window reaches one further.
  const std::uint32_t need_tokens = window_ - 1 + (rewind ? a : 0);
  std::vector<BlockId> tail;
  bool have_tail = false;
  std::uint32_t tail_block = 0;
  std::uint32_t scanned_to = 0;  // units >= it of tail_block were probed
  bool started = false;
  for (std::uint32_t u = std::min(query.max_length / a, num_units); u-- > 0;) {
    const std::uint32_t boundary = (u + 1) * a;
    const std::uint32_t block = (boundary - 1) / b;
    if (!started || block != tail_block) {
      started = true;
      tail_block = block;
      have_tail = false;
      scanned_to = std::min((block + 1) * per_block, num_units);
    }
    // The covering entry: at this boundary or a later one of the same block
    // (append-only KV). Each unit is probed at most once per block.
    for (; !have_tail && scanned_to > u; --scanned_to) {
      have_tail = ProbeAll(query.keys[scanned_to - 1], query.members, tail);
    }
    if (!have_tail) continue;
    const std::uint32_t first =
        boundary > need_tokens ? (boundary - need_tokens) / b : 0;
    GroupHit hit;
    hit.blocks.assign(query.members.size(),
                      std::vector<BlockId>(first, kNullBlock));
    if (!ProbeRun(query, first, block, hit)) continue;
    Append(hit, tail);
    hit.proven_tokens = boundary;
    hit.num_tokens = boundary - (rewind ? a : 0);
    for (std::vector<BlockId>& blocks : hit.blocks) {
      blocks.resize(BlocksFor(hit.num_tokens));
    }
    return hit;
  }
  GroupHit miss;
  miss.blocks.resize(query.members.size());
  return miss;
}

void SlidingWindowManager::Commit(GroupTable& table, const Request& request,
                                  std::uint32_t num_tokens,
                                  std::span<const std::uint32_t> replay) {
  HKV_DCHECK(num_tokens <= request.num_tokens());
  const std::uint32_t end = num_tokens / geometry_.block_size;
  if (table.num_committed_blocks < end) {
    const std::vector<bool> keep =
        WindowRetention({.start = table.num_committed_blocks,
                         .end = end,
                         .alignment = cache_.alignment,
                         .interval = cache_.retention_interval,
                         .rewind = geometry_.rewind == DraftRewind::kEagle,
                         .reachable = replay},
                        geometry_.block_size, window_);
    CommitFullBlocks(table, request, num_tokens, keep);
  }
  if (cache_.alignment < geometry_.block_size) {
    CommitPartialTail(table, request, num_tokens, replay);
  }
}

const KindTraits& SlidingWindowTraits() {
  static constexpr KindTraits kTraits{
      .sparse_retention = true,
      .window_in_events = true,
      // W - 1 + in-flight tokens, plus the block it straddles.
      .max_blocks =
          [](const GroupSpec& spec, const RequestReach& reach) {
            return reach.Blocks(std::uint64_t{spec.sliding_window} -
                                (spec.sliding_window > 0 ? 1 : 0) +
                                reach.in_flight) +
                   1;
          },
      .check = [](const GroupSpec& spec,
                  const KindCheck& block) -> Result<void> {
        if (spec.sliding_window == 0) {
          return SpecError("sliding window must be >= 1");
        }
        if (block.sharded) {
          return SpecError(
              "a sliding-window group cannot be DCP-sharded (dcp " +
              std::to_string(block.dcp) + "); make it replicated");
        }
        return {};
      },
      .make = &MakeManager<SlidingWindowManager>,
  };
  return kTraits;
}

}  // namespace hkv::internal
