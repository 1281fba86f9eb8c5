#include "core/block_pool.h"

#include <algorithm>
#include <utility>

#include "check.h"

namespace hkv::internal {

namespace {

// The first id of each pool's range: pool 0's range holds the null block.
std::vector<std::uint32_t> PoolStarts(std::uint32_t num_blocks,
                                      std::span<const std::uint32_t> blocks) {
  HKV_REQUIRE(num_blocks >= 1, "a pool needs at least the null block");
  if (blocks.empty()) return {0};
  std::vector<std::uint32_t> starts = {0};
  std::uint64_t end = 1;
  for (std::uint32_t n : blocks) {
    HKV_REQUIRE(n >= 1, "each pool holds at least one block");
    if (end > 1) starts.push_back(static_cast<std::uint32_t>(end));
    end += n;
    HKV_REQUIRE(end <= num_blocks, "the pools' blocks exceed num_blocks - 1");
  }
  HKV_REQUIRE(end == num_blocks, "the pools' blocks sum to num_blocks - 1");
  return starts;
}

}  // namespace

BlockPool::BlockPool(std::uint32_t num_blocks, Caching caching, Events events,
                     FreeOrder free_order,
                     std::span<const std::uint32_t> pool_blocks)
    : caching_(caching),
      free_order_(free_order),
      blocks_(num_blocks),
      free_queue_(num_blocks, PoolStarts(num_blocks, pool_blocks)),
      index_(num_blocks),
      events_(events),
      evicted_(num_blocks) {
  const BlockId null_block = free_queue_.PopFront(0);
  HKV_DCHECK(null_block == kNullBlock);
}

double BlockPool::usage() const {
  const std::uint32_t usable = num_blocks() - 1;
  if (usable == 0) return 0.0;
  return 1.0 - static_cast<double>(num_free_blocks()) / usable;
}

BlockId BlockPool::AllocateOne(std::uint32_t pool) {
  HKV_DCHECK(free_queue_.size(pool) > 0);
  const BlockId id = free_queue_.PopFront(pool);
  if (HasPrimary(ToIndex(id))) {
    DropKeys(id, [this](const PrefixKey& key) {
      evicted_.Remember(key);
      RecordRemoval(key);
    });
    ++stats_.evicted_blocks;
  }
  HKV_DCHECK(blocks_[ToIndex(id)].ref_count == 0);
  blocks_[ToIndex(id)].ref_count = 1;
  return id;
}

void BlockPool::Allocate(std::uint32_t n, std::vector<BlockId>& out,
                         std::uint32_t pool) {
  HKV_DCHECK(n <= num_free_blocks(pool));
  for (std::uint32_t i = 0; i < n; ++i) out.push_back(AllocateOne(pool));
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
    if (HasPrimary(ToIndex(id)) || free_order_ == FreeOrder::kAppendAll) {
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
  HKV_DCHECK(!index_.HasKeys(id));  // so the primary is the first key
  blocks_[ToIndex(id)].primary_num_tokens = num_tokens;
  index_.Insert(key, id);
  evicted_.Forget(key);
}

void BlockPool::AddAlias(BlockId id, const PrefixKey& key) {
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

void BlockPool::RecordRemoval(const PrefixKey& key) {
  // Checked here: building the event allocates its vector of hashes.
  if (!events_.enabled()) return;
  events_.Record(BlockRemoved{.block_hashes = {key.hash}, .group = key.group});
}

template <typename F>
void BlockPool::DropKeys(BlockId id, F&& on_key) {
  Block& b = blocks_[ToIndex(id)];
  if (b.primary_num_tokens == 0) return;
  ++key_generation_;
  b.primary_num_tokens = 0;
  index_.EraseBlock(id, std::forward<F>(on_key));
}

void BlockPool::EvictKeys(BlockId id) {
  DropKeys(id, [this](const PrefixKey& key) { RecordRemoval(key); });
}

void BlockPool::MoveKeys(BlockId source, BlockId destination) {
  HKV_DCHECK(blocks_[ToIndex(destination)].primary_num_tokens == 0);
  const std::uint32_t num_tokens = blocks_[ToIndex(source)].primary_num_tokens;
  if (num_tokens == 0) return;
  const std::vector<PrefixKey> keys = index_.KeysOf(source);
  DropKeys(source, [](const PrefixKey&) {});
  SetPrimary(destination, keys.front(), num_tokens);
  for (std::size_t i = 1; i < keys.size(); ++i) AddAlias(destination, keys[i]);
}

bool BlockPool::Reset() {
  if (num_blocks() - num_free_blocks() != 1) return false;
  ++key_generation_;
  index_.Clear();
  evicted_.Clear();
  for (Block& b : blocks_) b.primary_num_tokens = 0;
  events_.Record(AllBlocksCleared{});
  return true;
}

std::size_t BlockPool::MemoryBytes() const {
  return blocks_.capacity() * sizeof(Block) + free_queue_.MemoryBytes() +
         index_.MemoryBytes() + evicted_.MemoryBytes() +
         free_scratch_.capacity() * sizeof(BlockId);
}

bool BlockPool::CheckInvariants() const {
  if (!free_queue_.CheckInvariants() || free_queue_.Contains(kNullBlock) ||
      !index_.CheckInvariants()) {
    return false;
  }
  for (std::uint32_t i = 1; i < num_blocks(); ++i) {
    const BlockId id{i};
    if (free_queue_.Contains(id) != (blocks_[i].ref_count == 0)) return false;
    if (HasPrimary(i) != index_.HasKeys(id)) return false;
    // A block holds each of its keys once.
    const std::vector<PrefixKey> keys = index_.KeysOf(id);
    for (std::size_t k = 1; k < keys.size(); ++k) {
      if (std::find(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(k),
                    keys[k]) != keys.begin() + static_cast<std::ptrdiff_t>(k)) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace hkv::internal
