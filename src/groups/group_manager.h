// One cache group's policy over the shared block pool: how it finds its
// longest resumable prefix, how many blocks a request needs, and what it
// registers in the prefix index. Requests' block tables live with the caller
// (the cache core) and are passed in, so a manager holds no per-request state.
//
// The generic allocation, adoption, freeing and skipping of spec §3.6 are
// implemented here once; group kinds override the lookup, the tokens that
// fall out of their window, and caching.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "core/block_pool.h"
#include "hkv/allocation.h"
#include "hkv/request.h"
#include "hkv/types.h"

namespace hkv::internal {

enum class DraftRewind { kNone, kEagle };

// Facts of the whole cache, decided by the cache core at construction; every
// group reads the one copy.
struct CacheFacts {
  std::uint32_t hash_unit = 16;        // divides every group's block
  std::uint32_t alignment = 16;        // A: hits are multiples of it
  std::uint32_t scheduler_block = 16;  // S: lcm of all groups' block sizes
  bool partial_hits = false;           // A is the hash unit, below some block
  // Whether any group feeds a draft model.
  DraftRewind draft_model = DraftRewind::kNone;
  // Sparse retention (see groups/retention.h); unset: dense. 0 under
  // placement, which keeps one position per boundary.
  std::optional<std::uint32_t> retention_interval = std::nullopt;
  bool placement = false;
  // Whether a shared-prefix junction (the longest hit any group found) is
  // already rewound: a draft model exists and every group covering
  // positions without states rewinds its own hits.
  bool junction_rewound = false;
  // Behaviour::kEngine: the reference engine's rules where hkv's own differ.
  bool engine_rules = false;
};

// Fixed facts of one group, decided by the cache core at construction.
struct GroupGeometry {
  GroupId id{0};
  std::uint32_t block_size = 16;  // tokens one block covers (DCP-scaled)
  std::uint32_t pool = 0;         // the BlockPool pool its blocks come from
  // Whether the group's layers feed a draft model (its lookups rewind).
  DraftRewind rewind = DraftRewind::kNone;
  // Blocks one request holds at most (MaxBlocksPerRequest): a
  // whole-sequence admission counts window groups at no more.
  std::uint64_t admission_cap = std::numeric_limits<std::uint64_t>::max();
};

// One lookup of a group kind over the groups that share its spec: a block
// position counts only when every member group has it cached.
struct HitQuery {
  KeyView keys;                             // the request's unit keys
  std::uint32_t max_length = 0;             // the hit is at most this
  DraftRewind rewind = DraftRewind::kNone;  // drop the last unit (block)
  std::span<const GroupId> members;         // at least one
};

// One request's blocks in one group.
struct GroupTable {
  std::vector<BlockId> blocks;  // index i covers tokens [i*b, (i+1)*b)
  std::uint32_t num_committed_blocks = 0;
  // A shared block whose tail this request will overwrite: on its next
  // allocation the request copies it (a hit ending inside blocks[index]), or,
  // for a recurrent state it registered itself, hands its keys to a copy.
  struct PartialHit {
    std::uint32_t index;
    BlockId source;
  };
  std::optional<PartialHit> partial_hit = std::nullopt;
  bool from_hit = false;                // the table started as an adopted hit
  std::uint32_t num_prompt_tokens = 0;  // the request's, at admission
  // Where the runs this request announced (BlockStored) end, in tokens.
  std::uint32_t announced_upto = 0;

