// How a cache config's groups combine (spec §4.2, §4.5, §5.2): each group's
// block in tokens (DCP-scaled when sharded), the scheduler block (their lcm),
// whether hits may end inside blocks, the alignment every hit is a multiple
// of, and the spec groups (groups of one kind and geometry that a lookup
// probes together).
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <vector>

#include "groups/group_manager.h"
#include "hkv/cache_config.h"

namespace hkv::internal {

// Groups sharing kind, block and window: looked up as one, a position
// counting only when all of them have it cached.
struct SpecGroup {
  GroupKind kind;
  std::vector<GroupId> members;
  DraftRewind rewind;  // some member feeds a draft model
};

struct CacheGeometry {
  CacheFacts facts;                    // the groups' managers read this one
  std::vector<GroupGeometry> groups;   // by group id
  std::vector<SpecGroup> spec_groups;  // full attention first
};

// REQUIRES: config.Validate() succeeds.
CacheGeometry ResolveGeometry(const CacheConfig& config);

}  // namespace hkv::internal
