#include <algorithm>

#include "check.h"
#include "geometry/arith.h"
#include "hkv/geometry.h"
#include "hkv/group_spec.h"
#include "text.h"

namespace hkv {
namespace {

using internal::Cat;
using internal::CeilDiv;
using internal::SaturatingAdd;
using internal::SaturatingMul;

std::string Shape(const StateTensor& tensor) {
  std::string text = "[";
  for (std::size_t d = 0; d < tensor.shape.size(); ++d) {
    text += Cat(d > 0 ? ", " : "", tensor.shape[d]);
  }
  return text + "]";
}

tl::unexpected<Error> TooLarge(const StateTensor& tensor) {
  return Fail(ErrorCode::kInvalidArgument,
              Cat("a state tensor of shape ", Shape(tensor), " x ",
                  tensor.dtype_bytes, " B exceeds 2^64 - 1 B"));
}

Result<std::uint64_t> TensorBytes(const StateTensor& tensor, std::uint32_t tp,
                                  std::uint32_t speculative_tokens) {
  if (tensor.shape.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "a state tensor has no shape");
  }
  if (tensor.tp_dim && *tensor.tp_dim >= tensor.shape.size()) {
    return Fail(ErrorCode::kInvalidArgument,
                Cat("tp_dim ", *tensor.tp_dim, " is not a dimension of a ",
                    tensor.shape.size(), "-dimensional state tensor"));
  }
  std::uint64_t bytes = tensor.dtype_bytes;
  for (std::size_t d = 0; d < tensor.shape.size(); ++d) {
    std::optional<std::uint64_t> rows = tensor.shape[d];
    if (d == 0 && tensor.speculative_rows) {
      rows = internal::CheckedAdd(*rows, speculative_tokens);
    }
    if (!rows) return TooLarge(tensor);
    std::uint64_t extent = *rows;
    if (tensor.tp_dim && *tensor.tp_dim == d) {
      if (extent % tp != 0) {
        return Fail(ErrorCode::kInvalidArgument,
                    Cat("TP ", tp, " does not divide state dimension ", d,
                        " of extent ", extent));
      }
      extent /= tp;
    }
    const std::optional<std::uint64_t> product =
        internal::CheckedMul(bytes, extent);
    if (!product) return TooLarge(tensor);
    bytes = *product;
  }
  return bytes;
}

}  // namespace

std::uint64_t RoundUp(std::uint64_t x, std::uint64_t multiple) {
  if (multiple == 0) return x;
  return SaturatingMul(CeilDiv(x, multiple), multiple);
}

std::uint64_t AttentionBytesPerToken(std::uint32_t heads,
                                     std::uint32_t head_size,
                                     std::uint32_t head_size_v,
                                     std::uint32_t dtype_bytes) {
  return SaturatingMul(
      SaturatingMul(heads, std::uint64_t{head_size} + head_size_v),
      dtype_bytes);
}

Result<std::uint32_t> KvHeadsPerRank(std::uint32_t heads, std::uint32_t tp) {
  if (heads >= tp && heads % tp == 0) return heads / tp;
  if (heads < tp && tp % heads == 0) return 1u;
  return Fail(
      ErrorCode::kInvalidArgument,
      Cat("TP ", tp, " and ", heads, " KV heads: neither divides the other"));
}

std::uint64_t MlaPageBytes(const MlaPage& page) {
  return SaturatingAdd(
      RoundUp(SaturatingMul(page.block, page.record_bytes_per_token),
              page.record_alignment),
      SaturatingMul(page.block, page.tail_bytes_per_token));
}

Result<std::uint64_t> StateBytes(const std::vector<StateTensor>& tensors,
                                 std::uint32_t tp,
                                 std::uint32_t speculative_tokens) {
  std::uint64_t total = 0;
  for (const StateTensor& tensor : tensors) {
    Result<std::uint64_t> bytes = TensorBytes(tensor, tp, speculative_tokens);
    if (!bytes) return bytes;
    const std::optional<std::uint64_t> sum =
        internal::CheckedAdd(total, *bytes);
    if (!sum) {
      return Fail(ErrorCode::kInvalidArgument,
                  "a recurrent state's tensors exceed 2^64 - 1 B together");
    }
    total = *sum;
  }
  return total;
}

