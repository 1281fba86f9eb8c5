#include "groups/recurrent_state.h"

#include <algorithm>
#include <string>

#include "check.h"
#include "groups/retention.h"

namespace hkv::internal {

RecurrentStateManager::RecurrentStateManager(BlockPool& pool,
                                             const CacheFacts& cache,
                                             const GroupGeometry& geometry,
                                             const GroupSpec& spec)
    : GroupManager(pool, cache, geometry),
      mode_(spec.recurrent_mode),
      speculative_blocks_(spec.speculative_blocks),
      exports_checkpoint_(spec.checkpoint_blocks > 0) {
  HKV_DCHECK(cache.alignment % cache.hash_unit == 0);
}

std::uint32_t RecurrentStateManager::CheckpointPosition(
    std::uint32_t num_tokens, std::uint32_t unit, DraftRewind rewind) {
  const bool eagle = rewind == DraftRewind::kEagle;
  if (num_tokens == 0) return 0;
  const std::uint32_t proof = eagle ? num_tokens : num_tokens - 1;
  const std::uint32_t position = proof / unit * unit;
  if (!eagle) return position;
  return position > unit ? position - unit : 0;
}

GroupHit RecurrentStateManager::FindLongestHit(const HitQuery& query) const {
  const std::uint32_t b = geometry_.block_size;
  const std::uint32_t a = cache_.alignment;
  const std::uint32_t unit = cache_.hash_unit;
  GroupHit hit;
  hit.blocks.resize(query.members.size());
  std::vector<BlockId> found;
  const auto place = [&](std::uint32_t index, std::uint32_t tokens) {
    for (std::size_t m = 0; m < found.size(); ++m) {
      hit.blocks[m].reserve(index + 1);  // one allocation, not two
      hit.blocks[m].assign(index, kNullBlock);
      hit.blocks[m].push_back(found[m]);
    }
    hit.num_tokens = tokens;
    hit.proven_tokens = tokens;
  };
  if (a < b) {
    // A state registered at exactly the unit boundary (u + 1) * a.
    const auto units = std::min<std::uint32_t>(
        query.max_length / a, static_cast<std::uint32_t>(query.keys.size()));
    for (std::uint32_t u = units; u-- > 0;) {
      if (ProbeAll(query.keys[u], query.members, found)) {
        place(u / (b / a), (u + 1) * a);
        return hit;
      }
    }
    return hit;
  }
  const auto num_full =
      static_cast<std::uint32_t>(query.keys.size() / (b / unit));
  for (std::uint32_t i = std::min(query.max_length / b, num_full); i-- > 0;) {
    if ((b == a || ((i + 1) * b) % a == 0) &&
        ProbeAll(BlockKey(query.keys, i), query.members, found)) {
      place(i, (i + 1) * b);
      return hit;
    }
  }
  return hit;
}

AllocationDemand RecurrentStateManager::WithSpeculativeSlots(
    const AllocationDemand& demand) const {
  AllocationDemand more = demand;
  more.num_slots += speculative_blocks_ * geometry_.block_size;
  return more;
}

std::uint32_t RecurrentStateManager::NumBlocksToAllocate(
    const GroupTable& table, const AllocationDemand& demand) const {
  // In every mode (spec §3.4.2, before the align branch): a hit on a state
  // this step registered or moved waits a step, as only this step's forward
  // or copy writes it. Only the primary key of the hit's last block counts.
  if (!demand.hit.empty() && demand.hit.back() != kNullBlock) {
    const BlockId last = demand.hit.back();
    if (pool_.primary_num_tokens(last) > 0 &&
        registered_this_step_.contains(pool_.primary_key(last))) {
      return pool_.num_blocks() + 1;
    }
  }
  if (!aligned()) {
    return GroupManager::NumBlocksToAllocate(table,
                                             WithSpeculativeSlots(demand));
  }
  const std::int64_t required =
      BlocksFor(demand.num_main) + speculative_blocks_;
  std::int64_t num_new = required -
                         static_cast<std::int64_t>(demand.hit.size()) -
                         static_cast<std::int64_t>(table.blocks.size());
  const bool partial = AdoptsPartialHit(demand) || table.partial_hit;
  num_new = std::max<std::int64_t>(num_new, 0) + (partial ? 1 : 0);
  // Slots before the current state stay null: at most the state, a copy
  // and, the first time, the speculative blocks are new.
  const std::int64_t cap = 1 + (partial ? 1 : 0) +
                           (table.allocated_once ? 0 : speculative_blocks_) +
                           (CheckpointToExport(table, demand) ? 1 : 0);
  num_new = std::min(num_new, cap);
  return static_cast<std::uint32_t>(num_new) +
         EvictableHitBlocks(demand,
                            static_cast<std::uint32_t>(table.blocks.size()));
}

std::optional<GroupTable::ExportedCheckpoint>
RecurrentStateManager::CheckpointToExport(
    const GroupTable& table, const AllocationDemand& demand) const {
  const std::uint32_t n = demand.num_main;
  if (!exports_checkpoint_ || n < demand.num_prompt_tokens) return {};
  const std::uint32_t position = CheckpointPosition(
      demand.num_prompt_tokens, cache_.alignment, cache_.draft_model);
  if (position <= demand.num_computed || position >= n || BlocksFor(n) < 2) {
    return {};
  }
  // The slot before the chunk's end state, unless it holds a state (a
  // speculative block may serve) or is a null gap inside the table.
  const std::uint32_t index = BlocksFor(n) - 2;
  const auto size = static_cast<std::uint32_t>(
      std::max(table.blocks.size(), demand.hit.size()));
  const bool speculative_tail =
      table.allocated_once && index + speculative_blocks_ >= size;
  if (index < size && !speculative_tail) return {};
  return GroupTable::ExportedCheckpoint{.position = position, .index = index};
}

void RecurrentStateManager::CommitExport(GroupTable& table,
                                         const Request& request,
                                         std::uint32_t num_tokens) {
  const auto exported = table.exported_checkpoint;
  if (!exported || num_tokens < exported->position) return;
  table.exported_checkpoint.reset();
  const BlockId block = table.blocks[exported->index];
  const PrefixKey key = UnitKey(request.keys(), exported->position);
  pool_.EvictKeys(block);  // it held an older state
  if (pool_.CachePartial(block, key, exported->position)) {
    registered_this_step_.insert(key);
    RecordUnitStored(table, request, exported->position);
  }
}

void RecurrentStateManager::CopyPartialHit(GroupTable& table,
                                           BlockId destination,
                                           std::vector<BlockId>& placed,
                                           CopyLog& log) {
  const auto [index, source] = *table.partial_hit;
  table.partial_hit.reset();
  log.copies.push_back(
      {.source = source, .destination = destination, .group = geometry_.id});
  log.retained.push_back(source);
  log.retained.push_back(destination);
  if (!table.allocated_once) {
    // A new request resumes from a copy of the shared state.
    pool_.Touch(destination);
    table.blocks[index] = destination;
    placed.push_back(destination);
    return;
  }
  // The owner keeps writing `source` (block tables only grow); the state it
  // registered moves to the copy.
  pool_.Touch(source);
  pool_.MoveKeys(source, destination);
  if (pool_.primary_num_tokens(destination) > 0) {
    registered_this_step_.insert(pool_.primary_key(destination));
  }
}

void RecurrentStateManager::AllocateNew(GroupTable& table,
                                        const AllocationDemand& demand,
                                        std::vector<BlockId>& placed,
                                        CopyLog& log) {
  if (!aligned()) {
    GroupManager::AllocateNew(table, WithSpeculativeSlots(demand), placed, log);
    return;
  }
  const std::uint32_t spec = speculative_blocks_;
  const std::uint32_t required = BlocksFor(demand.num_main) + spec;
  const std::optional<GroupTable::ExportedCheckpoint> exported =
      CheckpointToExport(table, demand);
  if (exported) table.exported_checkpoint = exported;
  if (required <= table.blocks.size() && !table.partial_hit) {
    table.allocated_once = true;
    return;
  }
  const auto previous = static_cast<std::uint32_t>(table.blocks.size());
  if (table.allocated_once && previous >= spec + 1) {
    table.last_state_index = previous - 1 - spec;
  } else if (!table.allocated_once && table.from_hit && previous > 0) {
    table.last_state_index = previous - 1;
  }
  // Slots before the current state stay null, but for an exported
  // checkpoint's.
  const std::uint32_t skipped = required - spec - 1 - (exported ? 1 : 0);
  if (table.blocks.size() < skipped) table.blocks.resize(skipped, kNullBlock);
  if (table.allocated_once) {
    // Speculative blocks now below the current state move to the end.
    for (std::uint32_t i = previous >= spec ? previous - spec : 0;
         i < previous && i < skipped; ++i) {
      table.blocks.push_back(table.blocks[i]);
      table.blocks[i] = kNullBlock;
    }
  }
  const std::uint32_t size = static_cast<std::uint32_t>(table.blocks.size());
  const std::uint32_t num_new =
      (required > size ? required - size : 0) + (table.partial_hit ? 1 : 0);
  std::vector<BlockId> fresh;
  pool_.Allocate(num_new, fresh, geometry_.pool);
  auto next = fresh.begin();
  if (table.partial_hit) CopyPartialHit(table, *next++, placed, log);
  for (; next != fresh.end(); ++next) {
    table.blocks.push_back(*next);
    placed.push_back(*next);
  }
  table.allocated_once = true;
}

void RecurrentStateManager::RemoveSkippedBlocksAsEngine(
    GroupTable& table, std::uint32_t num_processed) {
  // The reference engine's MambaManager.remove_skipped_blocks: it takes
  // num_speculative_blocks off the token count (drafts it may have counted
  // as computed), releases from the last skipped block back to the first
  // null one, then (align mode) the state block two steps old.
  const std::uint32_t n = num_processed > speculative_blocks_
                              ? num_processed - speculative_blocks_
                              : 0;
  const std::uint32_t b = geometry_.block_size;
  std::vector<BlockId> released;
  if (n > 1) {
    const std::uint32_t count = std::min<std::uint32_t>(
        (n - 1) / b, static_cast<std::uint32_t>(table.blocks.size()));
    for (std::uint32_t i = count; i-- > 0;) {
      if (table.blocks[i] == kNullBlock) break;
      released.push_back(table.blocks[i]);
      table.blocks[i] = kNullBlock;
    }
  }
  const std::optional<std::uint32_t> last = table.last_state_index;
  if (aligned() && n > 0 && last && *last + 1 < (n + b - 1) / b &&
      *last < table.blocks.size() && table.blocks[*last] != kNullBlock) {
    released.push_back(table.blocks[*last]);
    table.blocks[*last] = kNullBlock;
  }
  if (!released.empty()) pool_.Free(released);
}

void RecurrentStateManager::RemoveSkippedBlocks(GroupTable& table,
                                                std::uint32_t num_processed) {
  if (cache_.engine_rules) {
    RemoveSkippedBlocksAsEngine(table, num_processed);
    return;
  }
  if (!aligned()) {
    GroupManager::RemoveSkippedBlocks(table, num_processed);
    return;
  }
  if (num_processed == 0) return;
  const std::uint32_t b = geometry_.block_size;
  const std::uint32_t end = std::min<std::uint32_t>(
      (num_processed - 1) / b, static_cast<std::uint32_t>(table.blocks.size()));
  std::vector<BlockId> released;
  // Walk back over retired-to-be slots, past null gaps.
  for (std::uint32_t i = end; i-- > table.retired_upto;) {
    if (table.blocks[i] == kNullBlock) continue;
    released.push_back(table.blocks[i]);
    table.blocks[i] = kNullBlock;
  }
  table.retired_upto = std::max(table.retired_upto, end);
  if (table.last_state_index &&
      *table.last_state_index < (num_processed - 1) / b &&
      *table.last_state_index < table.blocks.size() &&
      table.blocks[*table.last_state_index] != kNullBlock) {
    released.push_back(table.blocks[*table.last_state_index]);
    table.blocks[*table.last_state_index] = kNullBlock;
    table.last_state_index.reset();
  }
  if (!released.empty()) pool_.Free(released);
}

void RecurrentStateManager::Commit(GroupTable& table, const Request& request,
                                   std::uint32_t num_tokens,
                                   std::span<const std::uint32_t> replay) {
  HKV_DCHECK(num_tokens <= request.num_tokens());
  if (mode_ == RecurrentMode::kNone) return;  // caches nothing
  const std::uint32_t first = table.num_committed_blocks;
  const std::uint32_t end = num_tokens / geometry_.block_size;
  // The replay positions already include their rewound neighbours.
  std::vector<bool> keep =
      first < end ? StateRetention({.start = first,
                                    .end = end,
                                    .alignment = cache_.alignment,
                                    .interval = cache_.retention_interval,
                                    .rewind = false,
                                    .reachable = replay},
                                   geometry_.block_size)
                  : std::vector<bool>{};
  if (aligned() && first < end) {
    // Only the chunk that ends here left a state; a block it skipped over
    // still holds whatever an earlier chunk wrote.
    if (keep.empty()) keep.assign(end - first, true);
    const bool ends_on_block = num_tokens % geometry_.block_size == 0;
    for (std::uint32_t i = first; i < end; ++i) {
      keep[i - first] = keep[i - first] && ends_on_block && i + 1 == end;
    }
  }
  CommitFullBlocks(table, request, num_tokens, keep);
  for (std::uint32_t i = first; i < end; ++i) {
    if (table.blocks[i] != kNullBlock && (keep.empty() || keep[i - first])) {
      registered_this_step_.insert(FullBlockKey(request.keys(), i));
    }
  }
  if (aligned()) {
    CommitExport(table, request, num_tokens);
    CommitCheckpoint(table, request, num_tokens);
  }
}

void RecurrentStateManager::CommitCheckpoint(GroupTable& table,
                                             const Request& request,
                                             std::uint32_t num_tokens) {
  const std::uint32_t unit = cache_.hash_unit;
  const std::uint32_t b = geometry_.block_size;
  if (num_tokens == 0 || num_tokens % unit != 0 ||
      num_tokens != CheckpointPosition(request.num_prompt_tokens(), unit,
                                       cache_.draft_model)) {
    return;
  }
  const std::uint32_t index = (num_tokens + b - 1) / b - 1;
  if (index >= table.blocks.size() || table.blocks[index] == kNullBlock) return;
  registered_this_step_.insert(UnitKey(request.keys(), num_tokens));
  // At a block end the checkpoint is the full block, keyed already.
  if (num_tokens % b == 0) return;
  CommitPartialEntry(table, request, num_tokens);
  // The request will overwrite this state: its next allocation copies it.
  table.partial_hit =
      GroupTable::PartialHit{.index = index, .source = table.blocks[index]};
  table.num_committed_blocks = index;
}

bool IsAlignedRecurrent(const GroupSpec& spec) {
  return TraitsOf(spec.kind).keeps_states &&
         spec.recurrent_mode == RecurrentMode::kAlign;
}

const KindTraits& RecurrentTraits() {
  static constexpr KindTraits kTraits{
      .keeps_states = true,
      .rewinds_itself = false,
      .sparse_retention = true,
      .max_blocks = [](const GroupSpec& spec,
                       const RequestReach& reach) -> std::uint64_t {
        switch (spec.recurrent_mode) {
          case RecurrentMode::kAlign:  // the state, the previous one
            return 2 + std::uint64_t{spec.speculative_blocks} +
                   spec.checkpoint_blocks;
          case RecurrentMode::kAll:  // a state per block of the chunk
            return reach.Blocks(reach.in_flight) + 1 + spec.speculative_blocks;
          case RecurrentMode::kNone:
            break;
        }
        return 1 + std::uint64_t{spec.speculative_blocks};
      },
      .check = [](const GroupSpec& spec,
                  const KindCheck& block) -> Result<void> {
        // States at every block boundary leave no room for hits between
        // them (with caching off there are no hits).
        if (spec.recurrent_mode == RecurrentMode::kAll && block.caching &&
            block.hash_unit != block.scheduler_block) {
          return SpecError(
              "a recurrent group in all mode needs hash unit == scheduler "
              "block (" +
              std::to_string(block.scheduler_block) + "), got " +
              std::to_string(block.hash_unit) + ", with prefix caching on");
        }
        return {};
      },
      .make = &MakeManager<RecurrentStateManager>,
  };
  return kTraits;
}

}  // namespace hkv::internal
