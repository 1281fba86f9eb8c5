#include "geometry/buckets.h"

#include <algorithm>
#include <numeric>

#include "check.h"
#include "geometry/arith.h"
#include "hkv/geometry.h"
#include "text.h"

namespace hkv::internal {
namespace {

constexpr std::uint64_t kMaxBlockTokens = 0xffffffffu;

bool IsAttention(LayerKind kind) { return kind != LayerKind::kRecurrent; }

// Full attention and MLA stripe their tokens over DCP ranks.
bool IsSharded(LayerKind kind) {
  return kind == LayerKind::kFullAttention || kind == LayerKind::kMla;
}

bool SameFacts(const RankLayer& a, const RankLayer& b) {
  return a.kind == b.kind && a.draft == b.draft && a.record == b.record &&
         a.tail == b.tail && a.record_alignment == b.record_alignment &&
         a.state_bytes == b.state_bytes &&
         a.window_or_chunk == b.window_or_chunk;
}

Result<RankLayer> ToRank(const LayerSpec& layer, std::uint32_t tp,
                         std::uint32_t speculative_tokens) {
  RankLayer r{.kind = layer.kind,
              .count = layer.count,
              .window_or_chunk = std::max(layer.window, layer.chunk)};
  if (layer.kind == LayerKind::kMla) {  // replicated under TP
    r.record = layer.record_bytes_per_token;
    r.tail = layer.tail_bytes_per_token;
    r.record_alignment = layer.record_alignment;
  } else if (layer.kind == LayerKind::kRecurrent) {
    if (layer.state.empty()) {
      if (layer.state_bytes % tp != 0) {
        return Fail(ErrorCode::kInvalidArgument,
                    Cat("TP ", tp, " does not divide the state of ",
                        layer.state_bytes, " B"));
      }
      r.state_bytes = layer.state_bytes / tp;
    } else {
      Result<std::uint64_t> bytes =
          StateBytes(layer.state, tp, speculative_tokens);
      if (!bytes) return tl::unexpected(bytes.error());
      r.state_bytes = *bytes;
    }
  } else {
    Result<std::uint32_t> heads = KvHeadsPerRank(layer.num_kv_heads, tp);
    if (!heads) return tl::unexpected(heads.error());
    r.record = AttentionBytesPerToken(*heads, layer.head_size,
                                      layer.head_size_v, layer.dtype_bytes);
  }
  return r;
}

Result<void> AddLayers(const std::vector<LayerSpec>& specs, bool draft,
                       const PlanOptions& options, std::uint32_t spec_tokens,
                       std::vector<RankLayer>& out) {
  for (std::size_t i = 0; i < specs.size(); ++i) {
    Result<RankLayer> layer = ToRank(specs[i], options.tp, spec_tokens);
    if (!layer) {
      return Fail(layer.error().code, Cat(draft ? "draft layer " : "layer ", i,
                                          ": ", layer.error().message));
    }
    layer->draft = draft;
    auto same = std::find_if(out.begin(), out.end(), [&](const RankLayer& r) {
      return SameFacts(r, *layer);
    });
    if (same != out.end()) {
      same->count += layer->count;
    } else {
      out.push_back(*layer);
    }
  }
  return {};
}

std::uint64_t AttentionPage(const RankLayer& layer, std::uint32_t block) {
  return MlaPageBytes({.block = block,
                       .record_bytes_per_token = layer.record,
                       .tail_bytes_per_token = layer.tail,
                       .record_alignment = layer.record_alignment});
}

// The coupled layout's one attention block; kInvalidArgument when attention
// layers disagree on their bytes per token.
Result<std::uint32_t> CoupledBlock(const ModelSpec& model,
                                   const std::vector<RankLayer>& layers,
                                   std::uint32_t block) {
  const RankLayer* attention = nullptr;
  std::uint64_t state = 0;
  for (const RankLayer& layer : layers) {
    if (!IsAttention(layer.kind)) {
      state = std::max(state, layer.state_bytes);
      continue;
    }
    if (attention != nullptr &&
        (layer.record != attention->record || layer.tail != attention->tail ||
         layer.record_alignment != attention->record_alignment)) {
      return Fail(ErrorCode::kInvalidArgument,
                  Cat("the coupled layout needs one attention page size: ",
                      attention->record + attention->tail, " and ",
                      layer.record + layer.tail, " B per token differ"));
    }
    attention = &layer;
  }
  if (attention == nullptr || state == 0) return block;
  const std::uint64_t coupled =
      CoupledAttentionBlock({.block = block,
                             .kernel_block = model.kernel_block,
                             .state_bytes = state,
                             .attention_bytes_per_token = SaturatingAdd(
                                 attention->record, attention->tail)});
  if (coupled > kMaxBlockTokens) {
    return Fail(ErrorCode::kInfeasible,
                Cat("the coupled layout needs an attention block of ", coupled,
                    " tokens to hold the recurrent state of ", state,
                    " B, more than 2^32 - 1"));
  }
  return static_cast<std::uint32_t>(coupled);
}

// Validated geometries keep every block below 2^32 tokens.
std::uint32_t BlockTokens(LayerKind kind, const Geometry& geometry,
                          std::uint32_t dcp) {
  if (kind == LayerKind::kRecurrent) return geometry.recurrent_block;
  return geometry.target_block * (IsSharded(kind) ? dcp : 1);
}

// The sharded attention block, target_block x dcp tokens, must fit 32 bits.
Result<void> CheckShardedBlock(const Geometry& geometry, std::uint32_t dcp) {
  const std::uint64_t tokens = std::uint64_t{geometry.target_block} * dcp;
  if (tokens <= kMaxBlockTokens) return {};
  return Fail(ErrorCode::kInvalidArgument,
              Cat("target block ", geometry.target_block, " x dcp ", dcp, " = ",
                  tokens, " tokens exceeds 2^32 - 1"));
}

}  // namespace

std::uint32_t SpeculativeTokens(const ModelSpec& model,
                                const PlanOptions& options) {
  return options.speculative_tokens.value_or(model.draft.speculative_tokens);
}

Result<std::vector<RankLayer>> RankLayers(const ModelSpec& model,
                                          const PlanOptions& options) {
  const std::uint32_t spec_tokens = SpeculativeTokens(model, options);
  std::vector<RankLayer> layers;
  Result<void> ok =
      AddLayers(model.layers, false, options, spec_tokens, layers);
  if (ok)
    ok = AddLayers(model.draft.layers, true, options, spec_tokens, layers);
  if (!ok) return tl::unexpected(ok.error());
  return layers;
}

Result<Geometry> ResolveGeometry(const ModelSpec& model,
                                 const std::vector<RankLayer>& layers,
                                 const Geometry& geometry,
                                 const PlanOptions& options) {
  Geometry out = geometry;
  if (model.layout == Layout::kCoupled) {
    if (geometry.recurrent_block != geometry.target_block) {
      return Fail(ErrorCode::kInvalidArgument,
                  Cat("model ", model.name,
                      " has the coupled layout: the "
                      "recurrent block follows the target block, so give "
                      "T/T/U (got ",
                      geometry.target_block, "/", geometry.recurrent_block, "/",
                      geometry.hash_unit, ")"));
    }
    Result<std::uint32_t> block =
        CoupledBlock(model, layers, geometry.target_block);
    if (!block) return tl::unexpected(block.error());
    out.target_block = out.recurrent_block = *block;
  }
  if (Result<void> ok = CheckShardedBlock(out, options.dcp); !ok) {
    return tl::unexpected(ok.error());
  }
  if (out.hash_unit == 0) {
    for (const RankLayer& layer : layers) {
      out.hash_unit =
          std::gcd(out.hash_unit, BlockTokens(layer.kind, out, options.dcp));
    }
  }
  return out;
}

std::vector<Bucket> MakeBuckets(const ModelSpec& model,
                                const std::vector<RankLayer>& layers,
                                const Geometry& geometry,
                                const PlanOptions& options) {
  std::vector<Bucket> buckets;
  std::uint64_t coupled_page = 0;
  for (const RankLayer& layer : layers) {
    const bool attention = IsAttention(layer.kind);
    const std::uint32_t page_tokens =
        attention ? geometry.target_block : geometry.recurrent_block;
    Bucket b{.kind = layer.kind,
             .draft = layer.draft,
             .layers = layer.count,
             .block_tokens = BlockTokens(layer.kind, geometry, options.dcp)};
    b.pool_page =
        attention ? AttentionPage(layer, page_tokens) : layer.state_bytes;
    b.slot_page = b.pool_page;
    b.data = attention ? SaturatingMul(page_tokens,
                                       SaturatingAdd(layer.record, layer.tail))
                       : layer.state_bytes;
    if (attention) coupled_page = b.pool_page;
    b.blocks_per_request = BlocksPerRequest(
        {.kind = layer.kind,
         .block = page_tokens,
         .context_tokens = options.context_tokens,
         .dcp = IsSharded(layer.kind) ? options.dcp : 1,
         .window_or_chunk = layer.window_or_chunk,
         .speculative_tokens = SpeculativeTokens(model, options),
         .max_batched_tokens = options.max_batched_tokens,
         .checkpoint_blocks = options.checkpoint_blocks});
    buckets.push_back(b);
  }
  // Coupled: recurrent pages are padded to the one attention page.
  if (model.layout == Layout::kCoupled && coupled_page > 0) {
    for (Bucket& b : buckets) {
      HKV_DCHECK(b.slot_page <= coupled_page);
      b.slot_page = coupled_page;
    }
  }
  return buckets;
}

}  // namespace hkv::internal
