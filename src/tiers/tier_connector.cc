#include "hkv/tier_connector.h"

#include <algorithm>
#include <map>
#include <optional>
#include <span>
#include <string>

#include "tiers/tier_reach.h"

namespace hkv {
namespace {

// Whether the chain's group holds a part for every entry.
bool Covers(const KnownGroup* known, const std::vector<CachedEntry>& entries) {
  if (known == nullptr) return false;
  return std::all_of(entries.begin(), entries.end(), [&](const CachedEntry& e) {
    return std::find(known->groups.begin(), known->groups.end(), e.group) !=
           known->groups.end();
  });
}

}  // namespace

struct TierConnector::Impl {
  internal::TierReach reach;
  TierChain* chain;
  TierConnectorOptions options;
  ConnectorCounters counters = {};

  // Whether `part` has the bytes its group's blocks hold.
  bool SizeFits(const ObjectPart& part) const {
    const std::size_t g = ToIndex(part.group);
    return options.part_bytes.empty() || options.part_bytes[g] == 0 ||
           options.part_bytes[g] == part.bytes.size();
  }

  // Each needed part from `groups` (by boundary), or none when one is
  // missing or of the wrong size (its group is dropped).
  std::optional<std::vector<PartLoad>> Place(
      std::span<const internal::NeededPart> needs,
      const std::map<std::uint32_t, const ObjectGroup*>& groups) {
    std::vector<PartLoad> parts;
    for (const internal::NeededPart& need : needs) {
      auto it = groups.find(need.end_tokens);
      const ObjectPart* part = nullptr;
      if (it != groups.end()) {
        for (const ObjectPart& p : it->second->parts)
          if (p.group == need.group) part = &p;
      }
      if (part == nullptr) return std::nullopt;
      if (!SizeFits(*part)) {
        ++counters.wrong_size_parts;
        chain->Drop(it->second->key);
        return std::nullopt;
      }
      parts.push_back({.group = need.group,
                       .block = need.block,
                       .end_tokens = need.end_tokens,
                       .bytes = part->bytes});
    }
    return parts;
  }

  const KnownGroup* Find(const BlockHash& key) const {
    return chain->Find(key);
  }
};

Result<TierConnector> TierConnector::Create(const CacheConfig& config,
                                            TierChain& chain,
                                            TierConnectorOptions options) {
  if (Result<void> valid = config.Validate(); !valid)
    return tl::unexpected(valid.error());
  if (!options.part_bytes.empty() &&
      options.part_bytes.size() != config.groups.size()) {
    return Fail(ErrorCode::kInvalidArgument,
                "part_bytes has " + std::to_string(options.part_bytes.size()) +
                    " entries for " + std::to_string(config.groups.size()) +
                    " cache groups");
  }
  auto impl = std::make_unique<Impl>(Impl{.reach = internal::TierReach(config),
                                          .chain = &chain,
                                          .options = std::move(options)});
  return TierConnector(std::move(impl));
}

TierConnector::TierConnector(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
TierConnector::TierConnector(TierConnector&&) noexcept = default;
TierConnector& TierConnector::operator=(TierConnector&&) noexcept = default;
TierConnector::~TierConnector() = default;

TierHit TierConnector::Lookup(const CacheManager& cache,
                              const Request& request) {
  ++impl_->counters.lookups;
  const TierHit out = impl_->reach.Lookup(
      cache, request,
      [this](const BlockHash& key) { return impl_->Find(key); });
  if (out.num_external_tokens > 0) {
    ++impl_->counters.extended_lookups;
    impl_->counters.external_tokens += out.num_external_tokens;
  }
  return out;
}

TierLoad TierConnector::Load(const CacheManager& cache, const Request& request,
                             const TierHit& hit, const NewBlocks& placed) {
  TierLoad out;
  const std::vector<internal::NeededPart> needs =
      impl_->reach.Needs(cache, request, hit, placed.state_exports);
  std::vector<std::uint32_t> ends;
  for (const internal::NeededPart& need : needs)
    ends.push_back(need.end_tokens);
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  const std::uint32_t unit = impl_->reach.config().keys.hash_unit;
  std::vector<BlockHash> keys;
  for (std::uint32_t end : ends) keys.push_back(request.keys()[end / unit - 1]);
  const std::vector<std::optional<ObjectGroup>> groups =
      impl_->chain->Load(keys);
  std::map<std::uint32_t, const ObjectGroup*> by_end;
  for (std::size_t i = 0; i < ends.size(); ++i) {
    if (!groups[i] || groups[i]->end_tokens != ends[i]) continue;
    by_end[ends[i]] = &*groups[i];
    for (const ObjectPart& part : groups[i]->parts)
      out.bytes_read += part.bytes.size();
  }
  std::optional<std::vector<PartLoad>> parts = impl_->Place(needs, by_end);
  if (!parts) {
    ++impl_->counters.loads_failed;
    out.state = LoadState::kFailed;
    return out;
  }
  if (!needs.empty()) ++impl_->counters.loads_done;
  out.parts = std::move(*parts);
  out.state = LoadState::kDone;
  return out;
}

std::size_t TierConnector::Store(const CacheManager& cache,
                                 const Request& request,
                                 const BlockReader& read) {
  // Written in batches, so that a long prompt's states are not all held at
  // once.
  constexpr std::uint64_t kBatchBytes = std::uint64_t{64} << 20;
  const std::uint32_t unit = impl_->reach.config().keys.hash_unit;
  // CachedEntries lists by group: each boundary's entries come in group
  // order, one per group.
  std::map<std::uint32_t, std::vector<CachedEntry>> by_end;
  for (const CachedEntry& entry : cache.CachedEntries(request))
    by_end[entry.end_tokens].push_back(entry);
  std::vector<ObjectGroup> batch;
  std::uint64_t batch_bytes = 0;
  std::size_t stored = 0;
  for (const auto& [end, entries] : by_end) {
    const BlockHash& key = request.keys()[end / unit - 1];
    if (Covers(impl_->chain->Find(key), entries)) continue;
    ObjectGroup group{.key = key, .end_tokens = end};
    for (const CachedEntry& entry : entries) {
      group.parts.push_back(
          {.group = entry.group, .bytes = read(entry.group, entry.block)});
      batch_bytes += group.parts.back().bytes.size();
    }
    batch.push_back(std::move(group));
    if (batch_bytes >= kBatchBytes) {
      stored += impl_->chain->Store(batch);
      batch.clear();
      batch_bytes = 0;
    }
  }
  stored += impl_->chain->Store(batch);
  impl_->counters.groups_stored += stored;
  return stored;
}

ConnectorCounters TierConnector::counters() const { return impl_->counters; }

}  // namespace hkv
