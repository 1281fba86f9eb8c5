#include "tiers/tier_reach.h"

#include <algorithm>
#include <memory>

#include "cache/residency_mirror.h"
#include "check.h"
#include "hkv/group_spec.h"

namespace hkv::internal {
namespace {

std::uint32_t MaxHitLength(const CacheConfig& config, const Request& request) {
  const std::uint32_t n = std::min(request.num_tokens(), config.max_model_len);
  return n > 0 ? n - 1 : 0;
}

// The entries the hit through the tier can use, in one mirror: below the
// cut (`cut_unit` units) what the GPU holds, which the truncated hit
// supplies; from the cut on what the tier holds, which the load supplies.
// None when the tier holds nothing from the cut on.
std::unique_ptr<ResidencyMirror> UnionMirror(const CacheConfig& config,
                                             const CacheManager& cache,
                                             const Request& request,
                                             const KnownGroupOf& known,
                                             std::uint32_t cut_unit,
                                             std::uint32_t max_units) {
  const std::span<const BlockHash> keys = request.keys();
  const std::uint32_t unit = config.keys.hash_unit;
  std::vector<PrefixKey> held;
  for (std::uint32_t u = cut_unit; u < max_units; ++u) {
    const KnownGroup* there = known(keys[u]);
    if (there == nullptr || there->end_tokens != (u + 1) * unit) continue;
    for (GroupId group : there->groups) {
      if (ToIndex(group) < config.groups.size())
        held.push_back({.hash = keys[u], .group = group});
    }
  }
  if (held.empty()) return nullptr;
  for (std::uint32_t u = 0; u < cut_unit; ++u) {
    for (std::uint32_t g = 0; g < config.groups.size(); ++g) {
      if (cache.HoldsEntry(GroupId{g}, keys[u]))
        held.push_back({.hash = keys[u], .group = GroupId{g}});
    }
  }
  auto mirror = std::make_unique<ResidencyMirror>(
      config, static_cast<std::uint32_t>(held.size()));
  for (const PrefixKey& key : held) mirror->Store(key);
  return mirror;
}

}  // namespace

TierReach::TierReach(const CacheConfig& config)
    : config_(config), geometry_(ResolveGeometry(config)) {}

TierHit TierReach::Lookup(const CacheManager& cache, const Request& request,
                          const KnownGroupOf& known) const {
  HKV_REQUIRE(request.key_scheme() == cache.key_scheme(),
              "the request is keyed with another scheme than the cache");
  TierHit out{.hit = cache.Lookup(request)};
  out.gpu_tokens = out.hit.num_tokens;
  // A request that must compute every position, or a cache that reads
  // nothing, takes nothing from the tiers either.
  if (request.cache_read() == CacheRead::kSkipped ||
      config_.caching == PrefixCaching::kDisabled)
    return out;
  const std::uint32_t unit = config_.keys.hash_unit;
  const std::uint32_t block = geometry_.facts.scheduler_block;
  const std::uint32_t max_length = MaxHitLength(config_, request);
  const std::uint32_t cut = out.gpu_tokens / block * block;
  const std::uint32_t max_units = std::min<std::uint32_t>(
      max_length / unit, static_cast<std::uint32_t>(request.keys().size()));
  const auto mirror =
      UnionMirror(config_, cache, request, known, cut / unit, max_units);
  if (!mirror) return out;
  const CacheHit reach = mirror->FindLongestHit(request.keys(), max_length);
  if (reach.num_tokens <= out.gpu_tokens) return out;
  out.hit = cache.TruncateHit(out.hit, cut);
  out.num_external_tokens = reach.num_tokens - cut;
  return out;
}

std::vector<NeededPart> TierReach::Needs(
    const CacheManager& cache, const Request& request, const TierHit& hit,
    std::span<const StateExport> exports) const {
  const std::uint32_t from = hit.hit.num_tokens;
  const std::uint32_t to = from + hit.num_external_tokens;
  std::vector<NeededPart> needs;
  if (hit.num_external_tokens == 0) return needs;
  for (std::uint32_t g = 0; g < config_.groups.size(); ++g) {
    const GroupSpec& spec = config_.groups[g];
    if (!IsPrefixCacheable(spec)) continue;
    const GroupId group{g};
    const std::uint32_t b = geometry_.groups[g].block_size;
    const std::span<const BlockId> table =
        cache.block_table(request.id(), group);
    const std::size_t last = (std::size_t{to} + b - 1) / b;  // slots < last
    HKV_REQUIRE(table.size() >= last,
                "the request's blocks cover the external tokens (Allocate "
                "with this hit first)");
    if (spec.kind == GroupKind::kRecurrent) {
      // Only the state at the end, in the block the step reads it from and
      // advances: the first one placed at or after the end's slot that is
      // not a checkpoint's export (the earlier slots are null; a GPU hit's
      // state would be copied there).
      const std::span<const BlockId> after = table.subspan(last - 1);
      const auto exported = [&](BlockId id) {
        return std::any_of(exports.begin(), exports.end(),
                           [&](const StateExport& e) {
                             return e.group == group && e.block == id;
                           });
      };
      const auto placed = std::find_if(
          after.begin(), after.end(),
          [&](BlockId id) { return id != kNullBlock && !exported(id); });
      if (placed != after.end())
        needs.push_back({.group = group, .block = *placed, .end_tokens = to});
      continue;
    }
    for (std::size_t i = from / b; i < last; ++i) {
      if (table[i] == kNullBlock) continue;
      needs.push_back(
          {.group = group,
           .block = table[i],
           .end_tokens = static_cast<std::uint32_t>(
               std::min<std::size_t>((i + 1) * std::size_t{b}, to))});
    }
  }
  return needs;
}

}  // namespace hkv::internal
