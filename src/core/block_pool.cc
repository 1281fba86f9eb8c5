#include "core/block_pool.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "check.h"
#include "hkv/limits.h"

namespace hkv::internal {

namespace {

// The first id of each pool's range, given each range's usable ids: pool 0's
// range also holds the null block.
std::vector<std::uint32_t> PoolStarts(std::span<const std::uint32_t> ids) {
  std::vector<std::uint32_t> starts = {0};
  std::uint32_t end = 1;
  for (std::size_t p = 0; p + 1 < ids.size(); ++p) {
    end += ids[p];
    starts.push_back(end);
  }
  return starts;
}

// Usable ids per pool's range (one entry, num_blocks - 1, for one pool).
std::vector<std::uint32_t> RangeIds(std::uint32_t num_blocks,
                                    std::span<const std::uint32_t> blocks,
                                    std::span<const std::uint64_t> slot_bytes) {
  HKV_REQUIRE(num_blocks >= 1, "a pool needs at least the null block");
  if (blocks.empty()) {
    HKV_REQUIRE(slot_bytes.empty(), "only per-group pools rebalance");
    return {num_blocks - 1};
  }
  std::uint64_t end = 1;
  for (std::uint32_t n : blocks) {
    HKV_REQUIRE(n >= 1, "each pool holds at least one block");
    end += n;
    HKV_REQUIRE(end <= num_blocks, "the pools' blocks exceed num_blocks - 1");
  }
  HKV_REQUIRE(end == num_blocks, "the pools' blocks sum to num_blocks - 1");
  if (slot_bytes.empty()) return {blocks.begin(), blocks.end()};
  const std::vector<std::uint64_t> ids = RebalancedPoolIds(blocks, slot_bytes);
  std::uint64_t total = 1;
  for (std::uint64_t n : ids) {
    total += n;  // each term < 2^56, checked after each: no wrap
    HKV_REQUIRE(total <= kMaxPoolBlocks,
                "rebalancing pools need more than 2^24 block ids");
  }
  return {ids.begin(), ids.end()};
}

}  // namespace

std::vector<std::uint64_t> RebalancedPoolIds(
    std::span<const std::uint32_t> blocks,
    std::span<const std::uint64_t> slot_bytes) {
  HKV_REQUIRE(blocks.size() == slot_bytes.size(), "one slot size per pool");
  std::uint64_t num_blocks = 0;
  std::uint64_t arena = 0;
  for (std::size_t p = 0; p < blocks.size(); ++p) {
    HKV_REQUIRE(slot_bytes[p] >= 1 && slot_bytes[p] <= kMaxSlotBytes,
                "a slot holds 1 to 2^32 bytes");
    num_blocks += blocks[p];
    arena += blocks[p] * slot_bytes[p];  // < 2^56 under the limits
  }
  HKV_REQUIRE(num_blocks <= kMaxPoolBlocks, "more than 2^24 blocks");
  std::vector<std::uint64_t> ids;
  for (std::uint64_t slot : slot_bytes) ids.push_back(arena / slot);
  return ids;
}

BlockPool::BlockPool(std::uint32_t num_blocks, Caching caching, Events events,
                     FreeOrder free_order,
                     std::span<const std::uint32_t> pool_blocks,
                     std::span<const std::uint64_t> slot_bytes)
    : BlockPool(RangeIds(num_blocks, pool_blocks, slot_bytes), caching, events,
                free_order, pool_blocks, slot_bytes) {}

BlockPool::BlockPool(const std::vector<std::uint32_t>& range_ids,
                     Caching caching, Events events, FreeOrder free_order,
                     std::span<const std::uint32_t> pool_blocks,
                     std::span<const std::uint64_t> slot_bytes)
    : caching_(caching),
      free_order_(free_order),
      blocks_(1 + std::accumulate(range_ids.begin(), range_ids.end(),
                                  std::uint64_t{0})),
      free_queue_(num_blocks(), PoolStarts(range_ids)),
      index_(num_blocks()),
      runs_(num_blocks()),
      events_(events),
      evicted_(num_blocks()),
      slot_bytes_(slot_bytes.begin(), slot_bytes.end()),
      parked_(slot_bytes.size()),
      parked_bits_(slot_bytes.empty() ? 0 : num_blocks(), false),
      freed_at_(slot_bytes.empty() ? 0 : num_blocks(), 0) {
  const BlockId null_block = free_queue_.PopFront(0);
  HKV_DCHECK(null_block == kNullBlock);
  if (!rebalances()) return;
  // Park each range's ids past its pool's blocks, the highest unparked last.
  const std::vector<std::uint32_t> starts = PoolStarts(range_ids);
  for (std::uint32_t p = 0; p < num_pools(); ++p) {
    arena_bytes_ += std::uint64_t{pool_blocks[p]} * slot_bytes_[p];
    const std::uint32_t first = std::max<std::uint32_t>(starts[p], 1);
    for (std::uint32_t i = first + range_ids[p];
         i-- > first + pool_blocks[p];) {
      free_queue_.Remove(BlockId{i});
      parked_[p].push_back(BlockId{i});
      parked_bits_[i] = true;
      ++num_parked_;
    }
  }
}

double BlockPool::usage() const {
  const std::uint32_t usable = num_usable_blocks();
  if (usable == 0) return 0.0;
  return 1.0 - static_cast<double>(num_free_blocks()) / usable;
}

void BlockPool::TakeFree(BlockId id) {
  free_queue_.Remove(id);
  if (HasPrimary(ToIndex(id))) {
    DropKeys(id, [this](const PrefixKey& key) {
      if (record_evictions_) evicted_.Remember(key);
      RecordRemoval(key);
    });
    ++stats_.evicted_blocks;
  }
  HKV_DCHECK(blocks_[ToIndex(id)].ref_count == 0);
}

BlockId BlockPool::AllocateOne(std::uint32_t pool) {
  HKV_DCHECK(free_queue_.size(pool) > 0);
  const BlockId id = free_queue_.front(pool);
  TakeFree(id);
  blocks_[ToIndex(id)].ref_count = 1;
  return id;
}

void BlockPool::Park(std::uint32_t pool, std::uint32_t n,
                     std::vector<BlockId>& out) {
  HKV_DCHECK(rebalances() && n <= num_free_blocks(pool));
  for (std::uint32_t i = 0; i < n; ++i) {
    out.push_back(free_queue_.front(pool));
    ParkBlock(out.back());
  }
}

void BlockPool::ParkBlock(BlockId id) {
  HKV_DCHECK(rebalances() && free_queue_.Contains(id));
  TakeFree(id);
  const std::uint32_t pool = PoolOf(id);
  parked_[pool].push_back(id);
  parked_bits_[ToIndex(id)] = true;
  ++num_parked_;
  ++stats_.parked_blocks;
  spare_bytes_ += slot_bytes_[pool];
}

void BlockPool::Unpark(std::uint32_t pool, std::uint32_t n,
                       std::vector<BlockId>& out) {
  HKV_DCHECK(rebalances() && n <= num_parked_blocks(pool) &&
             n * slot_bytes_[pool] <= spare_bytes_);
  std::vector<BlockId>& parked = parked_[pool];
  const std::size_t start = out.size();
  out.insert(out.end(), parked.rbegin(),
             parked.rbegin() + static_cast<std::ptrdiff_t>(n));
  parked.resize(parked.size() - n);
  for (std::size_t i = out.size(); i-- > start;) {
    parked_bits_[ToIndex(out[i])] = false;
    free_queue_.PushFront(out[i]);
  }
  num_parked_ -= n;
  spare_bytes_ -= n * slot_bytes_[pool];
}

std::uint32_t BlockPool::NumLeadingHeldBy(std::span<const BlockId> ids,
                                          std::uint32_t holders) const {
  std::size_t n = 0;
  while (n < ids.size()) {
    if (ids.size() - n >= kRunWidth && holders != kAnyRefCount &&
        FindRun(ids.data() + n, blocks_.data(), holders, false) !=
            RunStep::kNone) {
      n += kRunWidth;
      continue;
    }
    for (const std::size_t end = std::min(ids.size(), n + kRunWidth); n < end;
         ++n) {
      if (ids[n] == kNullBlock || ref_count(ids[n]) != holders) {
        return static_cast<std::uint32_t>(n);
      }
    }
  }
  return static_cast<std::uint32_t>(n);
}

void BlockPool::Allocate(std::uint32_t n, std::vector<BlockId>& out,
                         std::uint32_t pool) {
  HKV_DCHECK(n <= num_free_blocks(pool));
  if (n == 0 || index_.size() == 0) {  // nothing cached: nothing to evict
    for (std::uint32_t i = 0; i < n; ++i) out.push_back(AllocateOne(pool));
    return;
  }
  // Evicting a block reads records at random places: its pool entry, run
  // membership and index record, then its key's slot and evicted-key set.
  // Two cursors down the free queue load them ahead (the records kFar blocks
  // ahead, the places of the key read from a record loaded by then kNear
  // ahead), so that the misses overlap instead of following each other. The
  // prefetches are written here, not in a helper: GCC 12 may drop a call to
  // a function that only prefetches as free of effects.
  constexpr std::uint32_t kFar = 16;
  constexpr std::uint32_t kNear = 8;
  // The cursors start at positions kNear - 1 and kFar - 1 (or the last).
  BlockId near = free_queue_.front(pool);
  for (std::uint32_t k = 1; k < std::min(n, kNear); ++k) {
    near = BlockId{free_queue_.RawNext(near)};
  }
  BlockId far = near;
  for (std::uint32_t k = std::min(n, kNear); k < std::min(n, kFar); ++k) {
    far = BlockId{free_queue_.RawNext(far)};
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    if (i + kFar < n) {
      far = BlockId{free_queue_.RawNext(far)};
      __builtin_prefetch(&blocks_[ToIndex(far)]);
      __builtin_prefetch(index_.RecordOf(far));
      __builtin_prefetch(runs_.MemberOf(far));
    }
    if (i + kNear < n) {
      near = BlockId{free_queue_.RawNext(near)};
      const PrefixKey& key = index_.FirstKey(near);
      __builtin_prefetch(index_.HomeSlot(key));
      if (record_evictions_) __builtin_prefetch(evicted_.SetOf(key));
    }
    out.push_back(AllocateOne(pool));
  }
}

namespace {

// Calls f(id) for each of `blocks` in `walk`'s order.
template <typename F>
void ForEach(std::span<const BlockId> blocks, BlockPool::Walk walk, F&& f) {
  if (walk == BlockPool::Walk::kFirstToLast) {
    for (BlockId id : blocks) f(id);
  } else {
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) f(*it);
  }
}

// Takes `ids` kRunWidth at a time in `walk`'s order (the last chunk may be
// shorter) and calls run(chunk, step) for each chunk FindRun finds a run in
// (with `ref_count`, `need_key`); for a chunk with none, or whose run
// returns false, one(id) for each of its ids in `walk`'s order.
template <typename Run, typename One>
void ForEachRun(std::span<const BlockId> ids, BlockPool::Walk walk,
                const BlockWords* blocks, std::uint32_t ref_count,
                bool need_key, Run&& run, One&& one) {
  const bool forward = walk == BlockPool::Walk::kFirstToLast;
  for (std::size_t done = 0; done < ids.size();) {
    const std::size_t count = std::min(kRunWidth, ids.size() - done);
    const std::span<const BlockId> chunk =
        forward ? ids.subspan(done, count)
                : ids.subspan(ids.size() - done - count, count);
    done += count;
    const RunStep step =
        count == kRunWidth ? FindRun(chunk.data(), blocks, ref_count, need_key)
                           : RunStep::kNone;
    if (step == RunStep::kNone || !run(chunk, step)) ForEach(chunk, walk, one);
  }
}

// The lowest id of a chunk FindRun found to run by `step`.
std::uint32_t LowestOf(std::span<const BlockId> chunk, RunStep step) {
  return RunLowest(static_cast<std::uint32_t>(chunk[0]), step);
}

}  // namespace

