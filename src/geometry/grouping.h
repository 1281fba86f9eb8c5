// Grouping layer buckets into KV-cache groups (spec §5.3 step 9, §5.5) and
// the shared pool's stride.
#pragma once

#include <cstdint>
#include <vector>

#include "geometry/buckets.h"
#include "hkv/model.h"
#include "hkv/result.h"

namespace hkv::internal {

struct GroupLayers {
  std::uint32_t bucket = 0;  // index into the buckets
  std::uint32_t layers = 0;
};

struct Grouping {
  std::vector<GroupLayers> groups;
  std::uint64_t stride = 0;  // bytes per block id
  std::uint64_t blocks_per_request = 0;
  std::uint64_t cost = 0;  // stride x blocks_per_request
};

struct GroupingResult {
  Grouping chosen;
  Grouping baseline;  // the uniform-page grouping
};

// Target buckets grouped by the uniform-page rule (coupled layout) or the
// weighted shared-pool optimiser (split layout: at most 8 groups, smallest
// (cost, number of groups), the baseline first), then the draft's buckets by
// the uniform-page rule, appended. Returns kInvalidArgument for more than 8
// target buckets in the split layout.
[[nodiscard]] Result<GroupingResult> GroupBuckets(
    const ModelSpec& model, const std::vector<Bucket>& buckets);

}  // namespace hkv::internal
