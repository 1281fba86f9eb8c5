// The block pool: metadata of every KV-cache block (reference counts, prefix
// keys), the free queues and the prefix index, shared by all cache groups.
//
// Its blocks form one pool (the reference's layout) or several: pool p owns
// a range of ids with a free queue of its own, and allocations name the pool
// they draw from (per-group pools: each group's blocks stay in its pool).
// The null block (id 0) belongs to pool 0's range but is never free.
//
// Pools may rebalance (slot bytes given): they share one byte arena, the sum
// of each pool's starting blocks times its slot bytes, and pool p's range
// holds as many ids as the whole arena would at its slot size. Ids past a
// pool's share are parked: not free, not held, never handed out. Park turns a
// pool's oldest free blocks into spare bytes; Unpark turns spare bytes into
// free blocks of another pool. A block id never changes pools, and the
// arena's bytes are always the usable blocks' slots plus the spare bytes.
//
// Freed blocks that carry a key stay findable until the allocator reuses
// them; eviction order is the free queue's order (spec §1.3): a Free call
// puts the blocks without a key at the front, keeping their order (they are
// reused first), and appends the keyed ones, in order, at the back
// (FreeOrder::kAppendAll appends them all).
//
// A block has at most one primary key, the longest prefix it proves, with its
// token count; partial entries at shorter boundaries hang off it as aliases.
// The index holds the keys (the primary is a block's first registered key);
// the pool holds reference counts and token counts.
//
// Every table is sized from num_blocks at construction: 8 bytes of block
// metadata, 8 of free-queue links, the index's slots and per-block records
// (prefix_index.h), 8 bytes of chain-run membership (chain_runs.h) and the
// record of evicted keys (evicted_keys.h), about 110 bytes per block in all
// (docs/perf.md). Nothing rehashes or grows while blocks hold one key each;
// the chain runs' ids (at most one per block) grow as chains are committed.
//
// Thread-compatible: callers serialize all calls. Never allocates on the
// allocate/touch/free paths once the scratch buffers have grown.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/block_runs.h"
#include "core/chain_runs.h"
#include "core/event_log.h"
#include "core/evicted_keys.h"
#include "core/free_block_queue.h"
#include "core/key_view.h"
#include "core/prefix_index.h"

namespace hkv::internal {

enum class Caching { kEnabled, kDisabled };

struct PoolStats {
  // Keyed blocks reused by the allocator or parked.
  std::uint64_t evicted_blocks = 0;
  std::uint64_t parked_blocks = 0;  // by Park
};

// The ids each pool's range holds when pools rebalance: the most slots of
// slot_bytes[p] the arena, sum(blocks[q] * slot_bytes[q]), holds. REQUIRES
// (else the sums may wrap; UsageError): equal sizes, every slot in
// [1, kMaxSlotBytes], the blocks' sum at most kMaxPoolBlocks.
std::vector<std::uint64_t> RebalancedPoolIds(
    std::span<const std::uint32_t> blocks,
    std::span<const std::uint64_t> slot_bytes);

class BlockPool {
 public:
  // `pool_blocks`: empty, one pool of every block; else the usable blocks
  // of each pool, whose ids follow each other from 1. `slot_bytes`: empty,
  // fixed pools; else one per pool, and the pools rebalance: each range
  // holds RebalancedPoolIds ids, the ones past pool_blocks[p] parked.
  // REQUIRES (else UsageError): num_blocks >= 1 (block 0 becomes the null
  // block); each pool at least one block, num_blocks 1 + their sum; slot
  // bytes as RebalancedPoolIds requires, the ids at most kMaxPoolBlocks.
  BlockPool(std::uint32_t num_blocks, Caching caching,
            Events events = Events::kDisabled,
            FreeOrder free_order = FreeOrder::kPrependUncached,
            std::span<const std::uint32_t> pool_blocks = {},
            std::span<const std::uint64_t> slot_bytes = {});
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // Block ids, 0 to num_blocks() - 1, parked ones included.
  std::uint32_t num_blocks() const {
    return static_cast<std::uint32_t>(blocks_.size());
  }
  // Blocks held or free (not parked), the null block excluded.
  std::uint32_t num_usable_blocks() const {
    return num_blocks() - 1 - num_parked_;
  }
  std::uint32_t num_pools() const { return free_queue_.num_lists(); }
  // The pool whose range holds `id`.
  std::uint32_t PoolOf(BlockId id) const { return free_queue_.ListOf(id); }
  std::uint32_t num_free_blocks() const { return free_queue_.size(); }
  std::uint32_t num_free_blocks(std::uint32_t pool) const {
    return free_queue_.size(pool);
  }
  bool caching_enabled() const { return caching_ == Caching::kEnabled; }
  // Fraction of usable blocks in use: 1 - free / usable; 0 when none is.
  double usage() const;

