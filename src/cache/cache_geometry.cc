#include "cache/cache_geometry.h"

#include <algorithm>
#include <numeric>

namespace hkv::internal {
namespace {

std::uint32_t ScaledBlock(const GroupSpec& spec, std::uint32_t dcp) {
  return spec.dcp_layout == DcpLayout::kSharded ? spec.block_size * dcp
                                                : spec.block_size;
}

bool SameSpec(const GroupSpec& a, const GroupSpec& b, std::uint32_t dcp) {
  return a.kind == b.kind && ScaledBlock(a, dcp) == ScaledBlock(b, dcp) &&
         a.sliding_window == b.sliding_window && a.chunk_size == b.chunk_size;
}

// Whether hits may end inside blocks. A single group: whenever its hash unit
// is finer than its block and its kind allows it. Several groups: only with
// a recurrent group in align mode (spec §4.5 item 3), which hkv does not
// have yet, so never.
// TODO(#3): recurrent groups enable fine hits in hybrids.
bool PartialHits(const CacheConfig& config, std::uint32_t block) {
  if (config.groups.size() > 1) return false;
  return config.keys.hash_unit < block &&
         config.groups[0].kind != GroupKind::kChunkedLocal;
}

}  // namespace

CacheGeometry ResolveGeometry(const CacheConfig& config) {
  CacheGeometry geometry;
  const std::uint32_t unit = config.keys.hash_unit;
  std::uint32_t lcm = 1;
  for (const GroupSpec& spec : config.groups) {
    lcm = std::lcm(lcm, ScaledBlock(spec, config.dcp));
  }
  geometry.scheduler_block = lcm;
  geometry.partial_hits = PartialHits(config, lcm);
  geometry.alignment = geometry.partial_hits ? unit : lcm;

  // Spec groups, full attention first (stable), each member's rewind the
  // spec group's.
  for (std::size_t i = 0; i < config.groups.size(); ++i) {
    const GroupSpec& spec = config.groups[i];
    const DraftRewind rewind = spec.speculation == Speculation::kEagle
                                   ? DraftRewind::kEagle
                                   : DraftRewind::kNone;
    auto same =
        std::find_if(geometry.spec_groups.begin(), geometry.spec_groups.end(),
                     [&](const SpecGroup& g) {
                       return SameSpec(config.groups[ToIndex(g.members[0])],
                                       spec, config.dcp);
                     });
    const GroupId id{static_cast<std::uint32_t>(i)};
    if (same == geometry.spec_groups.end()) {
      geometry.spec_groups.push_back({spec.kind, {id}, rewind});
    } else {
      same->members.push_back(id);
      if (rewind == DraftRewind::kEagle) same->rewind = rewind;
    }
  }
  std::stable_partition(
      geometry.spec_groups.begin(), geometry.spec_groups.end(),
      [](const SpecGroup& g) { return g.kind == GroupKind::kFullAttention; });

  // Chunked-local groups never rewind; every other kind applies a rewind.
  DraftRewind lookup_rewind = DraftRewind::kNone;
  for (const SpecGroup& g : geometry.spec_groups) {
    if (g.rewind == DraftRewind::kEagle && g.kind != GroupKind::kChunkedLocal) {
      lookup_rewind = DraftRewind::kEagle;
    }
  }
  geometry.groups.resize(config.groups.size());
  for (const SpecGroup& g : geometry.spec_groups) {
    for (GroupId id : g.members) {
      const GroupSpec& spec = config.groups[ToIndex(id)];
      geometry.groups[ToIndex(id)] = {
          .id = id,
          .block_size = ScaledBlock(spec, config.dcp),
          .hash_unit = unit,
          .alignment = geometry.alignment,
          .scheduler_block = geometry.scheduler_block,
          .rewind = g.rewind,
          .lookup_rewind = lookup_rewind};
    }
  }
  return geometry;
}

}  // namespace hkv::internal