void BlockPool::Free(std::span<const BlockId> blocks, Walk walk) {
  // Callers free blocks they hold: a violation is the cache's own bug.
  HKV_DCHECK(std::all_of(blocks.begin(), blocks.end(), [&](BlockId id) {
    return id == kNullBlock || blocks_[ToIndex(id)].ref_count > 0;
  }));
  free_scratch_.clear();
  if (free_queue_.num_lists() == 1 && !rebalances()) {
    FreeToOneList(blocks, walk);
  } else {
    FreeEach(blocks, walk);
  }
  // Uncached blocks go to the front in list order; cached ones age at the
  // back.
  for (auto it = free_scratch_.rbegin(); it != free_scratch_.rend(); ++it) {
    free_queue_.PushFront(*it);
  }
}

void BlockPool::FreeEach(std::span<const BlockId> blocks, Walk walk) {
  ForEach(blocks, walk, [&](BlockId id) {
    if (id == kNullBlock) return;
    Block& b = blocks_[ToIndex(id)];
    if (--b.ref_count > 0) return;
    if (rebalances()) freed_at_[ToIndex(id)] = ++num_freed_;
    if (HasPrimary(ToIndex(id)) || free_order_ == FreeOrder::kAppendAll) {
      free_queue_.PushBack(id);
    } else {
      free_scratch_.push_back(id);
    }
  });
}

