// Geometry search for `hkv plan --search`.
#include <algorithm>
#include <tuple>

#include "hkv/planner.h"
#include "text.h"

namespace hkv {
namespace {

constexpr std::uint32_t kMinBlock = 16;
constexpr std::uint32_t kMaxBlock = 8192;

// Better first: more tokens (whole requests, then the fraction the
// reference logs), finer hits, coarser keys, smaller blocks.
bool Better(const Plan& a, const Plan& b) {
  const auto key = [](const Plan& p) {
    return std::tuple(-static_cast<double>(p.shared.tokens),
                      -static_cast<double>(p.reference_tokens), p.hit_unit,
                      -static_cast<double>(p.geometry.hash_unit),
                      p.geometry.target_block, p.geometry.recurrent_block);
  };
  return key(a) < key(b);
}

}  // namespace

Result<std::vector<Plan>> SearchGeometries(const ModelSpec& model,
                                           const PlanOptions& options,
                                           std::uint32_t max_hit_unit) {
  std::vector<Plan> plans;
  for (std::uint32_t t = kMinBlock; t <= kMaxBlock; t *= 2) {
    for (std::uint32_t r = kMinBlock; r <= kMaxBlock; r *= 2) {
      if (model.layout == Layout::kCoupled && r != t) continue;
      for (std::uint32_t u = kMinBlock; u <= kMaxBlock; u *= 2) {
        Result<Plan> plan = PlanCapacity(model, {t, r, u}, options);
        if (plan && plan->hit_unit <= max_hit_unit) {
          plans.push_back(std::move(*plan));
        }
      }
    }
  }
  if (plans.empty()) {
    return Fail(
        ErrorCode::kInfeasible,
        internal::Cat("no geometry with blocks of ", kMinBlock, "..", kMaxBlock,
                      " tokens fits the budget with a hit "
                      "unit of at most ",
                      max_hit_unit, " tokens"));
  }
  std::sort(plans.begin(), plans.end(), Better);
  return plans;
}

}  // namespace hkv
