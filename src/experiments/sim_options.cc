// The table of the simulator's options (hkv/sim_options.h).
#include "hkv/sim_options.h"

#include <algorithm>
#include <limits>
#include <type_traits>

#include "hkv/cost_model.h"
#include "hkv/group_list.h"
#include "hkv/keys.h"
#include "hkv/limits.h"
#include "hkv/numbers.h"

namespace hkv {
namespace {

using hkv::NumberText;
using O = ExperimentOptions;

constexpr std::uint64_t kU32 = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint64_t kU64 = std::numeric_limits<std::uint64_t>::max();
constexpr RealRange kSeconds{0.0, kMaxInputSeconds, true};

template <typename T>
Result<void> Refusal(const Result<T>& parsed) {
  if (!parsed) return tl::unexpected(parsed.error());
  return {};
}
Result<void> CheckGroupList(const std::string& text) {
  return Refusal(ParseGroupList(text));
}
Result<void> CheckKeyFunction(const std::string& text) {
  return Refusal(ParseKeyFunction(text));
}
Result<void> CheckRetention(const std::string& text) {
  return Refusal(ParseRetention(text));
}
Result<void> CheckRouter(const std::string& text) {
  return Refusal(ParseRouter(text));
}
Result<void> CheckTiers(const std::string& text) {
  return Refusal(ParseTierChain(text));
}
Result<void> CheckPools(const std::string& text) {
  return Refusal(ParsePoolLayout(text));
}

std::string WorkloadHelp() {
  return "KIND[:ARGS]: mooncake:FILE, azure:FILE[,prefixes=N,prefix=T,"
         "shared=F,seed=S], fanout[:requests=N,prefix=T,suffix=T,output=T,"
         "interval=S,warmup=0|1,seed=S], "
         "agent[:sessions=N,turns=N,system=T,message=T,"
         "output=T,interval=S,think=S,seed=S], repeat[:requests=N,"
         "prompt=T,output=T,seed=S], and the named scenarios cold-prefill:"
         "prompt=P, resend:prompt=P, shared-prefix:streams=N,prefix=P,"
         "suffix=S, needle:document=D,question=Q[,documents=N,questions=N,"
         "warmup=0|1], decode-cell:concurrency=C,context=X,seconds=S[,turn=T,"
         "turns=N] (each also output=T,seed=S) (default: the bundled "
         "Mooncake conversation trace). Limits: " +
         std::to_string(kMaxRequestsPerWorkload) + " requests, " +
         std::to_string(kMaxTokensPerRequest) +
         " tokens per request (prompt and output), " +
         std::to_string(kMaxTraceLineBytes) + " bytes per trace line; times " +
         "up to " + NumberText(kMaxInputSeconds) + " s";
}

std::vector<SimOption> WorkloadOptions() {
  return {
      {.name = "workload", .field = &O::workload, .help = WorkloadHelp()},
      {.name = "limit",
       .field = &O::limit,
       .help = "Keep the first N requests, read or generated no further (0: "
               "the whole workload)",
       .max = kU64},
      {.name = "time_scale",
       .field = &O::time_scale,
       .help = "Divide arrival times by this (> 1 compresses)",
       .real = kSeconds},
      {.name = "duration_s",
       .field = &O::duration_s,
       .help = "Keep requests arriving in the first S seconds (scaled)",
       .real = kSeconds,
       .flag = "duration"},
  };
}

// A cache by its groups and pool.
std::vector<SimOption> PoolOptions() {
  return {
      {.name = "groups",
       .field = &O::groups,
       .help = "Cache groups (group-list syntax, as `hkv replay`); without "
               "it the deployment flags resolve the cache",
       .check = &CheckGroupList,
       .value_name = "LIST"},
      {.name = "hash_unit",
       .field = &O::hash_unit,
       .help = "Tokens per prefix key (0: the smallest block)",
       .max = kU32,
       .varied = true},
      {.name = "num_blocks",
       .field = &O::num_blocks,
       .help = "Pool size in blocks, null block excluded (at most " +
               std::to_string(kMaxPoolBlocks) + " with it)",
       .min = 1,
       .max = kMaxPoolBlocks - 1,
       .varied = true},
      {.name = "capacity_tokens",
       .field = &O::capacity_tokens,
       .help = "Pool size in tokens: each group gets capacity / its block "
               "blocks",
       .min = 1,
       .max = kU64},
      {.name = "dcp",
       .field = &O::dcp,
       .help = "Decode-context-parallel width",
       .min = 1,
       .max = kU32,
       .varied = true},
      {.name = "retention_interval",
       .field = &O::retention_interval,
       .help = "Sparse retention R (default: keep all states)",
       .max = kU32,
       .varied = true},
      {.name = "retention",
       .field = &O::retention,
       .help = "reference: states and window tails where "
               "--retention-interval says (the reference); placement: one "
               "state per prompt end and per shared-prefix junction, where "
               "a lookup lands (docs/beyond.md)",
       .varied = true,
       .check = &CheckRetention,
       .value_name = "{reference,placement}"},
  };
}

// How the cache frees and keys; a deployment resolved by the planner.
std::vector<SimOption> DeploymentOptions() {
  return {
      {.name = "free_order",
       .field = &O::free_order,
       .help = "Where freed blocks without a key go: prepend-uncached (the "
               "front of the free queue, reused first, as the reference "
               "fork) or append-all (the back, as upstream vLLM)"},
      {.name = "pools",
       .field = &O::pools,
       .help = "shared: one pool, every slot as large as the largest "
               "group's page (the reference); per-group: a pool per group "
               "with its own page, split in proportion to each group's "
               "bytes per request at the context, as hkv plan; workload: "
               "per-group pools re-split by the bytes each group keeps "
               "cached in an unlimited-pool run of the workload first; "
               "rebalanced: per-group's split, and a pool that runs dry "
               "takes the bytes of other pools' oldest free blocks",
       .check = &CheckPools,
       .value_name = "{shared,per-group,workload,rebalanced}"},
      {.name = "key_function",
       .field = &O::key_function,
       .help = "Prefix key digest",
       .check = &CheckKeyFunction,
       .value_name = "{sha256_cbor,xxh3_128_cbor}"},
      {.name = "preset",
       .field = &O::preset,
       .help = "Deployment preset (data/deployments/): its model, TP, DCP, "
               "budget, geometry, engine, drafts and cost model, under the "
               "flags given"},
      {.name = "model",
       .field = &O::model,
       .help = "Model preset of the deployment"},
      {.name = "tp",
       .field = &O::tp,
       .help = "Tensor-parallel width",
       .min = 1,
       .max = kU32,
       .varied = true},
      // Up to a petabyte per rank: the budget in bytes fits 64 bits.
      {.name = "budget_gib",
       .field = &O::budget_gib,
       .help = "KV-cache memory per rank",
       .real = {0.0, 1e6, true},
       .varied = true},
      {.name = "geometry",
       .field = &O::geometry,
       .help = "Page geometry target/recurrent/unit",
       .varied = true},
      {.name = "context",
       .field = &O::context,
       .help = "Longest request the deployment plans for (max_model_len; "
               "default the preset's, else 262144): one must fit the budget",
       .min = 1,
       .max = kMaxTokensPerRequest,
       .varied = true},
  };
}

std::vector<SimOption> EngineOptions() {
  return {
      {.name = "max_batched_tokens",
       .field = &O::max_batched_tokens,
       .help = "Token budget per step",
       .min = 1,
       .max = kU32,
       .varied = true},
      {.name = "max_num_seqs",
       .field = &O::max_num_seqs,
       .help = "Running requests at most",
       .min = 1,
       .max = kU32,
       .varied = true},
      {.name = "long_prefill_threshold",
       .field = &O::long_prefill_threshold,
       .help = "Longest prefill chunk (0: the budget)",
       .max = kU32,
       .varied = true},
      {.name = "concurrency",
       .field = &O::concurrency,
       .help = "Closed loop: requests kept in the system",
       .min = 1,
       .max = kU32,
       .varied = true},
      {.name = "open_loop",
       .field = &O::open_loop,
       .help = "Requests arrive at their trace times instead"},
      {.name = "instances",
       .field = &O::instances,
       .help = "Engines behind one router, each with the whole cache "
               "(docs/cluster.md)",
       .min = 1,
       .max = 1024,
       .varied = true},
      {.name = "router",
       .field = &O::router,
       .help = "How a cluster places requests: round-robin, least-loaded "
               "(modelled queued work), prefix (least prefill counting full "
               "attention's cached chain, as today's routers) or "
               "hybrid-prefix (counting what every group can resume from)",
       .varied = true,
       .check = &CheckRouter,
       .value_name = "{round-robin,least-loaded,prefix,hybrid-prefix}"},
      {.name = "tiers",
       .field = &O::tiers,
       .help = "Offload tier, modelled by capacity, in chain order "
               "(repeatable, or joined by '+'): host:SIZE, disk:SIZE, "
               "redis:SIZE, or none; a cluster's redis tier is shared "
               "(docs/tiers.md)",
       .varied = true,
       .check = &CheckTiers,
       .value_name = "KIND:SIZE[+KIND:SIZE...]",
       .flag = "tier"},
  };
}

std::vector<SimOption> DraftOptions() {
  return {
      {.name = "spec_drafts",
       .field = &O::spec_drafts,
       .help = "Draft tokens per decode (a --model deployment is planned for "
               "as many speculative state blocks)",
       .max = kMaxTokensPerRequest,
       .varied = true},
      {.name = "spec_acceptance",
       .field = &O::spec_acceptance,
       .help = "Probability that each draft is accepted",
       .real = {0.0, 1.0, false},
       .varied = true},
      {.name = "spec_lookahead",
       .field = &O::spec_lookahead,
       .help = "Extra slots allocated per step for drafts",
       .max = kMaxTokensPerRequest,
       .varied = true},
      {.name = "seed",
       .field = &O::seed,
       .help = "Seed of the draft acceptances",
       .max = kU64},
  };
}

// The cost model, and where the bundled data is.
std::vector<SimOption> CostOptions() {
  std::string keys;
  for (std::string_view key : kCostCoefficients) {
    keys += (keys.empty() ? "" : ", ") + std::string(key);
  }
  return {
      {.name = "cost_model",
       .field = &O::cost_model,
       .help = "Cost model preset (modelled step times)"},
      {.name = "cost_file",
       .field = &O::cost_file,
       .help = "JSON object of cost coefficients over the preset (at most " +
               std::to_string(kMaxConfigFileBytes) + " bytes)"},
      {.name = "cost",
       .field = &O::cost,
       .help = "KEY=VALUE coefficient override (" + keys + "; seconds in [0, " +
               NumberText(kMaxInputSeconds) + "])"},
      {.name = "data_dir",
       .field = &O::data_dir,
       .help = "The folder of the bundled data (traces/), for the default "
               "workload",
       .flag = kNoFlag},
  };
}

std::vector<SimOption> MakeTable() {
  std::vector<SimOption> table;
  for (std::vector<SimOption> part :
       {WorkloadOptions(), PoolOptions(), DeploymentOptions(), EngineOptions(),
        DraftOptions(), CostOptions()}) {
    table.insert(table.end(), part.begin(), part.end());
  }
  return table;
}

template <typename... T>
bool HoldsOneOf(const SimOptionField& field) {
  return (std::holds_alternative<T O::*>(field) || ...);
}

}  // namespace

std::string SimOption::Flag() const {
  if (flag == kNoFlag) return "";
  std::string text(flag.empty() ? name : flag);
  std::replace(text.begin(), text.end(), '_', '-');
  return "--" + text;
}

bool SimOption::IsNumber() const {
  return !HoldsOneOf<std::string, std::vector<std::string>, bool, FreeOrder>(
      field);
}

bool SimOption::IsReal() const {
  return HoldsOneOf<double, std::optional<double>>(field);
}

std::span<const SimOption> SimOptions() {
  static const std::vector<SimOption> table = MakeTable();
  return table;
}

const SimOption* FindSimOption(std::string_view name) {
  const std::span<const SimOption> table = SimOptions();
  const auto it =
      std::find_if(table.begin(), table.end(),
                   [name](const SimOption& o) { return o.name == name; });
  return it == table.end() ? nullptr : &*it;
}

}  // namespace hkv
