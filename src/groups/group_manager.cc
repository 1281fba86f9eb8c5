#include "groups/group_manager.h"

#include <algorithm>
#include <functional>

#include "check.h"
#include "groups/stored_event.h"

namespace hkv::internal {

bool GroupManager::ProbeAll(const BlockHash& key,
                            std::span<const GroupId> members,
                            std::vector<BlockId>& found) const {
  found.resize(members.size());
  for (std::size_t m = 0; m < members.size(); ++m) {
    const std::optional<BlockId> block =
        pool_.FindCached({.hash = key, .group = members[m]});
    if (!block) return false;
    found[m] = *block;
  }
  return true;
}

void GroupManager::Append(GroupHit& hit, const std::vector<BlockId>& found) {
  for (std::size_t m = 0; m < found.size(); ++m)
    hit.blocks[m].push_back(found[m]);
}

PrefixKey GroupManager::UnitKey(std::span<const BlockHash> keys,
                                std::uint32_t num_tokens) const {
  HKV_DCHECK(num_tokens > 0 && num_tokens % cache_.hash_unit == 0);
  return {.hash = keys[num_tokens / cache_.hash_unit - 1],
          .group = geometry_.id};
}

std::uint32_t GroupManager::NumBlocksToAllocate(
    const GroupTable& table, const AllocationDemand& demand) const {
  const std::span<const BlockId> hit = demand.hit;
  std::uint32_t required = BlocksFor(demand.num_slots);
  if (demand.gate == AdmissionGate::kWholeSequence) {
    required = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(required, geometry_.admission_cap));
  }
  const auto held = static_cast<std::uint32_t>(table.blocks.size());
  const std::uint32_t skipped = SkippedBlocks(demand.num_computed);
  const std::uint32_t local = static_cast<std::uint32_t>(hit.size()) + held;
  const std::uint32_t num_new =
      required - std::min(required, std::max(skipped, local));
  return num_new + EvictableHitBlocks(demand, held) +
         (AdoptsPartialHit(demand) ? 1 : 0);
}

std::uint32_t GroupManager::EvictableHitBlocks(const AllocationDemand& demand,
                                               std::uint32_t held) const {
  const std::uint32_t skipped = SkippedBlocks(demand.num_computed);
  const std::span<const BlockId> hit = demand.hit;
  const std::size_t first = skipped > held ? skipped - held : 0;
  return first < hit.size() ? pool_.NumUnreferenced(hit.subspan(first)) : 0;
}

bool GroupManager::AdoptsPartialHit(const AllocationDemand& demand) const {
  const std::uint32_t b = geometry_.block_size;
  return demand.hit.size() > SkippedBlocks(demand.num_computed) &&
         demand.num_local_computed % b != 0;
}

void GroupManager::AdoptHit(GroupTable& table, const AllocationDemand& demand) {
  HKV_DCHECK(table.blocks.empty());
  const std::span<const BlockId> hit = demand.hit;
  // Blocks the request no longer reads stay null, hit or not.
  const std::uint32_t skipped = SkippedBlocks(demand.num_computed);
  table.blocks.assign(skipped, kNullBlock);
  if (hit.size() > skipped) {
    table.blocks.insert(table.blocks.end(), hit.begin() + skipped, hit.end());
    pool_.TouchAll(hit.subspan(skipped));
  }
  table.num_committed_blocks = static_cast<std::uint32_t>(table.blocks.size());
  table.num_prompt_tokens = demand.num_prompt_tokens;
  table.from_hit = hit.size() > skipped;
  if (AdoptsPartialHit(demand)) {
    const std::uint32_t index =
        demand.num_local_computed / geometry_.block_size;
    table.partial_hit =
        GroupTable::PartialHit{.index = index, .source = hit.back()};
    table.num_committed_blocks = index;
  }
}

void GroupManager::AllocateNew(GroupTable& table,
                               const AllocationDemand& demand,
                               std::vector<BlockId>& placed, CopyLog& log) {
  if (table.partial_hit) {
    const auto [index, source] = *table.partial_hit;
    table.partial_hit.reset();
    const BlockId destination = pool_.AllocateOne(geometry_.pool);
    pool_.Touch(destination);  // pinned with the source until the copy ran
    table.blocks[index] = destination;
    log.copies.push_back(
        {.source = source, .destination = destination, .group = geometry_.id});
    log.retained.push_back(source);
    log.retained.push_back(destination);
    placed.push_back(destination);
  }
  const std::uint32_t required = BlocksFor(demand.num_slots);
  const auto held = static_cast<std::uint32_t>(table.blocks.size());
  if (required <= held) return;
  const std::size_t first_new = table.blocks.size();
  pool_.Allocate(required - held, table.blocks, geometry_.pool);
  placed.insert(placed.end(),
                table.blocks.begin() + static_cast<std::ptrdiff_t>(first_new),
                table.blocks.end());
}

