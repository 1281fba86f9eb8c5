#include "engine/tier_model.h"

#include <algorithm>
#include <string>
#include <utility>

#include "check.h"
#include "hkv/planner.h"

namespace hkv {

std::string_view TierName(TierKind kind) {
  switch (kind) {
    case TierKind::kHost:
      return "host";
    case TierKind::kDisk:
      return "disk";
    case TierKind::kRemote:
      return "redis";
  }
  return "?";
}

// Typical published figures, not fitted to a measured deployment:
//   host: PCIe 5.0 x16 is 64 GB/s per direction raw; pinned host-to-device
//     copies reach about 50 GB/s; a copy launch about 10 us.
//   disk: an NVMe PCIe 4.0 x4 drive reads about 6.5-7 GB/s sequentially
//     (vendor data sheets); about 100 us to the first bytes.
//   redis: 100 GbE is 12.5 GB/s on the wire, about 10 GB/s of payload; a
//     batched round trip about 200 us.
TierLink TierLinkOf(TierKind kind) {
  switch (kind) {
    case TierKind::kHost:
      return {.bytes_per_s = 50e9, .latency_s = 10e-6};
    case TierKind::kDisk:
      return {.bytes_per_s = 6.5e9, .latency_s = 100e-6};
    case TierKind::kRemote:
      return {.bytes_per_s = 10e9, .latency_s = 200e-6};
  }
  return {};
}

namespace {

Result<TierSpec> ParseTier(std::string_view item) {
  const std::string text(item);
  const auto invalid = [&text](const std::string& why) {
    return Fail(ErrorCode::kInvalidArgument, "tier \"" + text + "\": " + why);
  };
  if (item.starts_with("redis://")) {
    return invalid(
        "the simulator models tiers by capacity, not servers: give "
        "redis:SIZE (e.g. redis:512GiB)");
  }
  const std::size_t colon = item.find(':');
  if (colon == std::string_view::npos) {
    return invalid("want KIND:SIZE (host:64GiB, disk:1TiB, redis:512GiB)");
  }
  const std::string_view kind = item.substr(0, colon);
  TierSpec spec;
  if (kind == "host") {
    spec.kind = TierKind::kHost;
  } else if (kind == "disk" || kind == "file") {
    spec.kind = TierKind::kDisk;
  } else if (kind == "redis") {
    spec.kind = TierKind::kRemote;
  } else {
    return invalid("unknown kind \"" + std::string(kind) +
                   "\" (host, disk or file, redis)");
  }
  Result<std::uint64_t> bytes = ParseByteSize(item.substr(colon + 1));
  if (!bytes || *bytes == 0) {
    return invalid(
        "the simulator models tiers by capacity: give a size such as " +
        std::string(kind) + ":64GiB" +
        (kind == "file" ? " (file:DIR names a real tier)" : ""));
  }
  spec.capacity_bytes = *bytes;
  return spec;
}

}  // namespace

Result<std::vector<TierSpec>> ParseTierChain(std::string_view text) {
  std::vector<TierSpec> chain;
  if (text.empty() || text == "none") return chain;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('+', start);
    if (end == std::string_view::npos) end = text.size();
    Result<TierSpec> spec = ParseTier(text.substr(start, end - start));
    if (!spec) return tl::unexpected(spec.error());
    chain.push_back(*spec);
    start = end + 1;
  }
  return chain;
}