  // Recurrent groups only.
  bool allocated_once = false;     // speculative blocks exist
  std::uint32_t retired_upto = 0;  // blocks below it were released
  // The state block written two steps ago, released once passed.
  std::optional<std::uint32_t> last_state_index = std::nullopt;
  // The prompt's checkpoint the kernel exports into blocks[index] in the
  // chunk being computed; keyed when that chunk is committed.
  struct ExportedCheckpoint {
    std::uint32_t position;
    std::uint32_t index;
    friend bool operator==(const ExportedCheckpoint&,
                           const ExportedCheckpoint&) = default;
  };
  std::optional<ExportedCheckpoint> exported_checkpoint = std::nullopt;
};

// What one allocation asks of a group.
struct AllocationDemand {
  std::uint32_t num_slots = 0;  // tokens the table must cover (lookahead in)
  std::uint32_t num_main = 0;   // the same without lookahead slots
  std::uint32_t num_local_computed = 0;  // computed before, hit included
  // num_local_computed plus tokens a connector loads: what window groups
  // skip is counted from it.
  std::uint32_t num_computed = 0;
  std::uint32_t num_prompt_tokens = 0;
  std::span<const BlockId> hit = {};  // a new request's hit blocks, else empty
  // kWholeSequence: a prediction only, the table's growth capped at the
  // group's admission cap.
  AdmissionGate gate = AdmissionGate::kNextChunk;
};

struct GroupHit {
  std::uint32_t num_tokens = 0;
  // What the group could resume from before the rewind (equal to
  // num_tokens without one).
  std::uint32_t proven_tokens = 0;
  // Per member group, index-aligned with its block table; the null block
  // marks positions the group does not need.
  std::vector<std::vector<BlockId>> blocks;
};

// Blocks and copies produced by one allocation.
struct CopyLog {
  std::vector<BlockCopy> copies;
  std::vector<BlockId> retained;  // endpoints pinned until the copy has run
};

class GroupManager {
 public:
  // `cache` outlives the manager.
  GroupManager(BlockPool& pool, const CacheFacts& cache,
               const GroupGeometry& geometry)
      : pool_(pool), cache_(cache), geometry_(geometry) {}
  virtual ~GroupManager() = default;
  GroupManager(const GroupManager&) = delete;
  GroupManager& operator=(const GroupManager&) = delete;

  const GroupGeometry& geometry() const { return geometry_; }
  const CacheFacts& cache() const { return cache_; }

  // The largest position <= query.max_length, a multiple of the alignment,
  // from which every member group can resume (after the rewind, when the
  // query asks for one and the kind applies it). Pure: never touches
  // reference counts.
  virtual GroupHit FindLongestHit(const HitQuery& query) const = 0;

  // Tokens a request no longer reads once `num_computed` tokens are
  // computed (window groups); their blocks may be released.
  virtual std::uint32_t SkippedTokens(std::uint32_t num_computed) const = 0;

  // Registers what the request's first `num_tokens` tokens let later
  // requests reuse; `replay` are the positions a resend of the prompt
  // lands on, which sparse retention keeps. REQUIRES: num_tokens <=
  // request.num_tokens(), and the table covers them.
  virtual void Commit(GroupTable& table, const Request& request,
                      std::uint32_t num_tokens,
                      std::span<const std::uint32_t> replay) = 0;

  // New blocks (plus evictable hit blocks) the allocation would take from
  // the free queue (spec §3.6); more than the pool holds to refuse it.
  virtual std::uint32_t NumBlocksToAllocate(
      const GroupTable& table, const AllocationDemand& demand) const;

  // Hit blocks the adoption takes off the free queue: cached blocks no
  // request holds, among those the request still reads.
  std::uint32_t EvictableHitBlocks(const AllocationDemand& demand,
                                   std::uint32_t held) const;
  // Whether adopting demand.hit leaves a shared block whose tail the
  // request overwrites: a hit ending inside a block the request still reads.
  bool AdoptsPartialHit(const AllocationDemand& demand) const;

  // Takes references on a new request's hit blocks (demand.hit, possibly
  // none when a connector loads the tokens), nulls the slots it no longer
  // reads and records a partial hit for copy-on-write. REQUIRES: the table
  // is empty.
  void AdoptHit(GroupTable& table, const AllocationDemand& demand);

  // Runs a pending copy-on-write, then grows the table to cover the demand.
  // Appends the ids it placed in the table to `placed`. Takes exactly what
  // NumBlocksToAllocate counted.
  virtual void AllocateNew(GroupTable& table, const AllocationDemand& demand,
                           std::vector<BlockId>& placed, CopyLog& log);

