#include "core/block_pool.h"

#include "check.h"

namespace hkv::internal {

BlockPool::BlockPool(std::uint32_t num_blocks, Caching caching, Events events)
    : caching_(caching),
      blocks_(num_blocks),
      free_queue_(num_blocks),
      events_(events),
      evicted_(num_blocks) {
  HKV_REQUIRE(num_blocks >= 1, "a pool needs at least the null block");
  const BlockId null_block = free_queue_.PopFront();
  HKV_DCHECK(null_block == kNullBlock);
}

double BlockPool::usage() const {
  const std::uint32_t usable = num_blocks() - 1;
  if (usable == 0) return 0.0;
  return 1.0 - static_cast<double>(num_free_blocks()) / usable;
}

BlockId BlockPool::AllocateOne() {
  HKV_DCHECK(!free_queue_.empty());
  const BlockId id = free_queue_.PopFront();
  if (HasPrimary(ToIndex(id))) {
    RememberEvicted(id);
    EvictKeys(id);
    ++stats_.evicted_blocks;
  }
  HKV_DCHECK(blocks_[ToIndex(id)].ref_count == 0);
  blocks_[ToIndex(id)].ref_count = 1;
  return id;
}

void BlockPool::Allocate(std::uint32_t n, std::vector<BlockId>& out) {
  HKV_DCHECK(n <= num_free_blocks());
  for (std::uint32_t i = 0; i < n; ++i) out.push_back(AllocateOne());
}

void BlockPool::Touch(BlockId id) {
  if (id == kNullBlock) return;
  Block& b = blocks_[ToIndex(id)];
  if (b.ref_count == 0) free_queue_.Remove(id);
  ++b.ref_count;
}

void BlockPool::Free(std::span<const BlockId> ordered) {
  for (BlockId id : ordered) {
    HKV_REQUIRE(id == kNullBlock || blocks_[ToIndex(id)].ref_count > 0,
                "freeing a block that holds no reference");
  }
  // Uncached blocks go to the front in list order; cached ones age at the back.
  free_scratch_.clear();
  for (BlockId id : ordered) {
    if (id == kNullBlock) continue;
    Block& b = blocks_[ToIndex(id)];
    if (--b.ref_count > 0) continue;
    if (HasPrimary(ToIndex(id))) {
      free_queue_.PushBack(id);
    } else {
      free_scratch_.push_back(id);
    }
  }
  for (auto it = free_scratch_.rbegin(); it != free_scratch_.rend(); ++it) {
    free_queue_.PushFront(*it);
  }
}

void BlockPool::SetPrimary(BlockId id, const PrefixKey& key,
                           std::uint32_t num_tokens) {
  Block& b = blocks_[ToIndex(id)];
  b.primary = key;
  b.primary_num_tokens = num_tokens;
  index_.Insert(key, id);
  evicted_.Forget(key);
}

void BlockPool::AddAlias(BlockId id, const PrefixKey& key) {
  aliases_[id].push_back(key);
  index_.Insert(key, id);
  evicted_.Forget(key);
}

void BlockPool::CacheFull(BlockId id, const PrefixKey& key,
                          std::uint32_t num_tokens) {
  HKV_DCHECK(id != kNullBlock && num_tokens > 0);
  if (!caching_enabled()) return;
  const std::uint32_t i = ToIndex(id);
  if (HasPrimary(i)) {
    HKV_DCHECK(blocks_[i].primary_num_tokens < num_tokens);
    EvictKeys(id);  // a partial entry is promoted to the full block
  }
  SetPrimary(id, key, num_tokens);
}

bool BlockPool::CachePartial(BlockId id, const PrefixKey& key,
                             std::uint32_t num_tokens) {
  if (id == kNullBlock || !caching_enabled()) return false;
  const std::uint32_t i = ToIndex(id);
  const bool already = index_.Contains(key, id);
  if (!already && HasPrimary(i) && blocks_[i].primary_num_tokens < num_tokens) {
    EvictKeys(id);  // a longer boundary supersedes the shorter entries
  }
  if (already) return false;
  if (HasPrimary(i)) {
    AddAlias(id, key);
  } else {
    SetPrimary(id, key, num_tokens);
  }
  return true;
}

void BlockPool::RememberEvicted(BlockId id) {
  evicted_.Remember(blocks_[ToIndex(id)].primary);
  if (auto it = aliases_.find(id); it != aliases_.end()) {
    for (const PrefixKey& key : it->second) evicted_.Remember(key);
  }
}

void BlockPool::RecordRemoval(const PrefixKey& key) {
  // Checked here: building the event allocates its vector of hashes.
  if (!events_.enabled()) return;
  events_.Record(BlockRemoved{.block_hashes = {key.hash}, .group = key.group});
}

void BlockPool::EvictKeys(BlockId id) {
  Block& b = blocks_[ToIndex(id)];
  if (b.primary_num_tokens == 0) return;
  ++key_generation_;
  index_.Erase(b.primary, id);
  RecordRemoval(b.primary);
  b.primary_num_tokens = 0;
  b.primary = PrefixKey{};
  if (auto it = aliases_.find(id); it != aliases_.end()) {
    for (const PrefixKey& key : it->second) {
      index_.Erase(key, id);
      RecordRemoval(key);
    }
    aliases_.erase(it);
  }
}

void BlockPool::MoveKeys(BlockId source, BlockId destination) {
  Block& from = blocks_[ToIndex(source)];
  HKV_DCHECK(blocks_[ToIndex(destination)].primary_num_tokens == 0);
  if (from.primary_num_tokens == 0) return;
  ++key_generation_;
  index_.Erase(from.primary, source);
  SetPrimary(destination, from.primary, from.primary_num_tokens);
  from.primary_num_tokens = 0;
  from.primary = PrefixKey{};
  if (auto it = aliases_.find(source); it != aliases_.end()) {
    const absl::InlinedVector<PrefixKey, 1> keys = std::move(it->second);
    aliases_.erase(it);
    for (const PrefixKey& key : keys) {
      index_.Erase(key, source);
      AddAlias(destination, key);
    }
  }
}

bool BlockPool::Reset() {
  if (num_blocks() - num_free_blocks() != 1) return false;
  ++key_generation_;
  index_.Clear();
  evicted_.Clear();
  aliases_.clear();
  for (Block& b : blocks_) {
    b.primary_num_tokens = 0;
    b.primary = PrefixKey{};
  }
  events_.Record(AllBlocksCleared{});
  return true;
}

std::vector<PrefixKey> BlockPool::KeysOf(BlockId id) const {
  std::vector<PrefixKey> keys;
  if (!HasPrimary(ToIndex(id))) return keys;
  keys.push_back(blocks_[ToIndex(id)].primary);
  if (auto it = aliases_.find(id); it != aliases_.end()) {
    keys.insert(keys.end(), it->second.begin(), it->second.end());
  }
  return keys;
}

bool BlockPool::CheckInvariants() const {
  if (!free_queue_.CheckInvariants() || free_queue_.Contains(kNullBlock))
    return false;
  std::size_t keys = 0;
  for (std::uint32_t i = 1; i < num_blocks(); ++i) {
    const Block& b = blocks_[i];
    const BlockId id{i};
    if (free_queue_.Contains(id) != (b.ref_count == 0)) return false;
    if (!HasPrimary(i)) {
      if (aliases_.contains(id)) return false;
      continue;
    }
    if (!index_.Contains(b.primary, id)) return false;
    ++keys;
    if (auto it = aliases_.find(id); it != aliases_.end()) {
      for (const PrefixKey& key : it->second) {
        if (!index_.Contains(key, id) || key == b.primary) return false;
        ++keys;
      }
    }
  }
  return keys == index_.NumEntries();
}

}  // namespace hkv::internal
