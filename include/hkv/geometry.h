// The reference system's page and geometry formulas (spec §5), as pure
// functions: page sizes, the coupled hybrid alignment rule, the automatic
// split geometry, blocks per request, and the grouping of layer buckets.
// The planner (hkv/planner.h) composes them.
//
// Thread-safety: pure functions.
//
// Example:
//   std::uint64_t page = MlaPageBytes({.block = 2048,
//                                      .record_bytes_per_token = 528,
//                                      .tail_bytes_per_token = 33});
//   // 1,148,928
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "hkv/model.h"
#include "hkv/result.h"

namespace hkv {

// x rounded up to a multiple of `multiple` (0: x itself); 2^64 - 1 when
// that does not fit.
std::uint64_t RoundUp(std::uint64_t x, std::uint64_t multiple);

// Bytes per token of a full/sliding/chunked attention layer on one rank:
// heads x (head_size + head_size_v) x dtype_bytes, 2^64 - 1 when that does
// not fit.
std::uint64_t AttentionBytesPerToken(std::uint32_t heads,
                                     std::uint32_t head_size,
                                     std::uint32_t head_size_v,
                                     std::uint32_t dtype_bytes);

// KV heads on one of `tp` ranks: heads / tp, or one replica when there are
// fewer heads than ranks. Returns kInvalidArgument when neither divides the
// other.
[[nodiscard]] Result<std::uint32_t> KvHeadsPerRank(std::uint32_t heads,
                                                   std::uint32_t tp);

struct MlaPage {
  std::uint32_t block = 0;  // tokens per page
  std::uint64_t record_bytes_per_token = 0;
  std::uint64_t tail_bytes_per_token = 0;
  std::uint64_t record_alignment = 0;  // 0: no padding
};

// Spec §5.1: round_up(block x record, alignment) + block x tail. Only the
// record is padded; the tail is added on top. 2^64 - 1 when it does not fit.
std::uint64_t MlaPageBytes(const MlaPage& page);

// Bytes of one recurrent state on one of `tp` ranks with `speculative_tokens`
// extra convolution rows: sum over tensors of prod(shape) x dtype_bytes, each
// tensor's `tp_dim` divided by `tp`. Returns kInvalidArgument when `tp` does
// not divide a split dimension, a tensor has no dimensions, or the bytes
// exceed 2^64 - 1.
[[nodiscard]] Result<std::uint64_t> StateBytes(
    const std::vector<StateTensor>& tensors, std::uint32_t tp,
    std::uint32_t speculative_tokens);

struct CoupledBlockInput {
  std::uint32_t block = 0;                      // the requested (cache) block
  std::uint32_t kernel_block = 16;              // the backend's smallest block
  std::uint64_t state_bytes = 0;                // the largest recurrent page
  std::uint64_t attention_bytes_per_token = 0;  // unpadded, record + tail
};

// Spec §5.6 coupled hybrid alignment: align x ceil(state / (align x bytes per
// token)) with align = max(kernel_block, block), and at least `align`: the
// smallest multiple of `align` whose attention bytes cover the state
// (`align` when there are no attention bytes). 2^64 - 1 when it does not
// fit; the planner refuses blocks beyond 2^32 - 1 tokens.
std::uint64_t CoupledAttentionBlock(const CoupledBlockInput& input);

struct AutoBlockInput {
  std::uint32_t dcp = 1;
  std::optional<std::uint32_t> retention_interval = std::nullopt;  // R > 0
  std::optional<std::uint32_t> max_num_scheduled_tokens = std::nullopt;
  std::uint32_t max_num_batched_tokens = 8192;
};

// Spec §5.6 automatic split geometry: R / dcp when R > 0, else
// (max_num_scheduled_tokens ?? max_num_batched_tokens) / dcp; both the target
// and the recurrent block get it. Returns kInvalidArgument when dcp does not
// divide the token count (e.g. R = 4097 with dcp 4) or the result is 0.
[[nodiscard]] Result<std::uint32_t> AutoBlock(const AutoBlockInput& input);

struct RequestBlocksInput {
  LayerKind kind = LayerKind::kFullAttention;
  std::uint32_t block = 0;  // tokens per page on one rank
  std::uint64_t context_tokens = 0;
  std::uint32_t dcp = 1;  // attention groups' tokens are striped over dcp
  std::uint32_t window_or_chunk = 0;
  std::uint32_t speculative_tokens = 0;
  std::uint32_t max_batched_tokens = 8192;  // tokens in flight per request
  std::uint32_t checkpoint_blocks = 1;      // recurrent prefill checkpoints
};

// Spec §5.1 "max memory per request", in pages of one group:
//   full/MLA   ceil(ceil(context / dcp) / block)
//   sliding    ceil(min(W - 1 + spec + batched, context) / block) + 1
//   chunked    ceil(min(C + batched, context) / block)
//   recurrent  2 + spec + checkpoint_blocks (align mode)
// REQUIRES: block > 0 (else UsageError).
std::uint64_t BlocksPerRequest(const RequestBlocksInput& input);

// Spec §5.3 step 9: splitting a bucket of `layers` layers round robin into
// `groups` groups; the first (layers mod groups) get one layer more.
// REQUIRES: 0 < groups <= layers.
std::vector<std::uint32_t> RoundRobinSizes(std::uint32_t layers,
                                           std::uint32_t groups);

// Spec §5.3 step 9: the number of groups of each bucket (buckets given by
// their layer counts) under the uniform-page grouping: group size = the
// smallest bucket, or the largest when it is below 1.5 x the smallest; each
// bucket splits into ceil(len / group size) groups.
// REQUIRES: every count > 0.
std::vector<std::uint32_t> UniformGroupCounts(
    const std::vector<std::uint32_t>& bucket_layers);

}  // namespace hkv
