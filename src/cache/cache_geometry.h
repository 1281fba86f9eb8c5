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
#include "hkv/cache_manager.h"

namespace hkv::internal {

// Groups sharing kind, block and window: looked up as one, a position
// counting only when all of them have it cached.
struct SpecGroup {
  GroupKind kind;
  std::vector<GroupId> members;
  DraftRewind rewind;  // some member feeds a draft model
};

struct CacheGeometry {
  std::vector<GroupGeometry> groups;
  std::vector<SpecGroup> spec_groups;  // full attention first
  std::uint32_t scheduler_block = 0;   // S
  std::uint32_t alignment = 0;         // A
  bool partial_hits = false;           // A is the hash unit, below some block
};

// REQUIRES: config.Validate() succeeds.
CacheGeometry ResolveGeometry(const CacheConfig& config);

}  // namespace hkv::internal
