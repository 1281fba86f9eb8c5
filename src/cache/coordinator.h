// The coordinator reconciles the groups' answers into one hit (spec §4.3,
// §4.5.1): the largest position every group can resume from. Each spec
// group answers "the largest resumable p <= L"; the hybrid loop sets
// L <- min over groups to its fixed point. A rewinding group applies its
// rewind once per candidate length, looking one unit (one block for coarse
// hits) past it so the rewound position is proven; full attention, whose
// set is downward closed, is looked up once. With two spec groups, full
// attention first, one pass is the fixed point.
//
// Thread-compatible; holds non-owning pointers to the cache core's managers.
#pragma once

#include <cstdint>
#include <memory>
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
  CommonHit FindUnitary(std::span<const BlockHash> keys,
                        std::uint32_t max_length) const;
  // The length a spec group is asked for when it rewinds.
  std::uint32_t ProofLength(const GroupManager& manager, std::uint32_t length,
                            std::size_t num_keys) const;
  void Collect(const SpecGroup& group, GroupHit& hit, CommonHit& out) const;

  const std::vector<std::unique_ptr<GroupManager>>& managers_;
  const CacheGeometry& geometry_;
};

}  // namespace hkv::internal
