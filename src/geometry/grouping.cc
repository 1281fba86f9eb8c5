#include "geometry/grouping.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <utility>

#include "geometry/arith.h"
#include "hkv/geometry.h"
#include "text.h"

namespace hkv::internal {
namespace {

constexpr std::uint32_t kMaxSplitGroups = 8;

std::vector<std::uint32_t> BucketsOf(const std::vector<Bucket>& buckets,
                                     bool draft) {
  std::vector<std::uint32_t> which;
  for (std::uint32_t i = 0; i < buckets.size(); ++i) {
    if (buckets[i].draft == draft) which.push_back(i);
  }
  return which;
}

std::vector<std::uint32_t> LayerCounts(
    const std::vector<Bucket>& buckets,
    const std::vector<std::uint32_t>& which) {
  std::vector<std::uint32_t> counts;
  for (const std::uint32_t i : which) counts.push_back(buckets[i].layers);
  return counts;
}

// Bucket which[i] split round robin into counts[i] groups.
std::vector<GroupLayers> Split(const std::vector<Bucket>& buckets,
                               const std::vector<std::uint32_t>& which,
                               const std::vector<std::uint32_t>& counts) {
  std::vector<GroupLayers> groups;
  for (std::size_t i = 0; i < which.size(); ++i) {
    for (const std::uint32_t n :
         RoundRobinSizes(buckets[which[i]].layers, counts[i])) {
      groups.push_back({which[i], n});
    }
  }
  return groups;
}

std::vector<GroupLayers> UniformSplit(const std::vector<Bucket>& buckets,
                                      const std::vector<std::uint32_t>& which) {
  if (which.empty()) return {};
  return Split(buckets, which, UniformGroupCounts(LayerCounts(buckets, which)));
}

Grouping Measure(const ModelSpec& model, const std::vector<Bucket>& buckets,
                 std::vector<GroupLayers> groups) {
  Grouping g{.groups = std::move(groups)};
  for (const GroupLayers& group : g.groups) {
    const Bucket& b = buckets[group.bucket];
    g.stride = std::max(g.stride, SaturatingMul(group.layers, b.slot_page));
    g.blocks_per_request =
        SaturatingAdd(g.blocks_per_request, b.blocks_per_request);
  }
  if (model.layout == Layout::kSplit) {
    g.stride = RoundUp(g.stride, model.stride_alignment);
  }
  g.cost = SaturatingMul(g.stride, g.blocks_per_request);
  return g;
}

// Calls `visit` with every tuple c, 1 <= c[i] <= limits[i], sum <= budget.
void ForEachTuple(const std::vector<std::uint32_t>& limits,
                  std::uint32_t budget, std::vector<std::uint32_t>& tuple,
                  const std::function<void()>& visit) {
  const std::size_t i = tuple.size();
  if (i == limits.size()) {
    visit();
    return;
  }
  // Leave at least one group for each bucket after this one.
  const std::uint32_t rest = static_cast<std::uint32_t>(limits.size() - i - 1);
  for (std::uint32_t c = 1; c <= limits[i] && c + rest <= budget; ++c) {
    tuple.push_back(c);
    ForEachTuple(limits, budget - c, tuple, visit);
    tuple.pop_back();
  }
}

// Spec §5.5: the smallest (cost, groups) over every split of the target
// buckets into at most 8 groups; the baseline, evaluated first, wins ties.
Grouping Optimise(const ModelSpec& model, const std::vector<Bucket>& buckets,
                  const std::vector<std::uint32_t>& target,
                  const std::vector<GroupLayers>& draft_groups,
                  const Grouping& baseline) {
  std::optional<Grouping> best;
  const auto consider = [&](Grouping candidate) {
    const auto key = [](const Grouping& g) {
      return std::pair(g.cost, g.groups.size());
    };
    if (!best || key(candidate) < key(*best)) best = std::move(candidate);
  };
  if (baseline.groups.size() - draft_groups.size() <= kMaxSplitGroups) {
    consider(baseline);
  }
  std::vector<std::uint32_t> limits;
  for (const std::uint32_t i : target) {
    limits.push_back(std::min(buckets[i].layers, kMaxSplitGroups));
  }
  std::vector<std::uint32_t> tuple;
  ForEachTuple(limits, kMaxSplitGroups, tuple, [&] {
    std::vector<GroupLayers> groups = Split(buckets, target, tuple);
    groups.insert(groups.end(), draft_groups.begin(), draft_groups.end());
    consider(Measure(model, buckets, std::move(groups)));
  });
  return *best;
}

}  // namespace

Result<GroupingResult> GroupBuckets(const ModelSpec& model,
                                    const std::vector<Bucket>& buckets) {
  const std::vector<std::uint32_t> target = BucketsOf(buckets, false);
  const std::vector<GroupLayers> draft_groups =
      UniformSplit(buckets, BucketsOf(buckets, true));
  std::vector<GroupLayers> groups = UniformSplit(buckets, target);
  groups.insert(groups.end(), draft_groups.begin(), draft_groups.end());
  GroupingResult result;
  result.baseline = Measure(model, buckets, std::move(groups));
  if (model.layout == Layout::kCoupled) {
    result.chosen = result.baseline;
    return result;
  }
  if (target.size() > kMaxSplitGroups) {
    return Fail(
        ErrorCode::kInvalidArgument,
        Cat("the split layout takes at most ", kMaxSplitGroups,
            " layer buckets; model ", model.name, " has ", target.size()));
  }
  result.chosen =
      Optimise(model, buckets, target, draft_groups, result.baseline);
  return result;
}

}  // namespace hkv::internal
