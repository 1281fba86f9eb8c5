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
#include "hkv/cache_hit.h"

namespace hkv::internal {

class Coordinator {
 public:
  // `managers` is indexed by group id and outlives the coordinator.
  Coordinator(const std::vector<std::unique_ptr<GroupManager>>& managers,
              const CacheGeometry& geometry);

  // The hit's length, blocks per group, full attention's chain, the
  // longest answer of any group (as the shared-prefix boundary, when above
  // the hit), and which group limited it and why: a rewind, else a missing
  // checkpoint or window (the caller tells evictions apart). The origin and
  // the key generation are the caller's. O(lookups of every group, times
  // the loop's iterations).
  CacheHit FindLongestHit(KeyView keys, std::uint32_t max_length) const;

 private:
  struct Limiter {
    std::size_t spec_group;
    bool rewound;
  };
  // One fixed-point computation's state.
  struct Pass {
    KeyView keys;
    std::vector<GroupHit> hits;  // per spec group, its latest answer
    // Per spec group, the length its latest answer was asked for.
    std::vector<std::optional<std::uint32_t>> asked;
    std::uint32_t longest = 0;
    std::optional<Limiter> limiter = std::nullopt;
  };

  CacheHit FindUnitary(KeyView keys, std::uint32_t max_length) const;
  // Spec group i's answer at `current`.
  std::uint32_t Ask(std::size_t i, std::uint32_t current, Pass& pass) const;
  // The hit's blocks per group (full attention cut to the hit) and why it
  // is short.
  CacheHit Gather(std::uint32_t hit, std::uint32_t max_length,
                  Pass& pass) const;
  // Records that spec group `limiter`'s first member kept the hit below
  // the chain, by its rewind alone or not.
  void Blame(const SpecGroup& limiter, bool rewound, CacheHit& out) const;
  // The length a spec group is asked for when it rewinds.
  std::uint32_t ProofLength(const SpecGroup& group, std::uint32_t length,
                            std::size_t num_keys) const;
  void Collect(const SpecGroup& group, GroupHit& hit, CacheHit& out) const;

  const std::vector<std::unique_ptr<GroupManager>>& managers_;
  const CacheGeometry& geometry_;
};

}  // namespace hkv::internal
