// How far a request reaches through entries an offload tier holds, and
// which of them a load must place: the connector's arithmetic, shared by
// TierConnector (over a TierChain's directory) and the simulator (over its
// modelled tiers).
//
// The reach is the cache's own lookup (coordinator and group managers)
// over the entries the GPU holds plus those `known` reports, so it is
// exactly the hit the GPU would give had the tier's entries stayed there.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "cache/cache_geometry.h"
#include "hkv/cache_manager.h"
#include "hkv/tier_chain.h"
#include "hkv/tier_connector.h"

namespace hkv::internal {

// The tier's group at a boundary key; null when it holds none.
using KnownGroupOf = std::function<const KnownGroup*(const BlockHash&)>;

// An entry a load must write: its group, the request's block and the
// boundary its object group is keyed at.
struct NeededPart {
  GroupId group{0};
  BlockId block{0};
  std::uint32_t end_tokens = 0;
};

class TierReach {
 public:
  // REQUIRES: config.Validate() succeeds (else UsageError).
  explicit TierReach(const CacheConfig& config);

  // The GPU hit and, when the tier's entries reach further, the hit cut to
  // a scheduler block with the external tokens past it: the reach over the
  // GPU's entries below the cut (what the cut hit keeps) and the tier's
  // from it (what the load reads). The GPU hit alone for a request that
  // skips reading the cache, or a cache that caches nothing.
  TierHit Lookup(const CacheManager& cache, const Request& request,
                 const KnownGroupOf& known) const;

  // What the blocks Allocate placed for `hit`'s external tokens need, by
  // group then position: pages past the cut (window groups only those
  // still placed), and a recurrent group's state at the end, in the block
  // its next step reads and advances (the first placed at or after the
  // end's slot that is not one of `exports`, the allocation's checkpoint
  // exports). REQUIRES: that allocation succeeded.
  std::vector<NeededPart> Needs(const CacheManager& cache,
                                const Request& request, const TierHit& hit,
                                std::span<const StateExport> exports) const;

  const CacheConfig& config() const { return config_; }

 private:
  CacheConfig config_;
  CacheGeometry geometry_;
};

}  // namespace hkv::internal
