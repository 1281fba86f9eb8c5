// Layer buckets on one rank: a model's identical layers with their byte
// facts after tensor parallelism, and their pages at a resolved geometry.
#pragma once

#include <cstdint>
#include <vector>

#include "hkv/model.h"
#include "hkv/planner.h"
#include "hkv/result.h"

namespace hkv::internal {

// Identical layers on one rank. Attention layers store `record` bytes per
// token (padded per page to `record_alignment`) plus `tail` bytes per token;
// recurrent layers one state of `state_bytes`.
struct RankLayer {
  LayerKind kind = LayerKind::kFullAttention;
  bool draft = false;
  std::uint32_t count = 0;
  std::uint64_t record = 0;
  std::uint64_t tail = 0;
  std::uint64_t record_alignment = 0;
  std::uint64_t state_bytes = 0;
  std::uint32_t window_or_chunk = 0;
};

// The target's then the draft's layers on one of `options.tp` ranks, equal
// ones merged. Returns kInvalidArgument when TP does not divide heads.
[[nodiscard]] Result<std::vector<RankLayer>> RankLayers(
    const ModelSpec& model, const PlanOptions& options);

// The draft's speculative tokens, or the override in `options`.
std::uint32_t SpeculativeTokens(const ModelSpec& model,
                                const PlanOptions& options);

// A bucket's pages at the resolved geometry.
struct Bucket {
  LayerKind kind = LayerKind::kFullAttention;
  bool draft = false;
  std::uint32_t layers = 0;
  std::uint32_t block_tokens = 0;  // tokens a block covers (x dcp if sharded)
  std::uint64_t slot_page = 0;     // one layer's bytes per shared-pool block
  std::uint64_t pool_page = 0;     // one layer's bytes per per-group block
  std::uint64_t data = 0;          // one layer's cache data per block
  std::uint64_t blocks_per_request = 0;
};

// The geometry the layout really uses: in the coupled layout the attention
// block grows by the alignment rule and the recurrent block follows it; a
// zero hash unit becomes the gcd of the blocks. Returns kInvalidArgument for
// a coupled geometry with R != T or coupled attention layers of different
// page sizes. REQUIRES: geometry.Validate().
[[nodiscard]] Result<Geometry> ResolveGeometry(
    const ModelSpec& model, const std::vector<RankLayer>& layers,
    const Geometry& geometry, const PlanOptions& options);

// The buckets of `layers` at the resolved `geometry`.
std::vector<Bucket> MakeBuckets(const ModelSpec& model,
                                const std::vector<RankLayer>& layers,
                                const Geometry& geometry,
                                const PlanOptions& options);

}  // namespace hkv::internal
