// Experiments: what `hkv simulate` and `hkv compare` run, as library calls.
// ExperimentOptions names a workload (a trace, a generator or a named
// scenario), a cache (explicit groups, or a deployment preset, model, TP,
// budget and page geometry resolved through the planner), the engine and
// the cost model; RunSimulation runs one configuration and RunComparison
// several side by side. The CLI registers the options and prints the runs;
// the Python module returns them.
//
// Thread-safety: value types; the Run* calls own everything they build and
// may run in parallel. The library never prints: progress goes to the
// callback.
//
// Example:
//   ExperimentOptions o{.workload = "resend:prompt=52445",
//                       .preset = "glm53-flash-gb10x4"};
//   Result<SimRuns> runs = RunSimulation(o, {});
//   if (runs) use(runs->runs[0].result.reused_tokens);
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/cache_manager.h"
#include "hkv/deployment.h"
#include "hkv/engine_flags.h"
#include "hkv/result.h"
#include "hkv/scenarios.h"
#include "hkv/simulator.h"
#include "hkv/workload.h"

namespace hkv {

// What an experiment runs. hkv/sim_options.h names each field a user sets
// (the CLI's flags, the Python keywords), with its help and range.
struct ExperimentOptions {
  // Workload: KIND[:ARGS] (mooncake:FILE, azure:FILE[,...], fanout, agent,
  // repeat, and the named scenarios of hkv/scenarios.h); empty: the bundled
  // conversation trace, data_dir/traces/mooncake_conversation_trace.jsonl.
  std::string workload = {};
  // The first N requests; 0: the whole workload. Unset: the command's
  // default (`hkv compare`: DefaultLimit on the bundled trace).
  std::optional<std::size_t> limit = {};
  double time_scale = 1.0;
  std::optional<double> duration_s = {};
  // Cache: explicit groups, or a deployment resolved by DeploymentConfig.
  std::string groups = {};
  std::uint32_t hash_unit = 0;  // 0: the smallest block
  std::optional<std::uint32_t> num_blocks = {};
  std::optional<std::uint64_t> capacity_tokens = {};
  std::uint32_t dcp = 1;
  std::optional<std::uint32_t> retention_interval = {};
  std::string retention = "reference";  // Retention: reference, placement
  FreeOrder free_order = FreeOrder::kPrependUncached;
  std::string pools = "shared";  // PoolLayout: shared, per-group, workload,
                                 // rebalanced
  std::string key_function = "xxh3_128_cbor";
  // Not null: the run publishes its KV events there (SimulationOptions).
  EventPublisher* kv_events = nullptr;
  std::string model = "glm53-flash-like";
  std::uint32_t tp = 4;
  double budget_gib = 33.0;
  std::string geometry = "2048/256/256";
  // The longest request the deployment plans for (max_model_len); unset:
  // the preset's, else 262,144.
  std::optional<std::uint64_t> context = {};
  // Engine.
  std::uint32_t max_batched_tokens = 8192;
  std::uint32_t max_num_seqs = 256;
  std::uint32_t long_prefill_threshold = 0;
  std::uint32_t concurrency = 16;
  bool open_loop = false;
  // A cluster: engines behind a router (SimulationOptions::instances).
  std::uint32_t instances = 1;
  std::string router = "round-robin";  // Router: ParseRouter's names
  // Offload tiers: ParseTierChain's chains, joined in order.
  std::vector<std::string> tiers = {};
  std::uint32_t spec_drafts = 0;
  double spec_acceptance = 0.0;
  std::uint32_t spec_lookahead = 0;
  std::uint64_t seed = 1;
  // Cost model: a preset, then a JSON file, then KEY=VALUE overrides.
  std::string cost_model = "glm53-flash-gb10x4";
  std::string cost_file = {};
  std::vector<std::string> cost = {};
  // A deployment preset (data/deployments/): its model, TP, DCP, budget,
  // geometry, engine, drafts and cost model, under the fields in `given`.
  std::string preset = {};
  // Output (read by the callers).
  bool json = false;
  bool csv = false;
  bool quiet = false;  // no progress on stderr
  // The options set explicitly (their names in hkv/sim_options.h, e.g.
  // "spec_drafts"): a preset does not override them.
  std::set<std::string> given = {};
  // The folder of the bundled data (traces/), for the default workload.
  std::string data_dir = {};
};

// `hkv compare`: several configurations on one workload.
struct CompareOptions {
  ExperimentOptions sim = {};
  std::vector<std::string> configs = {};     // --config, repeated
  std::string vary = {};                     // --vary NAME=V1,V2,...
  std::vector<std::string> geometries = {};  // --geometry T/R/U, repeated
  std::string objective = "ttft-p50";        // the recommendation's
  bool search = false;     // --search: rank geometries x retention settings
  std::string sweep = {};  // --sweep budget-gib=V1,V2,...
};

// Requests of the bundled trace `hkv compare` runs when no --limit is
// given, whatever other options are.
inline constexpr std::size_t kCompareDefaultLimit = 2000;

// One configuration: a label and its cache; for a deployment, the bytes of
// each group's block, the resolved groups and the capacity.
struct SimConfig {
  std::string label;
  CacheConfig cache;
  std::vector<std::uint64_t> page_bytes = {};
  std::string groups = {};
  std::optional<DeploymentCapacity> capacity = std::nullopt;
  std::uint64_t max_model_len = 0;  // the capacity's context
  // Per-group pools re-split before the run by what the workload keeps
  // cached when nothing is evicted (PoolLayout::kPerGroupByWorkload).
  bool split_pools_by_workload = false;
  // The reference engine's flags for it, or why that engine cannot run it.
  EngineFlags engine = {};
  // The cost model's physical part for this deployment (its model and
  // widths on the cost preset's hardware); none: the cost model's own.
  std::optional<PhysicalCost> physics = std::nullopt;
};

// The workload named by the options, cut by limit (0: all), time_scale and
// duration_s. Errors name the workload: kInvalidArgument for the options
// (an unknown kind, an argument out of range), kIoError for a trace that
// cannot be read, kCorruption for one holding a malformed line.
[[nodiscard]] Result<std::vector<SimRequest>> LoadWorkload(
    const ExperimentOptions& options);

// Names the measured GB10 deployment as the preset of a model-based run
// (no groups, no model given, no preset, and no group-list configuration
// when `uses_groups`), so that the default deployment is the measured one.
void DefaultToMeasured(ExperimentOptions& options, bool uses_groups);

// Sets the fields `options.preset` covers to the preset's values, unless
// given. kNotFound for an unknown preset.
[[nodiscard]] Result<void> ApplyPreset(ExperimentOptions& options);

// The deployment of the options (preset, model, tp, dcp, budget_gib,
// spec_drafts) at `geometry`, through the planner; errors name the flag.
// REQUIRES: CheckSimOptions(options) succeeds (budget in range).
[[nodiscard]] Result<SimConfig> DeploymentConfig(
    const std::string& geometry, const ExperimentOptions& options);

// The cache of the options: groups with num_blocks or capacity_tokens, else
// the deployment at `geometry`.
[[nodiscard]] Result<SimConfig> ConfigFromFlags(
    const ExperimentOptions& options);

// A --config of `hkv compare`: `GROUPS[;unit=U][;blocks=N|;capacity=T]
// [;label=L]` or `geometry=T/R/U[;blocks=N][;label=L]`; what it leaves out
// comes from the options. GROUPS may hold '=' (group options such as
// window=W or mode=all).
[[nodiscard]] Result<SimConfig> ConfigFromSpec(
    const std::string& spec, const ExperimentOptions& options);

// Sets the option of flag `name` (without "--") to `value`, for
// `hkv compare --vary`: the options hkv/sim_options.h marks `varied`.
// kInvalidArgument for another name or a value the flag would refuse.
[[nodiscard]] Result<void> SetSimOption(ExperimentOptions& options,
                                        std::string_view name,
                                        const std::string& value);

// How CheckSimOptions names an option: as the flag (--num-blocks) or as the
// Python keyword (num_blocks).
enum class OptionNames { kFlag, kPython };

// kInvalidArgument naming the first numeric option out of its range
// (hkv/sim_options.h), or json with csv. RunSimulation and
// RunComparison check their options with it (naming flags) first.
[[nodiscard]] Result<void> CheckSimOptions(const ExperimentOptions& options,
                                           OptionNames names);

// kInvalidArgument naming --dcp when a group's block of block x dcp tokens
// (sharded groups) does not fit 32 bits.
[[nodiscard]] Result<void> CheckDcp(const std::vector<GroupSpec>& groups,
                                    std::uint32_t dcp);

// Everything but the cache, from the options. kNotFound for an unknown
// cost model, kInvalidArgument for a --cost override it refuses, kIoError
// and kCorruption for a cost file that cannot be read or holds bad
// coefficients.
[[nodiscard]] Result<SimulationOptions> EngineFromFlags(
    const ExperimentOptions& options);

struct SimRun {
  SimConfig config;
  SimulationResult result;
  double wall_s = 0.0;  // real time of the run
  // A named scenario's figures (hkv/scenarios.h); empty for other workloads.
  std::vector<ScenarioFigure> figures = {};
};

struct SimRuns {
  std::vector<SimRequest> workload = {};
  std::vector<SimRun> runs = {};
  std::string cost_model = {};
};

// Called with a run's label, its finished requests and the total.
using SimProgress = std::function<void(const std::string& label,
                                       std::size_t done, std::size_t total)>;

// `hkv simulate`: the options' one configuration. Returns the first error
// of the workload, the cache or the run, prefixed by the run's label.
[[nodiscard]] Result<SimRuns> RunSimulation(const ExperimentOptions& options,
                                            const SimProgress& progress);

// `hkv compare` with --config, --geometry or --vary: those configurations
// (the --geometry ones after the --config ones), or one option varied, on
// one workload. The bundled trace is cut to kCompareDefaultLimit unless a
// limit is given. kInvalidArgument when none of configs, geometries and
// vary is given (that comparison is RunGeometryComparison, comparison.h).
[[nodiscard]] Result<SimRuns> RunComparison(const CompareOptions& options,
                                            const SimProgress& progress);

}  // namespace hkv
