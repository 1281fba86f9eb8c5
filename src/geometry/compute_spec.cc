// ComputeSpec's checks (hkv/model.h).
#include <string>
#include <string_view>

#include "hkv/model.h"

namespace hkv {

Result<void> ComputeSpec::Validate() const {
  const auto bad = [](std::string_view problem) {
    return Fail(ErrorCode::kInvalidArgument, std::string(problem));
  };
  if (active_params <= 0.0 || total_params < active_params) {
    return bad("active_params must be positive and at most total_params");
  }
  if (routed_params > total_params) {
    return bad("routed_params must be at most total_params");
  }
  if ((routed_params > 0.0) != (experts > 0) || experts_per_token > experts ||
      (experts > 0) != (experts_per_token > 0)) {
    return bad(
        "a mixture of experts needs routed_params, experts and "
        "experts_per_token (at most experts); a dense model none of them");
  }
  if (hidden == 0 || attention_flops_per_pair <= 0.0) {
    return bad("hidden and attention_flops_per_pair must be positive");
  }
  if (!(routed_bits > 0.0 && routed_bits <= 32.0 && other_bits > 0.0 &&
        other_bits <= 32.0)) {
    return bad("routed_bits and other_bits must be in (0, 32]");
  }
  return {};
}

}  // namespace hkv