  // Releases blocks the request no longer reads (spec §3.6).
  virtual void RemoveSkippedBlocks(GroupTable& table,
                                   std::uint32_t num_processed);

  // A scheduler step begins: what the previous one registered is computed.
  virtual void StartStep() {}

  // Releases the whole table, last block first.
  void Free(GroupTable& table);

 protected:
  // Whole blocks of the tokens a request no longer reads once
  // `num_computed` tokens are computed.
  std::uint32_t SkippedBlocks(std::uint32_t num_computed) const {
    return SkippedTokens(num_computed) / geometry_.block_size;
  }
  // ceil(num_tokens / b), without the sum that wraps near 2^32.
  std::uint32_t BlocksFor(std::uint32_t num_tokens) const {
    const std::uint32_t b = geometry_.block_size;
    return num_tokens / b + (num_tokens % b != 0 ? 1 : 0);
  }
  // Looks `key` up in every member group: false unless all have it, else
  // `found[m]` is member m's first-inserted block.
  bool ProbeAll(const BlockHash& key, std::span<const GroupId> members,
                std::vector<BlockId>& found) const;
  // Appends `found[m]` to member m's list.
  static void Append(GroupHit& hit, const std::vector<BlockId>& found);
  // Registers the prompt's partial tail entries (spec §3.7.1): its last unit
  // boundary and, when hits may end inside blocks, the replay positions (a
  // resend capped at prompt - 1, a shared-prefix junction, each with its
  // rewound neighbour, at the alignment and the scheduler block).
  void CommitPartialTail(const GroupTable& table, const Request& request,
                         std::uint32_t num_tokens,
                         std::span<const std::uint32_t> replay);
  // The key of the prefix ending at block `index`'s end.
  const BlockHash& BlockKey(KeyView keys, std::uint32_t index) const {
    return keys[(index + 1) * (geometry_.block_size / cache_.hash_unit) - 1];
  }
  // Key of the prefix ending at block `index`'s end.
  PrefixKey FullBlockKey(std::span<const BlockHash> keys,
                         std::uint32_t index) const {
    const std::uint32_t units_per_block =
        geometry_.block_size / cache_.hash_unit;
    return {.hash = keys[(index + 1) * units_per_block - 1],
            .group = geometry_.id};
  }
  // Key of the prefix of `num_tokens` tokens (a multiple of the hash unit).
  PrefixKey UnitKey(std::span<const BlockHash> keys,
                    std::uint32_t num_tokens) const;
  // Whether a group's committed blocks form chain runs (chain_runs.h): the
  // groups whose lookups read the whole prefix (FindCachedRun).
  enum class Chaining { kUnchained, kChained };
  // Registers the full blocks [committed, num_tokens / b) under their keys,
  // those `keep` marks (all when empty; indexed from the first committed
  // block); one BlockStored event per run of consecutive registered blocks.
  void CommitFullBlocks(GroupTable& table, const Request& request,
                        std::uint32_t num_tokens,
                        const std::vector<bool>& keep = {},
                        Chaining chaining = Chaining::kUnchained);
  // Registers a partial entry at `boundary` (a multiple of the hash unit
  // inside block `index`) and reports its last unit as stored.
  void CommitPartialEntry(const GroupTable& table, const Request& request,
                          std::uint32_t boundary);
  // Reports the unit ending at `boundary` as stored (a BlockStored event).
  void RecordUnitStored(const GroupTable& table, const Request& request,
                        std::uint32_t boundary);
  // Announces full blocks [first, end) of the request (one BlockStored) and
  // advances the table's announced end.
  void RecordRun(GroupTable& table, const Request& request, std::uint32_t first,
                 std::uint32_t end);

  BlockPool& pool_;
  const CacheFacts& cache_;
  const GroupGeometry geometry_;
};

}  // namespace hkv::internal