void BlockPool::FreeToOneList(std::span<const BlockId> blocks, Walk walk) {
  const bool append_all = free_order_ == FreeOrder::kAppendAll;
  FreeBlockQueue::Appender back = free_queue_.StartAppend();
  const auto release = [&](BlockId id) {
    if (id == kNullBlock) return;
    Block& b = blocks_[ToIndex(id)];
    if (--b.ref_count > 0) return;
    if (append_all || b.primary_num_tokens > 0) {
      free_queue_.Append(back, id);
    } else {
      free_scratch_.push_back(id);
    }
  };
  // Sixteen at a time where they run: consecutive ids, each block's last
  // reference, each appended (in the queue's order, so the same queue). A
  // chunk's ids, read in the walk's order, start at its first or its last.
  const bool forward = walk == Walk::kFirstToLast;
  ForEachRun(
      blocks, walk, blocks_.data(), 1, !append_all,
      [&](std::span<const BlockId> chunk, RunStep step) {
        SetReferences(&blocks_[LowestOf(chunk, step)], 0);
        free_queue_.AppendRun<kRunWidth>(
            back,
            static_cast<std::uint32_t>(forward ? chunk.front() : chunk.back()),
            (step == RunStep::kDescending) == forward);
        return true;
      },
      release);
  free_queue_.FinishAppend(back);
}

