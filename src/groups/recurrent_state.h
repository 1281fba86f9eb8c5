// Recurrent state (Mamba2, GatedDeltaNet, KDA; spec §3.4): one fixed-size
// state per sequence instead of KV per token. A block holds one state
// snapshot; table slot i is meant for the state after (i+1)*b tokens. A
// position is resumable only where a state was kept at exactly it.
//
// kAlign: the kernel leaves a state at the end of each scheduled chunk, so
// a request holds one current state block (plus its speculative blocks),
// null slots before it, and older states are retired. The prompt's
// checkpoint (where a resend resumes) is registered as a partial entry; when
// it lies inside a block the request itself keeps writing that block and
// hands its key to a copy on its next allocation.
// kAll: a state at every block boundary; blocks are kept and cached like
// attention blocks, with speculative slots on top.
//
// Keys registered or moved in the current step are not usable before the
// step's copies and forward ran: a hit ending on one is refused until the
// next step.
//
// Thread-compatible.
#pragma once

#include "absl/container/flat_hash_set.h"
#include "groups/group_manager.h"
#include "groups/kind_traits.h"
#include "hkv/group_spec.h"

namespace hkv::internal {

class RecurrentStateManager final : public GroupManager {
 public:
  // REQUIRES: alignment is the hash unit or a multiple of it.
  // `spec`: the group's mode, speculative and checkpoint blocks.
  RecurrentStateManager(BlockPool& pool, const CacheFacts& cache,
                        const GroupGeometry& geometry, const GroupSpec& spec);

  // The latest state at a position <= max_length (on the alignment),
  // preceded by null blocks. Never rewinds. O(max_length / unit).
  GroupHit FindLongestHit(const HitQuery& query) const override;

  // Only the state of the last computed token is read.
  std::uint32_t SkippedTokens(std::uint32_t num_computed) const override {
    return num_computed > 0 ? num_computed - 1 : 0;
  }

  std::uint32_t NumBlocksToAllocate(
      const GroupTable& table, const AllocationDemand& demand) const override;
  void AllocateNew(GroupTable& table, const AllocationDemand& demand,
                   std::vector<BlockId>& placed, CopyLog& log) override;
  void RemoveSkippedBlocks(GroupTable& table,
                           std::uint32_t num_processed) override;

  // Registers full blocks (states at block ends) and, at the prompt's
  // checkpoint, a partial entry.
  void Commit(GroupTable& table, const Request& request,
              std::uint32_t num_tokens,
              std::span<const std::uint32_t> replay) override;

  void StartStep() override { registered_this_step_.clear(); }

  // Where a prompt of `num_tokens` must leave a reusable state (spec §3.4.6):
  // one token below the end (its logits are recomputed on a resend), on the
  // unit, one unit lower when a draft model rewinds.
  static std::uint32_t CheckpointPosition(std::uint32_t num_tokens,
                                          std::uint32_t unit,
                                          DraftRewind rewind);

 private:
  bool aligned() const { return mode_ == RecurrentMode::kAlign; }
  // RemoveSkippedBlocks under the reference engine's rules.
  void RemoveSkippedBlocksAsEngine(GroupTable& table,
                                   std::uint32_t num_processed);
  // A demand with the speculative slots added (kAll uses the generic
  // allocation on it).
  AllocationDemand WithSpeculativeSlots(const AllocationDemand& demand) const;
  // Copy-on-write of a pending partial hit onto `destination` (spec §3.4.4
  // step 7).
  void CopyPartialHit(GroupTable& table, BlockId destination,
                      std::vector<BlockId>& placed, CopyLog& log);
  void CommitCheckpoint(GroupTable& table, const Request& request,
                        std::uint32_t num_tokens);

  // The prompt's checkpoint to export into the slot before the current
  // state, when this allocation's chunk computes past it (spec §3.4.4 step
  // 8) and the kernel can.
  std::optional<GroupTable::ExportedCheckpoint> CheckpointToExport(
      const GroupTable& table, const AllocationDemand& demand) const;
  // Keys the exported checkpoint once its chunk is computed.
  void CommitExport(GroupTable& table, const Request& request,
                    std::uint32_t num_tokens);

  RecurrentMode mode_;
  std::uint32_t speculative_blocks_;
  bool exports_checkpoint_;
  absl::flat_hash_set<PrefixKey, PrefixKeyHash> registered_this_step_;
};

// A recurrent group in kAlign mode: states only where chunks end.
bool IsAlignedRecurrent(const GroupSpec& spec);

// The traits of recurrent state (groups/kind_traits.h).
const KindTraits& RecurrentTraits();

}  // namespace hkv::internal
