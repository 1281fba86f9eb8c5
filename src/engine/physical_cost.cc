// The physical part of the cost model (hkv/cost_model.h): a step's FLOPs,
// bytes and all-reduce traffic on one rank, and their resolution from a
// model's compute facts, the deployment and the hardware
// (hkv/deployment.h).
#include <algorithm>
#include <cmath>

#include "check.h"
#include "hkv/cost_model.h"
#include "hkv/deployment.h"
#include "hkv/geometry.h"

namespace hkv {
namespace {

bool IsAttention(LayerKind kind) { return kind != LayerKind::kRecurrent; }

// Bytes per token of one attention layer on one of `tp` ranks: the record
// a decode's attended key reads (MLA: replicated) and the indexer's tail.
struct KeyBytes {
  double key = 0.0;
  double index = 0.0;
};
Result<KeyBytes> KeyBytesOf(const LayerSpec& layer, std::uint32_t tp) {
  if (layer.kind == LayerKind::kMla) {
    return KeyBytes{static_cast<double>(layer.record_bytes_per_token),
                    static_cast<double>(layer.tail_bytes_per_token)};
  }
  Result<std::uint32_t> heads = KvHeadsPerRank(layer.num_kv_heads, tp);
  if (!heads) return tl::unexpected(heads.error());
  return KeyBytes{
      static_cast<double>(AttentionBytesPerToken(
          *heads, layer.head_size, layer.head_size_v, layer.dtype_bytes)),
      0.0};
}

}  // namespace

double ExpertCoverage(std::uint32_t experts, std::uint32_t per_token,
                      std::uint64_t tokens) {
  if (experts == 0) return 1.0;
  const double miss = 1.0 - static_cast<double>(per_token) / experts;
  return 1.0 - std::pow(miss, static_cast<double>(tokens));
}

double SparseAttentionPairs(std::uint64_t start, std::uint64_t end,
                            std::uint32_t topk) {
  HKV_REQUIRE(start <= end, "a chunk ends before it starts");
  if (topk == 0 || end <= topk) return PrefillAttentionPairs(start, end);
  // Positions p < topk - 1 attend p + 1 keys, the rest topk.
  const std::uint64_t below = std::clamp<std::uint64_t>(topk - 1, start, end);
  return PrefillAttentionPairs(start, below) +
         static_cast<double>(end - below) * topk;
}

PeakSeconds PhysicalSeconds(const PhysicalCost& p, const StepShape& shape) {
  const std::uint64_t tokens = shape.prefill_tokens + shape.decode_tokens;
  const double t = static_cast<double>(tokens);
  const double flops =
      t * p.gemm_flops_per_token +
      shape.sparse_attention_pairs * p.attention_flops_per_pair +
      (shape.prefill_attention_pairs + shape.decode_attention_pairs) *
          p.index_flops_per_pair;
  const double bytes =
      p.other_weight_bytes +
      p.routed_weight_bytes *
          ExpertCoverage(p.experts, p.experts_per_token, tokens) +
      static_cast<double>(shape.decode_sparse_keys) * p.key_bytes +
      static_cast<double>(shape.decode_context_tokens) * p.index_bytes +
      shape.requests * p.state_bytes;
  return {.compute = p.peak_flops > 0.0 ? flops / p.peak_flops : 0.0,
          .memory = p.memory_bandwidth > 0.0 ? bytes / p.memory_bandwidth : 0.0,
          .link = (p.link_bandwidth > 0.0
                       ? t * p.link_bytes_per_token / p.link_bandwidth
                       : 0.0) +
                  p.collectives_per_step * p.link_latency_s};
}

Result<PhysicalCost> ResolvePhysicalCost(const ModelSpec& model,
                                         const DeploymentSpec& spec,
                                         const HardwareSpec& hardware,
                                         Precision precision) {
  if (!model.compute) {
    return Fail(ErrorCode::kInvalidArgument,
                "model " + model.name +
                    " has no compute facts (its \"compute\" object, "
                    "docs/planner.md), which the physical cost model needs");
  }
  const ComputeSpec& c = *model.compute;
  const double tp = spec.tp;
  PhysicalCost p{
      .hardware = hardware.name,
      .gemm_precision = precision,
      .peak_flops = PeakFlops(hardware, precision),
      .memory_bandwidth = hardware.memory_bandwidth,
      .link_bandwidth = hardware.link_bandwidth,
      .link_latency_s = hardware.link_latency_s,
      .gemm_flops_per_token = 2.0 * c.active_params / tp,
      .attention_topk = c.attention_topk,
      .other_weight_bytes =
          (c.total_params - c.routed_params) * c.other_bits / 8 / tp,
      .routed_weight_bytes = c.routed_params * c.routed_bits / 8 / tp,
      .experts = c.experts,
      .experts_per_token = c.experts_per_token};
  const std::uint32_t drafts =
      spec.speculative_tokens.value_or(model.draft.speculative_tokens);
  double layers = 0.0;
  for (const LayerSpec& layer : model.layers) {
    layers += layer.count;
    if (layer.kind == LayerKind::kRecurrent) {
      Result<std::uint64_t> state = StateBytes(layer.state, spec.tp, drafts);
      if (!state) return tl::unexpected(state.error());
      const double bytes = layer.state.empty()
                               ? static_cast<double>(layer.state_bytes) / tp
                               : static_cast<double>(*state);
      p.state_bytes += 2.0 * layer.count * bytes;  // read and written
      continue;
    }
    if (!IsAttention(layer.kind)) continue;
    Result<KeyBytes> keys = KeyBytesOf(layer, spec.tp);
    if (!keys) return tl::unexpected(keys.error());
    p.attention_flops_per_pair += layer.count * c.attention_flops_per_pair / tp;
    p.index_flops_per_pair += layer.count * c.index_flops_per_pair / tp;
    p.key_bytes += layer.count * keys->key;
    p.index_bytes += layer.count * keys->index;
  }
  if (spec.tp > 1) {
    // Two ring all-reduces of the residual (bf16) per layer.
    p.link_bytes_per_token =
        2.0 * layers * c.hidden * 2.0 * 2.0 * (tp - 1.0) / tp;
    p.collectives_per_step = 2.0 * layers;
  }
  return p;
}

}  // namespace hkv
