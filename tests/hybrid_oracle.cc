#include "hybrid_oracle.h"

#include <algorithm>

namespace hkv::testing {

HybridOracle::HybridOracle(const CacheConfig& config,
                           const internal::BlockPool& pool)
    : config_(config), geometry_(internal::ResolveGeometry(config)) {
  for (std::uint32_t i = 1; i < pool.num_blocks(); ++i) {
    for (const internal::PrefixKey& key : pool.KeysOf(BlockId{i})) {
      entries_.insert(key);
    }
  }
}

bool HybridOracle::Cached(const Probe& probe, GroupId group,
                          std::uint32_t q) const {
  const std::uint32_t unit = config_.keys.hash_unit;
  if (q == 0 || q % unit != 0 || q > probe.held) return false;
  return entries_.contains({.hash = probe.keys[q / unit - 1], .group = group});
}

bool HybridOracle::CachedIn(const Probe& probe, GroupId group,
                            std::uint32_t from, std::uint32_t to) const {
  const std::uint32_t unit = config_.keys.hash_unit;
  for (std::uint32_t q = (from + unit - 1) / unit * unit; q <= to; q += unit) {
    if (Cached(probe, group, q)) return true;
  }
  return false;
}

bool HybridOracle::FullAttention(const Probe& probe, std::size_t g,
                                 std::uint32_t p) const {
  const GroupId id{static_cast<std::uint32_t>(g)};
  const std::uint32_t b = geometry_.groups[g].block_size;
  for (std::uint32_t end = b; end <= p; end += b) {
    if (!Cached(probe, id, end)) return false;
  }
  if (p % b == 0) return true;
  // Inside a page: an entry at p or later in the same page.
  return CachedIn(probe, id, p, std::min(p / b * b + b, probe.held));
}

bool HybridOracle::Window(const Probe& probe, std::size_t g, std::uint32_t p,
                          std::uint32_t window) const {
  const GroupId id{static_cast<std::uint32_t>(g)};
  const std::uint32_t b = geometry_.groups[g].block_size;
  const bool fine = geometry_.facts.alignment < b;
  const std::uint32_t tail = (p - 1) / b;
  const bool covered =
      fine ? CachedIn(probe, id, p, std::min((tail + 1) * b, probe.held))
           : p % b == 0 && Cached(probe, id, p);
  if (!covered) return false;
  const std::uint32_t first = p > window - 1 ? (p - (window - 1)) / b : 0;
  for (std::uint32_t j = first; j < tail; ++j) {
    if (!Cached(probe, id, (j + 1) * b)) return false;
  }
  return true;
}

bool HybridOracle::Resumable(const Probe& probe, std::size_t g, std::uint32_t p,
                             std::uint32_t extra_window) const {
  if (p == 0) return true;
  const GroupSpec& spec = config_.groups[g];
  const std::uint32_t b = geometry_.groups[g].block_size;
  const GroupId id{static_cast<std::uint32_t>(g)};
  switch (spec.kind) {
    case GroupKind::kFullAttention:
      return FullAttention(probe, g, p);
    case GroupKind::kSlidingWindow:
      return Window(probe, g, p, spec.sliding_window + extra_window);
    case GroupKind::kChunkedLocal: {
      if (p % b != 0) return false;
      for (std::uint32_t j = p / spec.chunk_size * spec.chunk_size / b;
           j < p / b; ++j) {
        if (!Cached(probe, id, (j + 1) * b)) return false;
      }
      return true;
    }
    case GroupKind::kRecurrent:
      return (geometry_.facts.alignment < b || p % b == 0) &&
             Cached(probe, id, p);
    case GroupKind::kScratch:
      break;  // caches nothing: left out by Hit
  }
  return false;
}

std::uint32_t HybridOracle::Hit(const Request& request) const {
  // Nothing cached anywhere: no prefix cache at all.
  const bool any_cacheable =
      std::any_of(config_.groups.begin(), config_.groups.end(),
                  [](const GroupSpec& g) { return IsPrefixCacheable(g); });
  if (request.num_tokens() == 0 || !any_cacheable) return 0;
  const std::uint32_t unit = config_.keys.hash_unit;
  const Probe probe{
      .keys = request.keys(),
      .held = static_cast<std::uint32_t>(request.keys().size()) * unit};
  const std::uint32_t max_length = request.num_tokens() - 1;
  const std::uint32_t a = geometry_.facts.alignment;
  const bool unitary = config_.groups.size() == 1;
  for (std::uint32_t p = max_length / a * a;; p -= a) {
    bool everywhere = true;
    for (std::size_t g = 0; g < config_.groups.size() && everywhere; ++g) {
      const GroupSpec& spec = config_.groups[g];
      if (!IsPrefixCacheable(spec)) continue;  // caches nothing, limits nothing
      const bool rewinds =
          geometry_.groups[g].rewind == internal::DraftRewind::kEagle &&
          (spec.kind == GroupKind::kFullAttention ||
           spec.kind == GroupKind::kSlidingWindow);
      if (!rewinds) {
        everywhere = Resumable(probe, g, p, 0);
        continue;
      }
      const std::uint32_t b = geometry_.groups[g].block_size;
      const std::uint32_t r = geometry_.facts.alignment < b ? unit : b;
      // The rewound position must be proven within what the lookup may see.
      const std::uint32_t bound = unitary ? max_length : probe.held;
      everywhere = p + r <= bound && Resumable(probe, g, p + r, r);
      if (p == 0) everywhere = true;
    }
    if (everywhere) return p;
    if (p == 0) return 0;
  }
}

}  // namespace hkv::testing