namespace internal {

const KnownGroup* TierStoreModel::Find(const BlockHash& key) const {
  const auto it = held_.find(key);
  return it == held_.end() ? nullptr : &it->second.group;
}

void TierStoreModel::Erase(const BlockHash& key) {
  const auto it = held_.find(key);
  used_ -= it->second.group.bytes;
  lru_.erase(it->second.tick);
  held_.erase(it);
}

bool TierStoreModel::Put(const BlockHash& key, const KnownGroup& group) {
  if (group.bytes > spec_.capacity_bytes) return false;
  if (held_.count(key) != 0) Erase(key);
  while (used_ + group.bytes > spec_.capacity_bytes) {
    Erase(lru_.begin()->second);
    ++evicted_;
  }
  held_[key] = {.group = group, .tick = ++tick_};
  lru_[tick_] = key;
  used_ += group.bytes;
  return true;
}

void TierStoreModel::Touch(const BlockHash& key) {
  Held& held = held_.at(key);
  lru_.erase(held.tick);
  held.tick = ++tick_;
  lru_[tick_] = key;
}

void TierStoreModel::CheckInvariants() const {
  std::uint64_t bytes = 0;
  for (const auto& [key, held] : held_) {
    bytes += held.group.bytes;
    const auto it = lru_.find(held.tick);
    HKV_DCHECK(it != lru_.end() && it->second == key);
  }
  HKV_DCHECK(bytes == used_ && used_ <= spec_.capacity_bytes);
  HKV_DCHECK(lru_.size() == held_.size());
}

TierModel::TierModel(std::span<const TierSpec> specs,
                     std::vector<std::uint64_t> page_bytes,
                     std::span<TierStoreModel* const> shared)
    : page_bytes_(std::move(page_bytes)) {
  for (std::size_t i = 0; i < specs.size(); ++i) {
    TierStoreModel* tier = i < shared.size() ? shared[i] : nullptr;
    if (tier == nullptr) {
      owned_.push_back(std::make_unique<TierStoreModel>(specs[i]));
      tier = owned_.back().get();
    }
    tiers_.push_back(tier);
    figures_.push_back({.name = std::string(TierName(specs[i].kind)),
                        .capacity_bytes = specs[i].capacity_bytes});
  }
}

const KnownGroup* TierModel::Find(const BlockHash& key) const {
  for (const TierStoreModel* tier : tiers_) {
    if (const KnownGroup* known = tier->Find(key)) return known;
  }
  return nullptr;
}

void TierModel::Store(const Request& request,
                      std::span<const CachedEntry> entries) {
  std::map<std::uint32_t, KnownGroup> by_end;
  for (const CachedEntry& e : entries) {
    KnownGroup& group = by_end[e.end_tokens];
    group.end_tokens = e.end_tokens;
    if (std::find(group.groups.begin(), group.groups.end(), e.group) ==
        group.groups.end()) {
      group.groups.push_back(e.group);
    }
    const std::size_t g = ToIndex(e.group);
    group.bytes += g < page_bytes_.size() ? page_bytes_[g] : 0;
  }
  const std::uint32_t unit = request.key_scheme().hash_unit;
  const std::span<const BlockHash> keys = request.keys();
  for (const auto& [end, group] : by_end) {
    if (end == 0 || end % unit != 0 || end / unit > keys.size()) continue;
    const BlockHash& key = keys[end / unit - 1];
    for (std::size_t t = 0; t < tiers_.size(); ++t) {
      const KnownGroup* held = tiers_[t]->Find(key);
      if (held != nullptr && held->groups.size() >= group.groups.size())
        continue;
      if (!tiers_[t]->Put(key, group)) continue;
      ++figures_[t].stored_groups;
      figures_[t].stored_bytes += group.bytes;
    }
  }
}

std::optional<double> TierModel::Load(std::span<const BlockHash> keys,
                                      std::uint32_t external_tokens) {
  // Where each group is read from, and a copy of it, found before any
  // copy-up moves things (a copy into a tier may evict another read).
  std::vector<std::size_t> from;
  std::vector<KnownGroup> groups;
  for (const BlockHash& key : keys) {
    std::size_t t = 0;
    while (t < tiers_.size() && tiers_[t]->Find(key) == nullptr) ++t;
    if (t == tiers_.size()) return std::nullopt;
    from.push_back(t);
    groups.push_back(*tiers_[t]->Find(key));
  }
  std::vector<std::uint64_t> bytes(tiers_.size(), 0);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (tiers_[from[i]]->Find(keys[i]) != nullptr)
      tiers_[from[i]]->Touch(keys[i]);
    for (std::size_t up = 0; up < from[i]; ++up)
      tiers_[up]->Put(keys[i], groups[i]);
    bytes[from[i]] += groups[i].bytes;
    ++figures_[from[i]].load_groups;
  }
  double seconds = 0.0;
  for (std::size_t t = 0; t < tiers_.size(); ++t) {
    if (std::find(from.begin(), from.end(), t) == from.end()) continue;
    const TierLink link = TierLinkOf(tiers_[t]->spec().kind);
    const double s =
        link.latency_s + static_cast<double>(bytes[t]) / link.bytes_per_s;
    seconds += s;
    ++figures_[t].loads;
    figures_[t].load_bytes += bytes[t];
    figures_[t].load_s += s;
  }
  if (!from.empty()) {
    figures_[*std::max_element(from.begin(), from.end())].hit_tokens +=
        external_tokens;
  }
  return seconds;
}

std::vector<TierFigures> TierModel::Figures() const {
  std::vector<TierFigures> out = figures_;
  for (std::size_t t = 0; t < tiers_.size(); ++t)
    out[t].evicted_groups = tiers_[t]->evicted_groups();
  return out;
}

}  // namespace internal
}  // namespace hkv
