// The capacity planner: for a model, a page geometry (target block,
// recurrent block, hash unit) and a memory budget, how many blocks the cache
// holds, how the reference groups the layers, what one request at a context
// length needs, how many such requests fit and what the layout wastes. Both
// layouts: the reference's shared pool (one block-id space whose stride is
// the largest group's bytes per block) and per-group pools (each group keeps
// its own page size; memory is split in proportion to one request's needs).
//
// docs/planner.md explains every figure and the decisions behind them.
//
// Thread-safety: pure functions.
//
// Example:
//   Result<ModelSpec> model = LoadPreset("glm53-flash-like");
//   Result<Plan> plan = PlanCapacity(*model, {2048, 256, 256},
//       {.tp = 2, .budget_bytes = 64ull << 30, .context_tokens = 262144});
//   if (plan) use(plan->shared.concurrency);
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "hkv/model.h"
#include "hkv/result.h"

namespace hkv {

// Tokens per page: the target attention block, the recurrent block, the hash
// unit. Blocks are per rank (a DCP-sharded attention block covers
// target_block x dcp tokens). A zero hash unit stands for the reference's
// default, the gcd of the groups' blocks.
struct Geometry {
  std::uint32_t target_block = 0;
  std::uint32_t recurrent_block = 0;
  std::uint32_t hash_unit = 0;

  friend bool operator==(const Geometry&, const Geometry&) = default;

  // Checks that both blocks are positive. kInvalidArgument.
  [[nodiscard]] Result<void> Validate() const;
};

// Parses "T/R/U": three positive decimal token counts below 2^32. Returns
// kInvalidArgument naming the text otherwise.
[[nodiscard]] Result<Geometry> ParseGeometry(std::string_view text);

struct PlanOptions {
  std::uint32_t tp = 1;              // tensor-parallel width
  std::uint32_t dcp = 1;             // decode-context-parallel width
  std::uint64_t budget_bytes = 0;    // KV-cache memory on one rank
  std::uint64_t context_tokens = 0;  // max_model_len
  std::uint32_t max_batched_tokens = 8192;
  std::uint32_t checkpoint_blocks = 1;  // recurrent prefill checkpoints
  // Replaces the draft model's speculative tokens when set.
  std::optional<std::uint32_t> speculative_tokens = std::nullopt;
  // For AutoGeometry (spec §5.6): the retention interval R and
  // max_num_scheduled_tokens.
  std::optional<std::uint32_t> retention_interval = std::nullopt;
  std::optional<std::uint32_t> max_scheduled_tokens = std::nullopt;

  // Checks non-zero tp, dcp, budget, context and batched tokens, the
  // context at most kMaxTokensPerRequest (hkv/limits.h) and the budget below
  // 2^52. kInvalidArgument.
  [[nodiscard]] Result<void> Validate() const;
};

// One KV-cache group: layers of one kind sharing a block table.
struct GroupPlan {
  LayerKind kind = LayerKind::kFullAttention;
  bool draft = false;
  std::uint32_t num_layers = 0;
  std::uint32_t block_tokens = 0;  // tokens one block covers (x dcp)
  std::uint64_t slot_bytes = 0;    // bytes per block in the shared pool
  std::uint64_t data_bytes = 0;    // of which hold cache data
  std::uint64_t waste_bytes = 0;   // stride - data_bytes
  std::uint64_t blocks_per_request = 0;
  std::uint64_t pool_page_bytes = 0;  // per-group pools: bytes per block
  std::uint64_t pool_blocks = 0;      // per-group pools: blocks
};

// Capacity of one layout at the planned context length.
struct PoolCapacity {
  std::uint64_t blocks = 0;  // including the null block (shared pool)
  std::uint64_t blocks_per_request = 0;
  std::uint64_t concurrency = 0;  // whole requests at the context length
  std::uint64_t tokens = 0;       // concurrency x context
  double waste = 0.0;  // fraction of a full pool's bytes holding no data
};

struct Plan {
  Geometry geometry;  // as resolved: coupled blocks inflated, units filled
  std::uint32_t scheduler_block = 0;  // S: lcm of the groups' blocks
  std::uint32_t hit_unit = 0;         // A: hash unit if partial hits, else S
  bool partial_hits = false;
  std::vector<GroupPlan> groups;
  std::uint64_t stride_bytes = 0;
  std::uint64_t cost_bytes = 0;  // stride x blocks per request (spec §5.5)
  // Split layout: the uniform-page grouping the optimiser started from.
  std::vector<std::uint32_t> baseline_layer_counts;
  std::uint64_t baseline_stride_bytes = 0;
  std::uint64_t baseline_cost_bytes = 0;
  PoolCapacity shared;
  PoolCapacity per_group;
  std::uint64_t null_bytes = 0;  // per-group pools' one shared null page
  // The reference's log line: floor(blocks / blocks per request x context),
  // counting the null block.
  std::uint64_t reference_tokens = 0;
};

// Plans `geometry` for `model`. Returns kInvalidArgument for a geometry the
// reference rejects (a hash unit not dividing a group's block, a coupled
// geometry whose recurrent block differs from its target block, more than 8
// layer buckets in the split layout, TP not dividing heads) or whose blocks
// (target block x dcp, their lcm) exceed 2^32 - 1 tokens, and kInfeasible
// when the budget holds no block besides the null block or one request at the
// context length does not fit (spec §5.7), figures too large for 64 bits
// included, or the coupled rule needs a block beyond 2^32 - 1 tokens;
// messages carry the numbers. Never wraps: figures that do not fit 64 bits
// saturate (Plan's token counts among them).
// O(8^buckets) for the split layout's optimiser, else O(layers).
[[nodiscard]] Result<Plan> PlanCapacity(const ModelSpec& model,
                                        const Geometry& geometry,
                                        const PlanOptions& options);

// The reference's automatic geometry: split layout, spec §5.6 (AutoBlock for
// both blocks); coupled, the alignment rule from the kernel block. The hash
// unit is the gcd of the groups' blocks. Returns what AutoBlock returns.
[[nodiscard]] Result<Geometry> AutoGeometry(const ModelSpec& model,
                                            const PlanOptions& options);

// Every feasible geometry with power-of-two blocks from 16 to 8192 (the
// recurrent block equal to the target block in the coupled layout) and
// power-of-two hash units from 16 dividing them, whose hit unit is at most
// `max_hit_unit`, best first: most tokens in the shared pool (whole
// requests, then reference_tokens), then smaller hit unit, larger hash unit,
// smaller blocks. Returns kInfeasible when none
// qualifies.
[[nodiscard]] Result<std::vector<Plan>> SearchGeometries(
    const ModelSpec& model, const PlanOptions& options,
    std::uint32_t max_hit_unit);

// Parses a byte count: an integer or decimal number with an optional unit B,
// KB/MB/GB/TB (powers of 1000) or KiB/MiB/GiB/TiB (powers of 1024), e.g.
// "33GiB", "1.5TB", "4096". Fractions of a byte are dropped. Returns
// kInvalidArgument otherwise or above 2^63.
[[nodiscard]] Result<std::uint64_t> ParseByteSize(std::string_view text);

}  // namespace hkv