  // Rebalancing (all 0 or empty unless the pools rebalance).
  bool rebalances() const { return !slot_bytes_.empty(); }
  std::uint64_t slot_bytes(std::uint32_t pool) const {
    return slot_bytes_[pool];
  }
  std::uint32_t num_parked_blocks(std::uint32_t pool) const {
    return static_cast<std::uint32_t>(parked_[pool].size());
  }
  // `pool`'s parked ids, the next to come back last.
  std::span<const BlockId> parked_ids(std::uint32_t pool) const {
    return parked_[pool];
  }
  bool parked(BlockId id) const {
    return !parked_bits_.empty() && parked_bits_[ToIndex(id)];
  }
  // Arena bytes in no pool's usable blocks.
  std::uint64_t spare_bytes() const { return spare_bytes_; }
  // The free block `n` places behind the front of `pool`'s queue: the
  // allocator takes it (n + 1)th. REQUIRES: n < num_free_blocks(pool). O(n).
  BlockId NthFree(std::uint32_t pool, std::uint32_t n) const {
    return free_queue_.Nth(pool, n);
  }
  // The free blocks taken right after and before `id`; none past the ends
  // of its queue. REQUIRES: the block is free.
  std::optional<BlockId> NextFree(BlockId id) const {
    return free_queue_.Next(id);
  }
  std::optional<BlockId> PrevFree(BlockId id) const {
    return free_queue_.Prev(id);
  }
  // Where a free block stands in the pools' common eviction order (smaller
  // goes first): 0 without a key (nothing is lost taking it), else the
  // order in which it was freed. REQUIRES: rebalances().
  std::uint64_t EvictionAge(BlockId id) const {
    return HasPrimary(ToIndex(id)) ? freed_at_[ToIndex(id)] : 0;
  }
  // Parks the first `n` free blocks of `pool` (their keys evicted as the
  // allocator evicts them), appending their ids to `out`; their slots
  // become spare bytes. REQUIRES: rebalances(), n <= num_free_blocks(pool).
  void Park(std::uint32_t pool, std::uint32_t n, std::vector<BlockId>& out);
  // Parks one free block, wherever it stands in its queue. REQUIRES:
  // rebalances(), the block is free.
  void ParkBlock(BlockId id);
  // Unparks `n` ids of `pool` onto the front of its free queue (used
  // first), appending them to `out`, paid from the spare bytes. REQUIRES:
  // rebalances(), n <= num_parked_blocks(pool), n slots <= spare_bytes().
  void Unpark(std::uint32_t pool, std::uint32_t n, std::vector<BlockId>& out);
  const PoolStats& stats() const { return stats_; }
  // Removals and clears are recorded here; group managers add what they store.
  EventLog& events() { return events_; }
  const EventLog& events() const { return events_; }

  // The first-inserted block registered under `key`. Never touches refs.
  // Where registering `key` reads at random, to prefetch: the index's home
  // slot, and the evicted-key record's set (null while it holds none).
  const void* IndexHome(const PrefixKey& key) const {
    return index_.HomeSlot(key);
  }
  const void* EvictedSet(const PrefixKey& key) const {
    return evicted_.empty() ? nullptr : evicted_.SetOf(key);
  }
  std::optional<BlockId> FindCached(const PrefixKey& key) const {
    return index_.Find(key);
  }
  // Blocks cached under keys[stride - 1], keys[2 * stride - 1], ... until
  // one misses (at most `count`), appended to `out`: each the block a key's
  // lookup returns (FindCached). When the keys are a chain committed through
  // CacheChained, the cached prefix is found by bisection over the keys
  // (the first and the deepest first) and copied from the chain runs; where
  // the runs cannot prove a depth, the rest is walked key by key. Never
  // touches refs.
  // REQUIRES: keys.size() >= count * stride; the keys are chained (each
  // determines the ones before it, as chained digests do): a cached key
  // stands for its whole prefix.
  void FindCachedRun(KeyView keys, std::size_t stride, std::size_t count,
                     GroupId group, std::vector<BlockId>& out) const;

