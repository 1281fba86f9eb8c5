// Chain runs: committed chains of full blocks kept as runs of block ids, so
// that a lookup proves a whole cached prefix from its deepest key and copies
// its ids instead of probing the index once per block.
//
// A chain is a group's sequence of full-block keys, depth 0, 1, 2, ... Keys
// are chained digests (each key determines every key before it, as the
// engine's block hashes and hkv's own keys do), so the block registered
// first under the key at depth d, together with the blocks registered first
// under the d keys before it, is what a lookup walking that chain returns.
//
// A run holds the ids of such blocks at consecutive depths [first_depth,
// first_depth + size), each still registered first under its key (a member);
// a run starting past depth 0 links to the run that held depth
// first_depth - 1 when it was started (its parent). The pool calls Append
// when a block becomes the first registered under a full-block key of a
// chain and Forget when a member loses its keys; Forget cuts the member's run
// there (members past it are let go too) and seals it, so that a run only
// ever grows at its end while unsealed and only shrinks after. A link is
// then sound exactly while the parent is the same run (a stamp, never
// reused) and still holds the linked depth: Certified checks that at every
// link, so a certified block's chain lists, at every depth, the block the
// index returns first for that depth's key.
//
// Bounded: every id a run holds is a member's (a block's), so the runs hold
// at most one id per block, and there are at most as many runs as members;
// a run's capacity is at most 4x its ids (a cut run gives its room back
// once it is three quarters spare). A run's record is 56 bytes: chains
// that branch every block (one run per block) cost that much a block more.
// Blocks let go of when a run is cut stay cached; a lookup that reaches them
// walks the index instead.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hkv/types.h"

namespace hkv::internal {

class ChainRuns {
 public:
  // Blocks 1 .. num_blocks - 1 may be members.
  explicit ChainRuns(std::uint32_t num_blocks);
  ChainRuns(const ChainRuns&) = delete;
  ChainRuns& operator=(const ChainRuns&) = delete;

  // Records `block`, just registered as the first block under the key at
  // `depth` of its chain, after `previous`: the block registered first
  // under the key at depth - 1 (ignored at depth 0). The block is appended
  // to previous's run when previous ends it and it is unsealed; else it
  // starts a run linked to previous's. Records nothing when previous is in
  // no run (or is the null block) past depth 0. O(1) amortized.
  // REQUIRES: block is not a member, not null, below num_blocks.
  void Append(BlockId block, std::uint32_t depth, BlockId previous);

  // `block` lost its keys: cuts its run at it (it and the members after it
  // leave the run) and seals the run. A no-op for a non-member. O(members
  // cut).
  void Forget(BlockId block);
  // Where `block`'s membership is recorded, to prefetch.
  const void* MemberOf(BlockId block) const {
    return &members_[ToIndex(block)];
  }

  // Whether `block` (registered first under the key at `depth`) is a member
  // at `depth` whose run and every linked run still hold the chain down to
  // depth 0. O(links).
  bool Certified(BlockId block, std::uint32_t depth) const;

  // Appends the chain of a certified block to `out`: its ids at depths 0
  // .. depth. One copy when the block's run holds it whole (from depth 0);
  // else the room is zeroed first and filled run by run from the tip.
  // REQUIRES: Certified(block, depth). O(links + depth).
  void AppendChain(BlockId block, std::uint32_t depth,
                   std::vector<BlockId>& out) const;

  // Drops every run and membership. O(num_blocks).
  void Clear();

  bool IsMember(BlockId block) const {
    return members_[ToIndex(block)].run != kNoRun;
  }
  bool empty() const { return num_runs_ == 0; }
  std::size_t num_runs() const { return num_runs_; }
  // Bytes of the tables (capacities times element sizes).
  std::size_t MemoryBytes() const;
  // Returns false on any broken link between runs and their members.
  // O(num_blocks + ids held).
  bool CheckInvariants() const;

 private:
  static constexpr std::uint32_t kNoRun = 0xffffffffu;

  struct Member {
    std::uint32_t run = kNoRun;
    std::uint32_t offset = 0;  // depth - the run's first depth
  };
  struct Run {
    std::vector<BlockId> ids;  // every one a member, at its offset
    std::uint64_t stamp = 0;   // unique over the object's life; 0: free slot
    std::uint64_t parent_stamp = 0;
    std::uint32_t first_depth = 0;
    std::uint32_t parent = kNoRun;  // holds depth first_depth - 1
    bool sealed = false;
  };

  void StartRun(BlockId block, std::uint32_t depth, std::uint32_t parent);
  void FreeRun(std::uint32_t run);

  std::vector<Member> members_;  // by block id
  std::vector<Run> runs_;
  std::vector<std::uint32_t> free_runs_;
  std::uint64_t next_stamp_ = 1;
  std::size_t num_runs_ = 0;
};

}  // namespace hkv::internal
