// The public facts of one group's spec (hkv/group_spec.h), from its kind's
// traits.
#include "hkv/group_spec.h"

#include <algorithm>

#include "check.h"
#include "groups/kind_traits.h"

namespace hkv {

bool IsPrefixCacheable(const GroupSpec& group) {
  const internal::KindTraits& kind = internal::TraitsOf(group.kind);
  if (!kind.covers_positions) return false;
  return !(kind.keeps_states && group.recurrent_mode == RecurrentMode::kNone);
}

std::uint64_t TokensPerBlock(const GroupSpec& group, std::uint32_t dcp) {
  // Recurrent states are whole on every rank.
  const bool sharded = group.dcp_layout == DcpLayout::kSharded &&
                       !internal::TraitsOf(group.kind).keeps_states;
  return std::uint64_t{group.block_size} * (sharded ? dcp : 1);
}

std::uint64_t MaxBlocksPerRequest(const GroupSpec& group,
                                  const RequestBounds& bounds) {
  const std::uint64_t b = TokensPerBlock(group, bounds.dcp);
  HKV_REQUIRE(b > 0,
              "MaxBlocksPerRequest: a group's block must hold at "
              "least one token");
  // In-flight tokens count at most the length, so the kinds' sums of
  // capped counts cannot wrap.
  const internal::RequestReach reach{
      .block = b,
      .length = bounds.max_model_len,
      .in_flight = std::min(bounds.max_in_flight_tokens, bounds.max_model_len)};
  return internal::TraitsOf(group.kind).max_blocks(group, reach);
}

}  // namespace hkv