void GroupManager::RemoveSkippedBlocks(GroupTable& table,
                                       std::uint32_t num_processed) {
  const std::uint32_t count =
      std::min<std::uint32_t>(SkippedBlocks(num_processed),
                              static_cast<std::uint32_t>(table.blocks.size()));
  std::vector<BlockId> released;
  for (std::uint32_t i = count; i-- > 0;) {
    if (table.blocks[i] == kNullBlock) break;  // freed by an earlier call
    released.push_back(table.blocks[i]);
    table.blocks[i] = kNullBlock;
  }
  if (!released.empty()) pool_.Free(released);
}

void GroupManager::Free(GroupTable& table) {
  pool_.Free(table.blocks, BlockPool::Walk::kLastToFirst);
  table = GroupTable{};
}

void GroupManager::CommitFullBlocks(GroupTable& table, const Request& request,
                                    std::uint32_t num_tokens,
                                    const std::vector<bool>& keep,
                                    Chaining chaining) {
  const std::uint32_t b = geometry_.block_size;
  const std::uint32_t full = num_tokens / b;
  HKV_DCHECK(full <= table.blocks.size());
  EventLog& events = pool_.events();
  const std::uint32_t first = table.num_committed_blocks;
  std::uint32_t run_start = first;
  // The block registered first under the previous depth's key.
  BlockId previous = kNullBlock;
  if (chaining == Chaining::kChained && first > 0 && first < full) {
    previous = pool_.FindCached(FullBlockKey(request.keys(), first - 1))
                   .value_or(kNullBlock);
  }
  constexpr std::uint32_t kAhead = 8;
  for (std::uint32_t i = first; i < full; ++i) {
    const BlockId block = table.blocks[i];
    if (block == kNullBlock || (!keep.empty() && !keep[i - first])) {
      if (events.enabled() && run_start < i) {
        RecordRun(table, request, run_start, i);
      }
      run_start = i + 1;
      previous = kNullBlock;
      continue;
    }
    if (i + kAhead < full) {  // the misses overlap (BlockPool::Allocate)
      const PrefixKey ahead = FullBlockKey(request.keys(), i + kAhead);
      __builtin_prefetch(pool_.IndexHome(ahead));
      __builtin_prefetch(pool_.EvictedSet(ahead));
    }
    const PrefixKey key = FullBlockKey(request.keys(), i);
    if (chaining == Chaining::kChained) {
      previous = pool_.CacheChained(block, key, (i + 1) * b, i, previous);
    } else {
      pool_.CacheFull(block, key, (i + 1) * b);
    }
  }
  if (events.enabled() && run_start < full) {
    RecordRun(table, request, run_start, full);
  }
  table.num_committed_blocks = std::max(table.num_committed_blocks, full);
}

void GroupManager::CommitPartialTail(const GroupTable& table,
                                     const Request& request,
                                     std::uint32_t num_tokens,
                                     std::span<const std::uint32_t> replay) {
  const std::uint32_t h = cache_.hash_unit;
  const std::uint32_t b = geometry_.block_size;
  std::vector<std::uint32_t> boundaries = {request.num_prompt_tokens() / h * h};
  if (cache_.alignment < b) {
    boundaries.insert(boundaries.end(), replay.begin(), replay.end());
  }
  // Longest first: a block's primary entry is its longest.
  std::sort(boundaries.begin(), boundaries.end(), std::greater<>());
  boundaries.erase(std::unique(boundaries.begin(), boundaries.end()),
                   boundaries.end());
  for (std::uint32_t boundary : boundaries) {
    if (boundary == 0 || boundary > num_tokens || boundary % b == 0) continue;
    if (boundary / b >= table.blocks.size()) continue;
    CommitPartialEntry(table, request, boundary);
  }
}

void GroupManager::CommitPartialEntry(const GroupTable& table,
                                      const Request& request,
                                      std::uint32_t boundary) {
  const BlockId block = table.blocks[boundary / geometry_.block_size];
  if (pool_.CachePartial(block, UnitKey(request.keys(), boundary), boundary)) {
    RecordUnitStored(table, request, boundary);
  }
}

void GroupManager::RecordUnitStored(const GroupTable& table,
                                    const Request& request,
                                    std::uint32_t boundary) {
  if (!pool_.events().enabled()) return;
  const std::uint32_t unit = cache_.hash_unit;
  pool_.events().Record(
      StoredEvent(request, {.first = boundary / unit - 1,
                            .end = boundary / unit,
                            .unit = unit,
                            .group = geometry_.id,
                            .announced_upto = table.announced_upto}));
}

void GroupManager::RecordRun(GroupTable& table, const Request& request,
                             std::uint32_t first, std::uint32_t end) {
  const std::uint32_t b = geometry_.block_size;
  pool_.events().Record(
      StoredEvent(request, {.first = first,
                            .end = end,
                            .unit = b,
                            .group = geometry_.id,
                            .announced_upto = table.announced_upto}));
  table.announced_upto = end * b;
}

}  // namespace hkv::internal