bool BlockPool::AllKeyedIn(std::span<const BlockId> ids,
                           std::uint32_t pool) const {
  bool keyed = true;
  ForEachRun(
      ids, Walk::kFirstToLast, blocks_.data(), kAnyRefCount, true,
      [&](std::span<const BlockId> chunk, RunStep step) {
        // Pools are ranges of ids: a run's ends in one are all in it.
        const std::uint32_t lowest = LowestOf(chunk, step);
        keyed &= PoolOf(BlockId{lowest}) == pool &&
                 PoolOf(BlockId{lowest + static_cast<std::uint32_t>(
                                             kRunWidth - 1)}) == pool;
        return true;
      },
      [&](BlockId id) {
        keyed &=
            id == kNullBlock || (HasPrimary(ToIndex(id)) && PoolOf(id) == pool);
      });
  return keyed;
}

std::uint32_t BlockPool::NumUnreferenced(std::span<const BlockId> ids) const {
  std::uint32_t count = 0;
  ForEachRun(
      ids, Walk::kFirstToLast, blocks_.data(), kAnyRefCount, false,
      [&](std::span<const BlockId> chunk, RunStep step) {
        count += CountUnreferenced(&blocks_[LowestOf(chunk, step)]);
        return true;
      },
      [&](BlockId id) {
        count += id != kNullBlock && blocks_[ToIndex(id)].ref_count == 0;
      });
  return count;
}

void BlockPool::TouchAll(std::span<const BlockId> blocks) {
  // Runs of free blocks next to each other on their free list: one splice
  // takes sixteen off.
  ForEachRun(
      blocks, Walk::kFirstToLast, blocks_.data(), 0, false,
      [&](std::span<const BlockId> chunk, RunStep step) {
        const std::uint32_t lowest = LowestOf(chunk, step);
        if (!free_queue_.RemoveRun<kRunWidth>(lowest)) return false;
        SetReferences(&blocks_[lowest], 1);
        return true;
      },
      [&](BlockId id) { Touch(id); });
}