std::uint64_t CoupledAttentionBlock(const CoupledBlockInput& input) {
  const std::uint64_t align = std::max(input.kernel_block, input.block);
  const std::uint64_t per_align =
      SaturatingMul(align, input.attention_bytes_per_token);
  if (per_align == 0) return align;  // no attention bytes to grow
  const std::uint64_t multiples =
      std::max<std::uint64_t>(1, CeilDiv(input.state_bytes, per_align));
  return SaturatingMul(align, multiples);
}

Result<std::uint32_t> AutoBlock(const AutoBlockInput& input) {
  std::uint32_t tokens =
      input.max_num_scheduled_tokens.value_or(input.max_num_batched_tokens);
  const char* what = input.max_num_scheduled_tokens ? "max_num_scheduled_tokens"
                                                    : "max_num_batched_tokens";
  if (input.retention_interval.value_or(0) > 0) {
    tokens = *input.retention_interval;
    what = "retention interval";
  }
  if (input.dcp == 0 || tokens % input.dcp != 0 || tokens < input.dcp) {
    return Fail(ErrorCode::kInvalidArgument,
                Cat("automatic geometry: ", what, " ", tokens,
                    " is not a positive multiple of dcp ", input.dcp));
  }
  return tokens / input.dcp;
}

std::uint64_t BlocksPerRequest(const RequestBlocksInput& in) {
  // The cache manager's own bound (spec §9 item 13: sizing and admission
  // must not drift apart); the draft's tokens ride with the in-flight ones.
  HKV_REQUIRE(in.block > 0, "BlocksPerRequest: block must be at least 1 token");
  GroupSpec group{.block_size = in.block};
  switch (in.kind) {
    case LayerKind::kFullAttention:
    case LayerKind::kMla:
      break;
    case LayerKind::kSlidingWindow:
      group.kind = GroupKind::kSlidingWindow;
      group.sliding_window = in.window_or_chunk;
      break;
    case LayerKind::kChunkedLocal:
      group.kind = GroupKind::kChunkedLocal;
      group.chunk_size = in.window_or_chunk;
      break;
    case LayerKind::kRecurrent:
      group.kind = GroupKind::kRecurrent;
      group.speculative_blocks = in.speculative_tokens;
      group.checkpoint_blocks = in.checkpoint_blocks;
      break;
  }
  const bool window = in.kind == LayerKind::kSlidingWindow;
  return MaxBlocksPerRequest(
      group, {.max_model_len = in.context_tokens,
              .max_in_flight_tokens = std::uint64_t{in.max_batched_tokens} +
                                      (window ? in.speculative_tokens : 0),
              .dcp = in.dcp});
}

std::vector<std::uint32_t> RoundRobinSizes(std::uint32_t layers,
                                           std::uint32_t groups) {
  HKV_REQUIRE(groups > 0 && groups <= layers, "groups must be in [1, layers]");
  std::vector<std::uint32_t> sizes(groups, layers / groups);
  for (std::uint32_t g = 0; g < layers % groups; ++g) ++sizes[g];
  return sizes;
}

std::vector<std::uint32_t> UniformGroupCounts(
    const std::vector<std::uint32_t>& bucket_layers) {
  HKV_REQUIRE(!bucket_layers.empty(), "no buckets");
  const auto [min_it, max_it] =
      std::minmax_element(bucket_layers.begin(), bucket_layers.end());
  HKV_REQUIRE(*min_it > 0, "empty bucket");
  // max < 1.5 x min, in integers.
  const std::uint32_t size =
      2 * std::uint64_t{*max_it} < 3 * std::uint64_t{*min_it} ? *max_it
                                                              : *min_it;
  std::vector<std::uint32_t> counts;
  counts.reserve(bucket_layers.size());
  for (const std::uint32_t layers : bucket_layers) {
    counts.push_back(static_cast<std::uint32_t>(CeilDiv(layers, size)));
  }
  return counts;
}

}  // namespace hkv
