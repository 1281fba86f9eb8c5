// Model descriptions for the capacity planner: a model is its layers with
// their kinds and byte facts, an optional draft model, and how the reference
// lays its cache out. Byte facts are for tensor-parallel width 1; the planner
// divides what tensor parallelism divides (attention KV heads, recurrent
// heads; MLA latents are replicated).
//
// Presets are JSON files in data/models/ (see docs/planner.md for the
// format), compiled into the library.
//
// Thread-safety: plain value types and pure functions.
//
// Example:
//   Result<ModelSpec> model = LoadPreset("qwen3-next-80b-a3b");
//   if (!model) std::cerr << model.error().message;
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/result.h"

namespace hkv {

enum class LayerKind {
  kFullAttention,  // K and V per KV head and token
  kSlidingWindow,  // full-attention pages, only the last `window` tokens kept
  kChunkedLocal,   // full-attention pages, attention within `chunk` tokens
  kMla,            // one latent record (plus a tail) per token, replicated
  kRecurrent,      // a fixed-size state per request (Mamba2, GDN, KDA)
};

// How the reference lays a hybrid model's cache out (spec §5.3, §5.6).
enum class Layout {
  // One page size: the attention block grows until its page covers the
  // recurrent state, recurrent pages are padded to it, and layers are grouped
  // by the uniform-page rule. The recurrent block equals the attention block.
  kCoupled,
  // Physical pages kept (GLM-5.3 split): the target and recurrent blocks are
  // independent, groups come from the weighted shared-pool optimiser, and the
  // stride is rounded up to `stride_alignment`.
  kSplit,
};

// One tensor of a recurrent state, e.g. the convolution state [K-1, dim] or
// the SSM state [heads, d, d].
struct StateTensor {
  std::vector<std::uint64_t> shape = {};
  std::uint32_t dtype_bytes = 2;
  // The dimension tensor parallelism divides (heads, channels); none:
  // replicated.
  std::optional<std::uint32_t> tp_dim = std::nullopt;
  // Dimension 0 grows by one row per speculative token (convolution states).
  bool speculative_rows = false;
};

// `count` identical layers.
struct LayerSpec {
  LayerKind kind = LayerKind::kFullAttention;
  std::uint32_t count = 1;
  // Full, sliding and chunked attention: K and V of each KV head per token.
  std::uint32_t num_kv_heads = 0;
  std::uint32_t head_size = 0;
  std::uint32_t head_size_v = 0;
  std::uint32_t dtype_bytes = 2;
  // MLA: the record per token (padded per page to `record_alignment` bytes
  // when non-zero) and a tail per token added on top of the padded record.
  std::uint64_t record_bytes_per_token = 0;
  std::uint64_t tail_bytes_per_token = 0;
  std::uint64_t record_alignment = 0;
  std::uint32_t window = 0;  // sliding window W
  std::uint32_t chunk = 0;   // chunked local C
  // Recurrent: the state's tensors, or `state_bytes` per layer (at TP 1,
  // divided by the TP width) when `state` is empty.
  std::vector<StateTensor> state = {};
  std::uint64_t state_bytes = 0;
};

// A draft model for speculative decoding: its speculative tokens per step and
// its own cache layers (grouped apart from the target's and appended).
struct DraftSpec {
  std::uint32_t speculative_tokens = 0;
  std::vector<LayerSpec> layers = {};
};

// What the model computes and reads per token, for the simulator's
// physical cost model (docs/calibration.md): published facts of the whole
// model at TP 1. Attention layers are the model's (not its draft's) layers
// of attention kinds; their KV bytes come from the layers.
struct ComputeSpec {
  double total_params = 0.0;
  double active_params = 0.0;  // the weights one token passes through
  // Mixture of experts: the weights of every routed expert of every MoE
  // layer (0: a dense model), the experts of a layer, and those a token
  // uses. A step reads the experts its tokens use (docs/calibration.md).
  double routed_params = 0.0;
  std::uint32_t experts = 0;
  std::uint32_t experts_per_token = 0;
  double routed_bits = 16.0;  // bits per routed weight as served
  double other_bits = 16.0;   // bits per other weight
  std::uint32_t hidden = 0;   // residual width (a TP all-reduce carries it)
  // Per attention layer and (query, key) pair, all query heads; sparse
  // attention attends `attention_topk` keys at most (0: every key), and its
  // indexer spends `index_flops_per_pair` on every (query, key) pair.
  double attention_flops_per_pair = 0.0;
  std::uint32_t attention_topk = 0;
  double index_flops_per_pair = 0.0;

  // kInvalidArgument naming the field when a count is missing or the
  // facts contradict each other (active above total, routed above total,
  // experts per token above experts).
  [[nodiscard]] Result<void> Validate() const;
};

struct ModelSpec {
  std::string name = {};
  std::vector<LayerSpec> layers = {};
  DraftSpec draft = {};
  Layout layout = Layout::kCoupled;
  // Split layout: the stride is rounded up to a multiple of this (0: none).
  std::uint64_t stride_alignment = 0;
  // The smallest attention block the kernels take; the coupled rule aligns
  // the attention block to max(kernel_block, requested block).
  std::uint32_t kernel_block = 16;
  // For the physical cost model; none: the model's step costs are only
  // what a cost model's linear terms say.
  std::optional<ComputeSpec> compute = std::nullopt;

  // Checks that every layer has the facts its kind needs (non-zero counts,
  // heads, sizes, a state whose tensors' dimensions are positive), that
  // window/chunk appear only on their kinds, that there is at least one
  // layer and at most kMaxModelLayers (hkv/limits.h) counting the draft's.
  // Returns kInvalidArgument naming the layer (its index from 0) otherwise.
  [[nodiscard]] Result<void> Validate() const;
};

// Parses a model description (the JSON format of data/models/, described in
// docs/planner.md). Returns kInvalidArgument naming the field on malformed
// input: unknown fields, values of the wrong JSON type, numbers that are
// negative, fractional, infinite or beyond the field's type (e.g.
// `layers[0].count: must be an integer from 0 to 4294967295, got -1`); or
// what Validate() returns. O(text length).
[[nodiscard]] Result<ModelSpec> ParseModelJson(std::string_view text);

// The names of the compiled-in presets, sorted.
std::vector<std::string> PresetNames();

// The preset `name`, or kNotFound listing the known names.
[[nodiscard]] Result<ModelSpec> LoadPreset(std::string_view name);

// The kind's name in model files: "full", "sliding", "chunked", "mla",
// "recurrent".
std::string_view LayerKindName(LayerKind kind);

}  // namespace hkv
