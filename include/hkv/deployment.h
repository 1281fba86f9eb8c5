// What the simulator is told to simulate when it is given a model instead of
// cache groups: a model preset, its tensor-parallel width, the KV-cache
// memory budget of one rank and a page geometry (target block / recurrent
// block / hash unit), resolved into the CacheConfig the simulator drives.
// A deployment preset (data/deployments/, compiled in) is such a deployment
// as it ran on a measured cluster: its engine settings, the speculative
// decoding it served with and its fitted cost model (docs/calibration.md).
//
// ResolveDeployment asks the capacity planner (include/hkv/planner.h): its
// groups become cache groups and its shared pool's blocks the pool.
//
// Thread-safety: value types and pure functions.
//
// Example:
//   Result<DeploymentPreset> gb10 = LoadDeploymentPreset("glm53-flash-gb10x4");
//   Result<ResolvedDeployment> d = ResolveDeployment(gb10->spec);
//   if (d) use(d->cache, d->capacity.engine_pool_tokens);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/cache_manager.h"
#include "hkv/cost_model.h"
#include "hkv/model.h"
#include "hkv/result.h"

namespace hkv {

// Whether the groups holding a draft model's layers rewind a hit by one
// hash unit (EAGLE-style drafters recompute it) or not.
enum class DraftRewind { kOneUnit, kNone };

// How the cache's blocks are pooled: one pool whose slots are as large as
// the largest group's page (the reference), or a pool per group with its
// own page size, split in proportion to each group's bytes per request at
// the planned context (the planner's per-group layout, docs/planner.md) or,
// in the simulator, re-split by what the workload keeps (docs/beyond.md),
// or the planner's split rebalanced while the cache runs: the pools share
// the budget's bytes, and a pool that runs dry takes other pools' oldest free
// blocks (CacheConfig::pool_slot_bytes: each group's page bytes).
enum class PoolLayout { kShared, kPerGroup, kPerGroupByWorkload, kRebalanced };

// "shared", "per-group", "workload" or "rebalanced"; kInvalidArgument naming
// the text otherwise.
[[nodiscard]] Result<PoolLayout> ParsePoolLayout(std::string_view text);

struct DeploymentSpec {
  std::string model = "glm53-flash-like";
  std::uint32_t tp = 4;
  std::uint32_t dcp = 1;
  std::uint64_t budget_bytes = std::uint64_t{33} << 30;
  // max_model_len: the longest request planned for; one must fit.
  std::uint64_t context_tokens = 262144;
  // Draft tokens per decode step the engine runs with (recurrent groups
  // keep as many speculative state blocks, and convolution states grow with
  // them); unset: the model's draft.
  std::optional<std::uint32_t> speculative_tokens = std::nullopt;
  // Replaces the model's draft (its tokens and cache layers) when set.
  std::optional<DraftSpec> draft = std::nullopt;
  DraftRewind draft_rewind = DraftRewind::kOneUnit;
  // Tokens scheduled but not yet processed per request, at most (a sliding
  // window group spans W - 1 + drafts + these): the step budget, twice it
  // under asynchronous scheduling.
  std::uint32_t in_flight_tokens = 8192;
  // Page geometry, tokens per block on one rank.
  std::uint32_t target_block = 2048;
  std::uint32_t recurrent_block = 256;
  std::uint32_t hash_unit = 256;
  PoolLayout pools = PoolLayout::kShared;
};

// Parses "target/recurrent/unit", e.g. "2048/256/256", into `spec`'s
// geometry. kInvalidArgument naming the text otherwise.
[[nodiscard]] Result<void> ParsePageGeometry(std::string_view text,
                                             DeploymentSpec& spec);

// Capacity at max_model_len, reported twice. The engine's log line (spec
// §5.5, "GPU KV cache size: N tokens, Maximum concurrency for L tokens per
// request: Cx") counts the null block and fractions of requests; hkv counts
// whole requests that fit at once, the null block excluded.
struct DeploymentCapacity {
  std::uint64_t engine_pool_tokens = 0;
  double engine_max_concurrency = 0.0;
  std::uint64_t whole_requests = 0;
  std::uint64_t blocks = 0;  // including the null block
  std::uint64_t blocks_per_request = 0;
  std::uint64_t stride_bytes = 0;
};

struct ResolvedDeployment {
  CacheConfig cache = {};
  // Per cache group: the bytes one block holds on one rank (a recurrent
  // group's: one state of all its layers), for the cost model.
  std::vector<std::uint64_t> page_bytes = {};
  DeploymentCapacity capacity = {};
  // The resolved groups and hash unit, e.g. "recurrent[9,9,8,8]/256
  // mla[11]/2048 sliding[5]/2048 draft-rewind; hash unit 256".
  std::string description = {};
  Layout layout = Layout::kCoupled;  // the model's
};

// The cache groups and block count of `spec`, as the capacity planner lays
// them out in the shared pool or, with PoolLayout::kPerGroup, in per-group
// pools (CacheConfig::group_pool_blocks, capacity from the per-group
// layout): one group per planned group (attention at the
// target block, DCP-sharded; a draft model's sliding-window layers at the
// target block, replicated; recurrent states at the recurrent block, with
// the engine's draft tokens as speculative state blocks; groups holding
// draft layers rewind one hash unit of a hit for the draft), the planned
// blocks, the resolved hash unit, xxh3 keys. Returns the planner's error (an
// unknown model, a geometry it rejects, a budget that holds no request)
// otherwise.
[[nodiscard]] Result<ResolvedDeployment> ResolveDeployment(
    const DeploymentSpec& spec);

// ResolveDeployment(spec)->cache.
[[nodiscard]] Result<CacheConfig> ResolveCacheConfig(
    const DeploymentSpec& spec);

// The physical part of a cost model (hkv/cost_model.h) for `model` at
// `spec`'s TP width and drafts on `hardware`, its GEMMs at `precision`: one
// rank's FLOPs per token (2 x active weights / TP) and per attention pair,
// its weight bytes (non-routed, routed), the bytes a decode reads per key
// and per context token, each request's recurrent states (read and
// written) and the all-reduce traffic (two per layer of the residual in
// bf16, when TP > 1). kInvalidArgument when the model has no compute facts
// or the TP width does not divide its heads.
[[nodiscard]] Result<PhysicalCost> ResolvePhysicalCost(
    const ModelSpec& model, const DeploymentSpec& spec,
    const HardwareSpec& hardware, Precision precision);

// A measured deployment (data/deployments/NAME.json; docs/calibration.md
// describes the format).
struct DeploymentPreset {
  std::string name;
  DeploymentSpec spec;  // its geometry: the one it served with
  std::uint32_t max_batched_tokens = 8192;
  std::uint32_t speculative_tokens = 0;  // drafts per decode step
  double acceptance_rate = 0.0;          // per draft (assumed, see sources)
  CostModel cost;                        // named after the preset
  // The hardware (data/hardware/) and GEMM precision of its physical cost
  // part; empty: a cost model of linear terms only.
  std::string hardware;
  Precision gemm_precision = Precision::kBf16;
  std::vector<std::string> sources;
  std::string fit_json;  // the "fit" object, for hkv calibrate
};

// Parses a deployment preset. kInvalidArgument naming the field otherwise.
[[nodiscard]] Result<DeploymentPreset> ParseDeploymentPreset(
    std::string_view json_text);

// The physical part of `preset`'s cost model for `spec` (its own
// deployment, or another model or width on its hardware): the errors of
// LoadHardwarePreset, LoadPreset and ResolvePhysicalCost. REQUIRES: the
// preset names its hardware.
[[nodiscard]] Result<PhysicalCost> PresetPhysics(const DeploymentPreset& preset,
                                                 const DeploymentSpec& spec);

// The compiled-in preset `name`; kNotFound listing them otherwise.
[[nodiscard]] Result<DeploymentPreset> LoadDeploymentPreset(
    std::string_view name);

// The compiled-in presets' names, sorted.
std::vector<std::string> DeploymentPresetNames();

}  // namespace hkv
