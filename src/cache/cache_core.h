// The cache core behind hkv::CacheManager: the block pool, one manager per
// group and every request's block tables. Tests use it directly to reach the
// pool's internals.
//
// Thread-compatible.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "cache/cache_geometry.h"
#include "cache/coordinator.h"
#include "cache/prefill_split.h"
#include "core/block_pool.h"
#include "groups/group_manager.h"
#include "hkv/cache_manager.h"

namespace hkv::internal {

class CacheCore {
 public:
  // REQUIRES: config.Validate() succeeds (else UsageError).
  explicit CacheCore(const CacheConfig& config);
  CacheCore(const CacheCore&) = delete;
  CacheCore& operator=(const CacheCore&) = delete;

  const KeyScheme& key_scheme() const { return scheme_; }
  std::uint32_t num_groups() const {
    return static_cast<std::uint32_t>(groups_.size());
  }
  const GroupGeometry& geometry(GroupId group) const {
    return groups_[ToIndex(group)]->geometry();
  }
  const CacheFacts& facts() const { return geometry_.facts; }

  CacheHit Lookup(const Request& request) const;
  CacheHit LookupKeys(RequestId id, std::uint32_t num_tokens,
                      const KeySource& keys, CacheRead cache_read) const;
  std::optional<NewBlocks> Allocate(const Request& request,
                                    const AllocationRequest& args);
  CacheHit TruncateHit(const CacheHit& hit, std::uint32_t num_tokens) const;
  void Commit(const Request& request, std::uint32_t num_computed_tokens);
  std::uint32_t SplitPrefill(const Request& request,
                             const PrefillChunk& chunk) const;
  void Free(RequestId id);
  std::vector<BlockCopy> TakeCopies();
  PoolMoves TakePoolMoves();
  void FinishStep();
  bool ResetPrefixCache();
  PrefixCacheStats TakeStats();
  std::vector<KvEvent> TakeEvents();

  // Blocks holding a key, per group. O(num_blocks).
  std::vector<std::uint64_t> CachedBlocksPerGroup() const;
  std::vector<std::pair<GroupId, BlockHash>> CachedKeys() const;

  // The connector's queries (cache/cache_entries.cc).
  bool HoldsEntry(GroupId group, const BlockHash& key) const;
  std::vector<CachedEntry> CachedEntries(const Request& request) const;

  // An engine's views of its blocks (cache/cache_entries.cc).
  std::optional<std::pair<GroupId, BlockHash>> BlockKey(BlockId id) const;
  std::optional<BlockId> FindCached(GroupId group, const BlockHash& key) const;
  void EvictBlocks(std::span<const BlockId> ids);
  std::uint32_t NumCommonPrefixBlocks(RequestId id, GroupId group) const;
  void RemoveSkippedBlocks(RequestId id, std::uint32_t num_computed_tokens);

  bool HoldsBlocks(RequestId id) const { return requests_.contains(id); }
  std::span<const BlockId> block_table(RequestId id, GroupId group) const;
  BlockPool& pool() { return pool_; }
  const BlockPool& pool() const { return pool_; }

  // The pool's invariants, every block's reference count equal to the
  // references held by block tables and copy pins, and every block a group
  // holds or keyed in its group's pool. O(num_blocks + keys + tables).
  bool CheckInvariants() const;

 private:
  // Reads every member (cache/state_snapshot.h).
  friend std::string StateSnapshot(const CacheCore& core);

  struct RequestState {
    std::vector<GroupTable> tables;  // one per group
    std::uint32_t num_slots = 0;     // tokens the tables cover
    // The last commit's count (the adopted hit before any): commits never
    // go below it.
    std::uint32_t num_committed_tokens = 0;
    // Where the admission lookup saw a longer prefix in some group than the
    // hit; sparse retention keeps what lands there.
    std::uint32_t shared_prefix_boundary = 0;
  };