  // Pops `n` blocks from the front of `pool`'s free queue into `out`,
  // evicting their keys; each gets ref count 1. REQUIRES: n <=
  // num_free_blocks(pool).
  void Allocate(std::uint32_t n, std::vector<BlockId>& out,
                std::uint32_t pool = 0);
  BlockId AllocateOne(std::uint32_t pool = 0);

  // Takes one reference; a block at ref 0 leaves its free queue. Touching
  // the null block does nothing. Inline: adopting a hit touches each of its
  // blocks.
  void Touch(BlockId id) {
    if (id == kNullBlock) return;
    Block& b = blocks_[ToIndex(id)];
    if (b.ref_count == 0) free_queue_.Remove(id);
    ++b.ref_count;
  }

  // Whether every id is the null block or holds a key in `pool`'s range.
  // REQUIRES: every id < num_blocks().
  bool AllKeyedIn(std::span<const BlockId> ids, std::uint32_t pool) const;
  // The ids, the null block aside, that hold no reference.
  // REQUIRES: every id < num_blocks().
  std::uint32_t NumUnreferenced(std::span<const BlockId> ids) const;

  // Touch for each block, in order; runs of consecutive free ids that
  // follow each other on their free list are taken off sixteen at a time.
  void TouchAll(std::span<const BlockId> blocks);

  // Drops one reference from each block, in order (`blocks` first to last,
  // or last to first), onto its pool's free queue (spec §1.3; the FreeOrder
  // says where blocks without a key go). Runs of consecutive ids are freed
  // sixteen at a time. REQUIRES: every non-null block has ref count > 0.
  enum class Walk { kFirstToLast, kLastToFirst };
  void Free(std::span<const BlockId> blocks, Walk walk = Walk::kFirstToLast);

  // Registers `id` as the full block proving `num_tokens` tokens under `key`,
  // first dropping a shorter (partial) primary and its aliases.
  // REQUIRES: id is not null; no primary key proving >= num_tokens.
  void CacheFull(BlockId id, const PrefixKey& key, std::uint32_t num_tokens);

  // CacheFull for the full block at `depth` (its index among the full blocks
  // of its request, 0 first) of a chain of keys (chain_runs.h), which makes
  // it findable by FindCachedRun's bisection. `previous`: what this call
  // returned for depth - 1 (or the block FindCached returns for that key);
  // ignored at depth 0. Returns the block registered first under `key` (`id`
  // unless it was cached already); the null block when caching is off.
  BlockId CacheChained(BlockId id, const PrefixKey& key,
                       std::uint32_t num_tokens, std::uint32_t depth,
                       BlockId previous);

  // Registers a partial entry (spec §2.6): a boundary inside the block. A
  // longer entry supersedes shorter ones; a shorter one becomes an alias of
  // the block's longer primary. A no-op for the null block. Returns whether
  // the key is new for this block.
  bool CachePartial(BlockId id, const PrefixKey& key, std::uint32_t num_tokens);

  // Drops every key of `id` (primary and aliases), one BlockRemoved event per
  // key. The block stays where it is.
  void EvictKeys(BlockId id);

  // Hands every key of `source` to `destination` (the primary keeps its
  // token count), without events: the owner of a recurrent state keeps
  // writing `source` while `destination` receives a copy of it.
  // REQUIRES: destination has no key.
  void MoveKeys(BlockId source, BlockId destination);

  // Clears every key when no block other than the null block is in use;
  // returns false and changes nothing otherwise.
  bool Reset();

