#include "cache/cache_geometry.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "check.h"
#include "groups/kind_traits.h"
#include "groups/recurrent_state.h"
#include "hkv/limits.h"

namespace hkv::internal {
namespace {

// Validated configs keep every block below 2^32 tokens.
std::uint32_t ScaledBlock(const GroupSpec& spec, std::uint32_t dcp) {
  return static_cast<std::uint32_t>(TokensPerBlock(spec, dcp));
}

bool SameSpec(const GroupSpec& a, const GroupSpec& b, std::uint32_t dcp) {
  return a.kind == b.kind && ScaledBlock(a, dcp) == ScaledBlock(b, dcp) &&
         a.sliding_window == b.sliding_window && a.chunk_size == b.chunk_size &&
         a.recurrent_mode == b.recurrent_mode &&
         a.speculative_blocks == b.speculative_blocks;
}

bool FineCapable(GroupKind kind) { return TraitsOf(kind).fine_capable; }

// Whether hits may end inside blocks: never as the engine does. A single group:
// whenever its hash unit is finer than its block and its kind allows it.
// Several groups (spec §4.5 item 3): only when an aligned recurrent group's
// states are finer than some block, and every group with blocks above the hash
// unit can resume inside them.
bool PartialHits(const CacheConfig& config) {
  if (config.behaviour == Behaviour::kEngine) return false;
  const std::uint32_t unit = config.keys.hash_unit;
  if (config.groups.size() == 1) {
    return unit < ScaledBlock(config.groups[0], config.dcp) &&
           FineCapable(config.groups[0].kind) &&
           IsPrefixCacheable(config.groups[0]);
  }
  bool aligned_recurrent = false;
  bool coarser_block = false;
  for (const GroupSpec& spec : config.groups) {
    if (!IsPrefixCacheable(spec)) continue;  // never vetoes
    const std::uint32_t block = ScaledBlock(spec, config.dcp);
    if (IsAlignedRecurrent(spec)) {
      aligned_recurrent = true;
      coarser_block |= config.dcp == 1 ? block > unit : block >= unit;
    } else {
      coarser_block |= block > unit;
    }
    if (block != unit && !FineCapable(spec.kind)) return false;
  }
  return aligned_recurrent && coarser_block;
}

// Spec groups of the cacheable groups, full attention first (stable); a
// spec group rewinds when any member does.
std::vector<SpecGroup> SpecGroupsOf(const CacheConfig& config) {
  std::vector<SpecGroup> groups;
  for (std::size_t i = 0; i < config.groups.size(); ++i) {
    const GroupSpec& spec = config.groups[i];
    if (!IsPrefixCacheable(spec)) continue;  // lookups leave it out
    const DraftRewind rewind = spec.speculation == Speculation::kEagle
                                   ? DraftRewind::kEagle
                                   : DraftRewind::kNone;
    auto same =
        std::find_if(groups.begin(), groups.end(), [&](const SpecGroup& g) {
          return SameSpec(config.groups[ToIndex(g.members[0])], spec,
                          config.dcp);
        });
    const GroupId id{static_cast<std::uint32_t>(i)};
    if (same == groups.end()) {
      groups.push_back({spec.kind, {id}, rewind});
    } else {
      same->members.push_back(id);
      if (rewind == DraftRewind::kEagle) same->rewind = rewind;
    }
  }
  std::stable_partition(groups.begin(), groups.end(), [](const SpecGroup& g) {
    return TraitsOf(g.kind).reads_whole_prefix;
  });
  return groups;
}

}  // namespace

CacheGeometry ResolveGeometry(const CacheConfig& config) {
  CacheGeometry geometry;
  CacheFacts& facts = geometry.facts;
  const std::uint32_t unit = config.keys.hash_unit;
  // In 64 bits, and checked: Validate bounds the lcm (blocks of 65536 and
  // 65537 tokens have one past 2^32).
  std::uint64_t lcm64 = 1;
  for (const GroupSpec& spec : config.groups) {
    lcm64 = std::lcm(lcm64, std::uint64_t{ScaledBlock(spec, config.dcp)});
    HKV_REQUIRE(lcm64 <= kMaxTokensPerRequest,
                "the groups' blocks have a least common multiple beyond the "
                "limit of tokens per request (CacheConfig::Validate refuses)");
  }
  const auto lcm = static_cast<std::uint32_t>(lcm64);
  facts.hash_unit = unit;
  facts.scheduler_block = lcm;
  facts.partial_hits = PartialHits(config);
  facts.engine_rules = config.behaviour == Behaviour::kEngine;
  facts.alignment = facts.partial_hits ? unit : lcm;
  facts.placement = config.retention == Retention::kPlacement;
  facts.retention_interval = facts.placement ? std::optional<std::uint32_t>{0}
                                             : config.retention_interval;
  geometry.spec_groups = SpecGroupsOf(config);

  // Recurrent groups keep their prompt checkpoint one unit lower when a
  // draft model exists.
  for (const SpecGroup& g : geometry.spec_groups) {
    if (g.rewind == DraftRewind::kEagle)
      facts.draft_model = DraftRewind::kEagle;
  }
  facts.junction_rewound =
      facts.draft_model == DraftRewind::kEagle &&
      std::all_of(geometry.spec_groups.begin(), geometry.spec_groups.end(),
                  [](const SpecGroup& g) {
                    const KindTraits& traits = TraitsOf(g.kind);
                    return !traits.covers_positions || traits.keeps_states ||
                           g.rewind == DraftRewind::kEagle;
                  });
  for (std::size_t i = 0; i < config.groups.size(); ++i) {
    const GroupSpec& spec = config.groups[i];
    const GroupId id{static_cast<std::uint32_t>(i)};
    // The reference engine caps a whole-sequence admission in the groups
    // that recycle blocks (windows, chunks) only: its recurrent groups
    // outside align mode count a block per block of tokens.
    const bool capped = config.behaviour != Behaviour::kEngine ||
                        spec.kind != GroupKind::kRecurrent;
    DraftRewind rewind = DraftRewind::kNone;
    for (const SpecGroup& g : geometry.spec_groups) {
      if (std::find(g.members.begin(), g.members.end(), id) !=
          g.members.end()) {
        rewind = g.rewind;
      }
    }
    geometry.groups.push_back(
        {.id = id,
         .block_size = ScaledBlock(spec, config.dcp),
         .pool = config.group_pool_blocks.empty()
                     ? 0
                     : static_cast<std::uint32_t>(i),
         .rewind = rewind,
         .admission_cap =
             capped ? MaxBlocksPerRequest(
                          spec, {.max_model_len = config.max_model_len,
                                 .max_in_flight_tokens =
                                     config.max_in_flight_tokens.value_or(
                                         config.max_model_len),
                                 .dcp = config.dcp})
                    : std::numeric_limits<std::uint64_t>::max()});
  }
  return geometry;
}

}  // namespace hkv::internal