  std::uint32_t MaxHitLength(std::uint32_t num_tokens) const;
  // Lookup's work for the request `id` of `num_tokens` tokens.
  CacheHit LookupView(RequestId id, std::uint32_t num_tokens, KeyView keys,
                      CacheRead cache_read) const;
  // The REQUIRES of each call, checked before it changes anything
  // (cache/call_checks.cc).
  void CheckAllocation(const Request& request, const AllocationRequest& args,
                       const RequestState* state) const;
  // A hit must come from this cache's lookup for this request, cover itself
  // in every group and still be what a lookup finds.
  void CheckHit(const Request& request, const CacheHit& hit) const;
  void CheckOrigin(const Request* request, const CacheHit& hit) const;
  // Returns the tokens the commit registers (capped at the request's).
  std::uint32_t CheckCommit(const Request& request,
                            std::uint32_t num_computed_tokens) const;
  void CheckSplit(const Request& request, const PrefillChunk& chunk) const;
  // Starts tracking a request (and counts its admission).
  absl::flat_hash_map<RequestId, RequestState>::iterator Admit(
      const Request& request, const CacheHit* hit);
  // Whether the limiting group had the hit's chain end cached once.
  bool LimiterEvicted(const CacheHit& hit, KeyView keys) const;
  // A new request's tables: its hit (nullable) in every group, with null
  // slots for what window groups no longer read.
  void AdoptHit(RequestState& state, const CacheHit* hit,
                const AllocationDemand& demand);
  // Re-announces the blocks of an adopted hit ("full" report mode).
  void AnnounceReuse(const Request& request, const CacheHit& hit);
  // Grows every group's table to the demand: what BlocksNeeded counted.
  NewBlocks AllocateNew(RequestState& state, const AllocationDemand& demand);
  // Whether the request's whole sequence, window groups capped at what one
  // request holds, fits in the free blocks now (spec §4.6
  // full_sequence_must_fit).
  bool WholeSequenceFits(const Request& request, const RequestState* state,
                         const CacheHit* hit, AllocationDemand demand) const;
  // Counts the blocks the demand takes from each pool into need_; returns
  // their sum.
  std::uint64_t BlocksNeeded(const RequestState* state, const CacheHit* hit,
                             AllocationDemand demand) const;
  // Whether need_ fits every pool's free blocks, once rebalancing pools
  // have moved bytes from the others' spare free blocks.
  bool NeedFits() const;
  // Rebalancing pools, after the hit's adoption (need_ less what each
  // pool's free blocks lost since free_at_check_): first every pool short of
  // free blocks gets ids unparked, then every pool that would evict a block
  // younger than one another pool can spare gets ids instead; the bytes come
  // from spare ones, else from parking the oldest free block any other pool
  // holds beyond its own need (docs/beyond.md). REQUIRES: NeedFits() held
  // at the check.
  void MakeRoom();
  // Unparks ids in `pool` while it is short or, with `spare_evictions`,
  // while its allocation would evict a block younger than the blocks
  // other pools can spare to pay for one unpark.
  void MoveInto(std::uint32_t pool, bool spare_evictions);
  // cursors_: each other pool's first free block beyond its need_ (the
  // oldest it can spare), none where it has none to spare.
  void SpareCursors(std::uint32_t pool);
  // plan_: the oldest spare blocks, across the cursors, whose bytes with
  // the spare ones pay one `slot`, each younger than `younger_than`;
  // planned_cursors_ past them. Returns false (plan not to be used) when
  // there are not enough.
  bool PlanParking(std::uint64_t slot, std::uint64_t younger_than);

  CacheConfig config_;
  std::uint64_t id_;  // HitOrigin::cache of this cache's hits
  KeyScheme scheme_;
  CacheGeometry geometry_;
  BlockPool pool_;
  std::vector<std::unique_ptr<GroupManager>> groups_;  // by group id
  // Scratch of BlocksNeeded: blocks per pool.
  mutable std::vector<std::uint64_t> need_ =
      std::vector<std::uint64_t>(pool_.num_pools(), 0);
  // Rebalancing: each pool's free blocks when the allocation was checked;
  // which ids were parked when the engine last took the moves, and whether
  // any moved since.
  std::vector<std::uint32_t> free_at_check_ =
      std::vector<std::uint32_t>(pool_.num_pools(), 0);
  std::vector<bool> parked_at_take_;
  bool moved_since_take_ = false;
  std::vector<BlockId> moved_scratch_;  // Unpark's ids, not read
  std::vector<std::optional<BlockId>> cursors_;
  std::vector<std::optional<BlockId>> planned_cursors_;
  std::vector<BlockId> plan_;
  Coordinator coordinator_{groups_, geometry_};
  SplitRules split_rules_ = MakeSplitRules(config_, geometry_);
  absl::flat_hash_map<RequestId, RequestState> requests_;
  CopyLog pending_copies_;              // queued, not yet taken
  std::vector<BlockId> pinned_copies_;  // taken; unpinned by FinishStep
  PrefixCacheStats stats_;
};

}  // namespace hkv::internal