  // How many of `ids`, from the first, are real blocks each referenced
  // exactly `holders` times (stops at a null block). Sixteen at a time where
  // they are consecutive ids (FindRun), else one at a time. O(ids).
  std::uint32_t NumLeadingHeldBy(std::span<const BlockId> ids,
                                 std::uint32_t holders) const;
  std::uint32_t ref_count(BlockId id) const {
    return blocks_[ToIndex(id)].ref_count;
  }
  // Tokens the block's primary key proves; 0 when it has none.
  std::uint32_t primary_num_tokens(BlockId id) const {
    return blocks_[ToIndex(id)].primary_num_tokens;
  }
  // The block's primary key; a zero key when it has none.
  const PrefixKey& primary_key(BlockId id) const { return index_.FirstKey(id); }
  bool HasKey(BlockId id, const PrefixKey& key) const {
    return index_.Contains(key, id);
  }
  // Every key of `id`, primary first. For tests and diagnostics.
  std::vector<PrefixKey> KeysOf(BlockId id) const { return index_.KeysOf(id); }
  std::size_t num_keys() const { return index_.size(); }
  // Runs of chained blocks (chain_runs.h).
  std::size_t num_chain_runs() const { return runs_.num_runs(); }
  // Whether `key` was evicted by reuse recently (and not registered since).
  // Approximate: see evicted_keys.h for how recently and how accurately.
  bool WasEvicted(const PrefixKey& key) const { return evicted_.Contains(key); }
  // Keeps no record of evicted keys from now on (WasEvicted then false):
  // evictions and registrations skip it (EvictionRecord::kOff).
  void StopRecordingEvictions() {
    record_evictions_ = false;
    evicted_.Clear();
  }
  // Bytes of the pool's tables (capacities times element sizes): block
  // metadata, free queue, index, evicted keys, scratch.
  std::size_t MemoryBytes() const;
  // The index's slot count: constant unless keys outgrow it (prefix_index.h).
  std::size_t num_index_slots() const { return index_.num_slots(); }

  // Advances whenever a key leaves the index: a lookup made at an equal
  // generation is still valid.
  std::uint64_t key_generation() const { return key_generation_; }
  std::vector<BlockId> FreeQueueSnapshot() const {
    return free_queue_.Snapshot();
  }

  // Returns false on any broken invariant: free queue membership <=> ref 0,
  // not null and not parked; a parked id keyless and in its own pool's
  // range; the arena's bytes all accounted; every key registered for
  // exactly the blocks that own it. O(num_blocks + keys).
  bool CheckInvariants() const;

 private:
  // primary_num_tokens: 0 <=> no key; else the tokens the primary key (the
  // block's first key in the index) proves.
  using Block = BlockWords;

  BlockPool(const std::vector<std::uint32_t>& range_ids, Caching caching,
            Events events, FreeOrder free_order,
            std::span<const std::uint32_t> pool_blocks,
            std::span<const std::uint64_t> slot_bytes);

  bool HasPrimary(std::uint32_t i) const {
    return blocks_[i].primary_num_tokens > 0;
  }
  // Returns the block registered first under `key`.
  BlockId SetPrimary(BlockId id, const PrefixKey& key,
                     std::uint32_t num_tokens);
  void AddAlias(BlockId id, const PrefixKey& key);
  void RecordRemoval(const PrefixKey& key);
  // Takes a free block off its queue, evicting its keys.
  void TakeFree(BlockId id);
  // Free's common case: one pool that does not rebalance.
  void FreeToOneList(std::span<const BlockId> blocks, Walk walk);
  // Free's other cases, one block at a time.
  void FreeEach(std::span<const BlockId> blocks, Walk walk);
  bool ParkingConsistent() const;
  // Drops every key of `id`, calling on_key(key) for each, primary first.
  template <typename F>
  void DropKeys(BlockId id, F&& on_key);

  Caching caching_;
  FreeOrder free_order_;
  std::vector<Block> blocks_;
  FreeBlockQueue free_queue_;
  PrefixIndex index_;
  ChainRuns runs_;
  std::vector<BlockId> free_scratch_;
  PoolStats stats_;
  EventLog events_;
  std::uint64_t key_generation_ = 0;
  // Keys evicted by reuse (approximate, bounded).
  EvictedKeys evicted_;
  bool record_evictions_ = true;
  // Rebalancing: slot bytes and parked ids (unparked from the back) per
  // pool, the arena's bytes and those in no usable block.
  std::vector<std::uint64_t> slot_bytes_;
  std::vector<std::vector<BlockId>> parked_;
  std::vector<bool> parked_bits_;  // by id; empty unless rebalancing
  // When each block was last freed (a count of blocks freed), by id; empty
  // unless rebalancing.
  std::vector<std::uint64_t> freed_at_;
  std::uint64_t num_freed_ = 0;
  std::uint64_t arena_bytes_ = 0;
  std::uint64_t spare_bytes_ = 0;
  std::uint32_t num_parked_ = 0;
};

}  // namespace hkv::internal
