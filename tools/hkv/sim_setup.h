// What `hkv simulate` and `hkv compare` share: their options (workload,
// cache, engine, cost model), how those become a workload and
// SimulationOptions, and the deployment seam for model-based configs.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/deployment.h"
#include "hkv/result.h"
#include "hkv/simulator.h"
#include "hkv/workload.h"

namespace hkv::cli {

struct SimCommandOptions {
  // Workload: KIND[:ARGS] (see --help); empty: the bundled conversation
  // trace.
  std::string workload;
  std::optional<std::size_t> limit;
  double time_scale = 1.0;
  std::optional<double> duration_s;
  // Cache: explicit groups, or a deployment resolved by ResolveCacheConfig.
  std::string groups;
  std::uint32_t hash_unit = 0;  // 0: the smallest block
  std::optional<std::uint32_t> num_blocks;
  std::optional<std::uint64_t> capacity_tokens;
  std::uint32_t dcp = 1;
  std::optional<std::uint32_t> retention_interval;
  FreeOrder free_order = FreeOrder::kPrependUncached;
  std::string key_function = "xxh3_128_cbor";
  std::string model = "glm53-flash-like";
  std::uint32_t tp = 4;
  double budget_gib = 33.0;
  std::string geometry = "2048/256/256";
  // Engine.
  std::uint32_t max_batched_tokens = 8192;
  std::uint32_t max_num_seqs = 256;
  std::uint32_t long_prefill_threshold = 0;
  std::uint32_t concurrency = 16;
  bool open_loop = false;
  std::uint32_t spec_drafts = 0;
  double spec_acceptance = 0.0;
  std::uint32_t spec_lookahead = 0;
  std::uint64_t seed = 1;
  // Cost model: a preset, then a JSON file, then KEY=VALUE overrides.
  std::string cost_model = "glm53-flash-gb10x4";
  std::string cost_file;
  std::vector<std::string> cost;
  // A deployment preset (data/deployments/): its model, TP, DCP, budget,
  // geometry, engine, drafts and cost model, under the flags in `given`.
  std::string preset;
  // Output.
  bool json = false;
  bool csv = false;
  // The fields set explicitly (field names, e.g. "spec_drafts"): a preset
  // does not override them.
  std::set<std::string> given;
};

// `hkv compare`: several configurations on one workload.
struct CompareCommandOptions {
  SimCommandOptions sim;
  std::vector<std::string> configs;  // --config, repeated
  std::string vary;                  // --vary NAME=V1,V2,...
};

// `key=value` items separated by `separator`; an item without '=' is
// stored under "". kInvalidArgument for a key given twice.
using KeyValues = std::map<std::string, std::string>;
[[nodiscard]] Result<KeyValues> ParseKeyValues(std::string_view text,
                                               char separator);
// Removes `key` from `fields` and returns its whole-number value, or
// `fallback` when it is absent. kInvalidArgument for another value.
[[nodiscard]] Result<std::uint64_t> TakeNumber(KeyValues& fields,
                                               const std::string& key,
                                               std::uint64_t fallback);

// Adds the shared options to `sub`.
void AddSimOptions(CLI::App& sub, SimCommandOptions& options);

// Adds --free-order (prepend-uncached | append-all) setting `order`, for
// every command that builds a cache.
void AddFreeOrderOption(CLI::App& sub, FreeOrder& order);

// The workload named by the options, cut by --limit, --time-scale and
// --duration.
[[nodiscard]] Result<std::vector<SimRequest>> LoadWorkload(
    const SimCommandOptions& options);

// One configuration: a label and its cache; for a deployment, the bytes of
// each group's block, the resolved groups and the capacity.
struct SimConfig {
  std::string label;
  CacheConfig cache;
  std::vector<std::uint64_t> page_bytes = {};
  std::string groups = {};
  std::optional<DeploymentCapacity> capacity = std::nullopt;
  std::uint64_t max_model_len = 0;  // the capacity's context
};

// Names the measured GB10 deployment as the preset of a model-based run
// (no --groups, no --model, no preset, and no group-list configuration when
// `uses_groups`), so that the default deployment is the measured one.
void DefaultToMeasured(SimCommandOptions& options, bool uses_groups);

// Sets the options `options.preset` covers to the preset's values, unless
// given. kNotFound for an unknown preset.
[[nodiscard]] Result<void> ApplyPreset(SimCommandOptions& options);

// The deployment of the options (--preset, --model, --tp, --dcp,
// --budget-gib, --spec-drafts) at `geometry`, through the planner.
[[nodiscard]] Result<SimConfig> DeploymentConfig(
    const std::string& geometry, const SimCommandOptions& options);

// The cache of the options' flags: --groups with --num-blocks or
// --capacity-tokens, else the deployment (--model, --tp, --budget-gib,
// --geometry) through ResolveCacheConfig.
[[nodiscard]] Result<SimConfig> ConfigFromFlags(
    const SimCommandOptions& options);

// A --config of `hkv compare`: `GROUPS[;unit=U][;blocks=N|;capacity=T]
// [;label=L]` or `geometry=T/R/U[;blocks=N][;label=L]`; what it leaves out
// comes from the flags.
[[nodiscard]] Result<SimConfig> ConfigFromSpec(
    const std::string& spec, const SimCommandOptions& options);

// Sets the option of flag `name` (without "--") to `value`, for
// `hkv compare --vary`: concurrency, max-batched-tokens, max-num-seqs,
// long-prefill-threshold, spec-drafts, spec-acceptance, spec-lookahead,
// retention-interval, num-blocks, hash-unit, dcp, tp, budget-gib, geometry.
// kInvalidArgument for another name or a value that is not a number >= 0.
[[nodiscard]] Result<void> SetSimOption(SimCommandOptions& options,
                                        std::string_view name,
                                        const std::string& value);

// Everything but the cache, from the flags.
[[nodiscard]] Result<SimulationOptions> EngineFromFlags(
    const SimCommandOptions& options);

}  // namespace hkv::cli
