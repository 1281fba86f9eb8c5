// The engine's offload tiers (tier_model.h): the lookup through them, a
// load's wait, the store at completion.
#include <algorithm>
#include <limits>

#include "check.h"
#include "engine/engine.h"

namespace hkv::internal {

TierHit Engine::LookupThroughTiers(const Request& request) const {
  const TierModel& tiers = *tiers_;
  return reach_->Lookup(cache_, request, [&tiers](const BlockHash& key) {
    return tiers.Find(key);
  });
}

// Reads the object groups the hit's external tokens need; the request waits
// for them (its prefill starts after the load; others run meanwhile).
bool Engine::StartLoad(std::size_t index, const TierHit& hit,
                       std::span<const StateExport> exports) {
  if (hit.num_external_tokens == 0) return false;
  Live& live = lives_[index];
  const Request& r = *live.request;
  const std::uint32_t unit = r.key_scheme().hash_unit;
  std::vector<BlockHash> keys;
  for (const NeededPart& part : reach_->Needs(cache_, r, hit, exports)) {
    HKV_DCHECK(part.end_tokens % unit == 0 && part.end_tokens > 0);
    const BlockHash& key = r.keys()[part.end_tokens / unit - 1];
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      keys.push_back(key);
  }
  const std::optional<double> seconds =
      tiers_->Load(keys, hit.num_external_tokens);
  HKV_DCHECK(seconds.has_value());  // the lookup found every group
  live.ready_s = now_ + seconds.value_or(0.0);
  live.loading = true;
  live.scheduled = 0;
  ++result_.tier_loads;
  result_.tier_load_s += seconds.value_or(0.0);
  return true;
}

bool Engine::Loading(std::size_t index) {
  Live& live = lives_[index];
  if (!live.loading) return false;
  if (live.ready_s > now_) {
    live.scheduled = 0;
    return true;
  }
  live.loading = false;
  return false;
}

void Engine::StoreToTiers(std::size_t index) {
  const Request& r = *lives_[index].request;
  tiers_->Store(r, cache_.CachedEntries(r));
}

// Nothing to compute: the clock moves to the first load's end, or to an
// arrival before it.
bool Engine::WaitForLoads() {
  double next = std::numeric_limits<double>::infinity();
  for (std::size_t index : running_) {
    const Live& live = lives_[index];
    if (live.loading && live.ready_s > now_)
      next = std::min(next, live.ready_s);
  }
  if (next == std::numeric_limits<double>::infinity()) return false;
  const std::optional<double> arrival = arrivals_.NextArrival();
  if (arrival && *arrival > now_) next = std::min(next, *arrival);
  now_ = next;
  return true;
}

}  // namespace hkv::internal