BlockId BlockPool::SetPrimary(BlockId id, const PrefixKey& key,
                              std::uint32_t num_tokens) {
  HKV_DCHECK(!index_.HasKeys(id));  // so the primary is the first key
  blocks_[ToIndex(id)].primary_num_tokens = num_tokens;
  const BlockId first = index_.Insert(key, id);
  evicted_.Forget(key);
  return first;
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

BlockId BlockPool::CacheChained(BlockId id, const PrefixKey& key,
                                std::uint32_t num_tokens, std::uint32_t depth,
                                BlockId previous) {
  HKV_DCHECK(id != kNullBlock && num_tokens > 0);
  if (!caching_enabled()) return kNullBlock;
  if (HasPrimary(ToIndex(id))) {
    HKV_DCHECK(blocks_[ToIndex(id)].primary_num_tokens < num_tokens);
    EvictKeys(id);  // a partial entry is promoted to the full block
  }
  const BlockId first = SetPrimary(id, key, num_tokens);
  if (first == id) runs_.Append(id, depth, previous);
  return first;
}

void BlockPool::FindCachedRun(KeyView keys, std::size_t stride,
                              std::size_t count, GroupId group,
                              std::vector<BlockId>& out) const {
  const auto key = [&](std::size_t j) -> const BlockHash& {
    return keys[(j + 1) * stride - 1];
  };
  // The answer is in [known, missing]: depths below `known` are certified
  // through `tip`, and the key at `missing` is not cached (or missing ==
  // count). The first key first (a cold prompt misses there), then the
  // deepest (a whole hit is two probes and a copy), then bisection.
  std::size_t known = 0;
  std::size_t missing = count;
  BlockId tip = kNullBlock;
  std::size_t next = 0;
  bool deepest_tried = false;
  while (!runs_.empty() && known < missing) {
    const std::optional<BlockId> found = index_.Find(key(next), group);
    if (!found) {
      missing = next;
    } else if (runs_.Certified(*found, static_cast<std::uint32_t>(next))) {
      known = next + 1;
      tip = *found;
    } else {
      break;  // not provable from the runs: walk on from `known`
    }
    if (!deepest_tried) {
      deepest_tried = true;
      next = missing - 1;  // unless resolved, missing == count here
    } else {
      next = known + (missing - known) / 2;
    }
  }
  if (known > 0) {
    runs_.AppendChain(tip, static_cast<std::uint32_t>(known - 1), out);
  }
  // In chunks, so that a short walk does not zero-fill a long output; grown
  // by inserting nulls, not resize(), which value-initializes an enum one
  // element at a time, reading its value back each time.
  constexpr std::size_t kChunk = 64;
  for (std::size_t done = known; done < missing;) {
    const std::size_t n = std::min(kChunk, missing - done);
    const std::size_t at = out.size();
    out.insert(out.end(), n, kNullBlock);
    const std::size_t walked =
        index_.FindRun(keys.Range(done * stride, n * stride), stride, n, group,
                       out.data() + at);
    out.resize(at + walked);
    if (walked < n) return;
    done += n;
  }
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
  runs_.Forget(id);
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
  if (num_usable_blocks() != num_free_blocks()) return false;
  ++key_generation_;
  index_.Clear();
  runs_.Clear();
  evicted_.Clear();
  for (Block& b : blocks_) b.primary_num_tokens = 0;
  events_.Record(AllBlocksCleared{});
  return true;
}

std::size_t BlockPool::MemoryBytes() const {
  std::size_t parked = 0;
  for (const std::vector<BlockId>& ids : parked_) parked += ids.capacity();
  return blocks_.capacity() * sizeof(Block) + free_queue_.MemoryBytes() +
         index_.MemoryBytes() + runs_.MemoryBytes() + evicted_.MemoryBytes() +
         (free_scratch_.capacity() + parked) * sizeof(BlockId);
}

bool BlockPool::ParkingConsistent() const {
  std::vector<bool> listed(num_blocks(), false);
  std::uint64_t usable_bytes = 0;
  std::uint32_t count = 0;
  for (std::uint32_t p = 0; p < parked_.size(); ++p) {
    for (BlockId id : parked_[p]) {
      const std::uint32_t i = ToIndex(id);
      if (id == kNullBlock || i >= num_blocks() || listed[i] ||
          PoolOf(id) != p || blocks_[i].ref_count != 0 || HasPrimary(i) ||
          free_queue_.Contains(id)) {
        return false;
      }
      listed[i] = true;
    }
    count += num_parked_blocks(p);
  }
  for (std::uint32_t i = 1; i < num_blocks(); ++i) {
    const BlockId id{i};
    if (listed[i] != parked(id)) return false;
    if (!listed[i] && free_queue_.Contains(id) != (blocks_[i].ref_count == 0)) {
      return false;
    }
    if (!listed[i] && rebalances()) usable_bytes += slot_bytes_[PoolOf(id)];
  }
  return count == num_parked_ && usable_bytes + spare_bytes_ == arena_bytes_;
}

bool BlockPool::CheckInvariants() const {
  if (!free_queue_.CheckInvariants() || free_queue_.Contains(kNullBlock) ||
      !index_.CheckInvariants() || !runs_.CheckInvariants()) {
    return false;
  }
  if (!ParkingConsistent()) return false;
  for (std::uint32_t i = 1; i < num_blocks(); ++i) {
    const BlockId id{i};
    if (HasPrimary(i) != index_.HasKeys(id)) return false;
    // A run's member is registered first under its primary key.
    if (runs_.IsMember(id) &&
        (!HasPrimary(i) || index_.Find(index_.FirstKey(id)) != id)) {
      return false;
    }
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
