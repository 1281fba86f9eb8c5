// The coordinator reconciles the groups' answers into one hit (spec §4.3,
// §4.5.1): the largest position every group can resume from. Each spec
// group answers "the largest resumable p <= L"; the hybrid loop sets
// L <- min over groups to its fixed point. A rewinding group answers from
// its rewound set on every question, looking one unit (one block for coarse
// hits) past L and dropping it, so its answers stay monotone and the fixed
// point is the largest common position; full attention, whose set is
// downward closed, is looked up once. With two spec groups, full attention
// first, one pass is the fixed point.
//
// Thread-compatible; holds non-owning pointers to the cache core's managers.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "cache/cache_geometry.h"
#include "groups/group_manager.h"

namespace hkv::internal {

struct CommonHit {
  std::uint32_t num_tokens = 0;
  std::vector<std::vector<BlockId>> blocks;  // per group id
  // The longest answer any group gave; above num_tokens when some group
  // (e.g. one that keeps few states) limited the hit.
  std::uint32_t longest = 0;
  // The longest prefix full attention holds (without a rewind; the longest
  // answer when there is no full-attention group), at most max_length.
  std::uint32_t chain_tokens = 0;
  // When the hit is below chain_tokens: the group that last lowered it, and
  // whether its rewind alone did.
  std::optional<GroupId> limiter = std::nullopt;
  bool limited_by_rewind = false;
};

class Coordinator {
 public:
  // `managers` is indexed by group id and outlives the coordinator.
  Coordinator(const std::vector<std::unique_ptr<GroupManager>>& managers,
              const CacheGeometry& geometry);

  // O(lookups of every group, times the loop's iterations).
  CommonHit FindLongestHit(std::span<const BlockHash> keys,
                           std::uint32_t max_length) const;

 private:
  struct Limiter {
    std::size_t spec_group;
    bool rewound;
  };
  // One fixed-point computation's state.
  struct Pass {
    std::span<const BlockHash> keys;
    std::vector<GroupHit> hits;   // per spec group, its latest answer
    std::vector<bool> looked_up;  // per spec group
    std::uint32_t longest = 0;
    std::optional<Limiter> limiter = std::nullopt;
  };

  CommonHit FindUnitary(std::span<const BlockHash> keys,
                        std::uint32_t max_length) const;
  // Spec group i's answer at `current`.
  std::uint32_t Ask(std::size_t i, std::uint32_t current, Pass& pass) const;
  // The hit's blocks per group (full attention cut to the hit) and why it
  // is short.
  CommonHit Gather(std::uint32_t hit, std::uint32_t max_length,
                   Pass& pass) const;
  // The length a spec group is asked for when it rewinds.
  std::uint32_t ProofLength(const GroupManager& manager, std::uint32_t length,
                            std::size_t num_keys) const;
  void Collect(const SpecGroup& group, GroupHit& hit, CommonHit& out) const;

  const std::vector<std::unique_ptr<GroupManager>>& managers_;
  const CacheGeometry& geometry_;
};

}  // namespace hkv::internal
