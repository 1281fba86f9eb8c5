#include "cache/state_snapshot.h"

#include <algorithm>
#include <string>
#include <variant>
#include <vector>

namespace hkv::internal {
namespace {

void Put(std::string& out, std::uint64_t n) {
  out += std::to_string(n);
  out += ' ';
}

void Put(std::string& out, const BlockHash& hash) {
  out += hash.Hex(16);
  out += ' ';
}

void Put(std::string& out, std::span<const BlockId> blocks) {
  out += '[';
  for (BlockId b : blocks) Put(out, ToIndex(b));
  out += "] ";
}

void PutKey(std::string& out, const BlockPool& pool, const PrefixKey& key) {
  out += "key ";
  Put(out, key.hash);
  Put(out, ToIndex(key.group));
  // Which block a lookup finds first matters when several hold the key.
  Put(out, ToIndex(pool.FindCached(key).value_or(kNullBlock)));
}

void PutPool(std::string& out, const BlockPool& pool) {
  out += "pool generation ";
  Put(out, pool.key_generation());
  Put(out, pool.stats().evicted_blocks);
  Put(out, pool.num_keys());
  out += "\nfree ";
  Put(out, pool.FreeQueueSnapshot());
  if (pool.rebalances()) {
    out += "\nparked ";
    Put(out, pool.stats().parked_blocks);
    Put(out, pool.spare_bytes());
    for (std::uint32_t p = 0; p < pool.num_pools(); ++p) {
      Put(out, pool.parked_ids(p));  // in the order they come back
    }
    out += "\nages ";
    for (std::uint32_t i = 1; i < pool.num_blocks(); ++i) {
      if (pool.primary_num_tokens(BlockId{i}) > 0) {
        Put(out, pool.EvictionAge(BlockId{i}));
      }
    }
  }
  out += '\n';
  for (std::uint32_t i = 0; i < pool.num_blocks(); ++i) {
    const BlockId id{i};
    if (pool.ref_count(id) == 0 && pool.primary_num_tokens(id) == 0) continue;
    out += "block ";
    Put(out, i);
    Put(out, pool.ref_count(id));
    Put(out, pool.primary_num_tokens(id));
    for (const PrefixKey& key : pool.KeysOf(id)) PutKey(out, pool, key);
    out += '\n';
  }
}

void PutTable(std::string& out, const GroupTable& t) {
  out += "  table ";
  Put(out, t.blocks);
  Put(out, t.num_committed_blocks);
  if (t.partial_hit) {
    out += "partial ";
    Put(out, t.partial_hit->index);
    Put(out, ToIndex(t.partial_hit->source));
  }
  Put(out, t.from_hit ? 1 : 0);
  Put(out, t.num_prompt_tokens);
  Put(out, t.announced_upto);
  Put(out, t.allocated_once ? 1 : 0);
  Put(out, t.retired_upto);
  if (t.last_state_index) {
    out += "last ";
    Put(out, *t.last_state_index);
  }
  if (t.exported_checkpoint) {
    out += "export ";
    Put(out, t.exported_checkpoint->position);
    Put(out, t.exported_checkpoint->index);
  }
  out += '\n';
}

void PutHashes(std::string& out, std::span<const BlockHash> hashes) {
  out += '[';
  for (const BlockHash& h : hashes) Put(out, h);
  out += "] ";
}

void PutEvent(std::string& out, const KvEvent& event) {
  if (const auto* stored = std::get_if<BlockStored>(&event)) {
    out += "stored ";
    PutHashes(out, stored->block_hashes);
    if (stored->parent_block_hash) Put(out, *stored->parent_block_hash);
    Put(out, stored->token_ids.size());
    Put(out, stored->block_size);
    Put(out, ToIndex(stored->group));
    Put(out, stored->lora_id.value_or(0));
    Put(out, stored->extra_keys.size());
    if (stored->skipped_parent_block_hash) {
      Put(out, *stored->skipped_parent_block_hash);
    }
    Put(out, stored->skipped_token_ids.size());
  } else if (const auto* removed = std::get_if<BlockRemoved>(&event)) {
    out += "removed ";
    PutHashes(out, removed->block_hashes);
    Put(out, ToIndex(removed->group));
  } else {
    out += "cleared ";
  }
  out += '\n';
}

void PutStats(std::string& out, const PrefixCacheStats& s) {
  out += "stats ";
  for (std::uint64_t n :
       {s.requests, s.queries, s.hits, std::uint64_t{s.reset},
        s.speculative_rewind.requests, s.speculative_rewind.tokens,
        s.no_checkpoint.requests, s.no_checkpoint.tokens,
        s.window_not_covered.requests, s.window_not_covered.tokens,
        s.evicted.requests, s.evicted.tokens}) {
    Put(out, n);
  }
  out += '\n';
}

}  // namespace

std::string StateSnapshot(const CacheCore& core) {
  std::string out;
  PutPool(out, core.pool_);
  std::vector<RequestId> ids;
  for (const auto& entry : core.requests_) ids.push_back(entry.first);
  std::sort(ids.begin(), ids.end());
  for (RequestId id : ids) {
    const CacheCore::RequestState& state = core.requests_.at(id);
    out += "request ";
    Put(out, static_cast<std::uint64_t>(id));
    Put(out, state.num_slots);
    Put(out, state.shared_prefix_boundary);
    out += '\n';
    for (const GroupTable& table : state.tables) PutTable(out, table);
  }
  out += "copies ";
  for (const BlockCopy& copy : core.pending_copies_.copies) {
    Put(out, ToIndex(copy.source));
    Put(out, ToIndex(copy.destination));
    Put(out, ToIndex(copy.group));
  }
  out += "\nretained ";
  Put(out, core.pending_copies_.retained);
  out += "\npinned ";
  Put(out, core.pinned_copies_);
  if (core.pool_.rebalances()) {
    out += "\nmoves to take ";
    Put(out, core.moved_since_take_ ? 1 : 0);
    for (std::uint32_t i = 1; i < core.parked_at_take_.size(); ++i) {
      if (core.parked_at_take_[i]) Put(out, i);
    }
  }
  out += '\n';
  PutStats(out, core.stats_);
  for (const KvEvent& event : core.pool_.events().pending()) {
    PutEvent(out, event);
  }
  return out;
}

}  // namespace hkv::internal
