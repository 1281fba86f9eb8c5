// The flags of `hkv simulate` and `hkv compare`: each numeric flag checked
// against its range in the library's table (sim/experiment_util.h), which
// CheckSimOptions and --vary share.
#include "sim_setup.h"

#include <algorithm>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "data_dir.h"
#include "hkv/cost_model.h"
#include "hkv/group_list.h"
#include "hkv/limits.h"
#include "numbers.h"
#include "sim/experiment_util.h"

namespace hkv::cli {
namespace {

using internal::NumberFlag;
using O = SimCommandOptions;

const NumberFlag& Flag(std::string_view name) {
  const std::span<const NumberFlag> flags = internal::NumberFlags();
  const auto it =
      std::find_if(flags.begin(), flags.end(),
                   [name](const NumberFlag& f) { return f.name == name; });
  if (it == flags.end()) {  // a bug here, not bad input
    throw std::logic_error("no numeric flag --" + std::string(name));
  }
  return *it;
}

// Adds numeric flag `name` with its range check.
CLI::Option* AddNumber(CLI::App& sub, O& o, std::string_view name,
                       const std::string& help) {
  const NumberFlag& flag = Flag(name);
  CLI::Option* option = std::visit(
      [&](auto field) {
        return sub.add_option("--" + std::string(name), o.*field, help);
      },
      flag.field);
  return option->check(flag.IsReal() ? RealIn(flag.real)
                                     : WholeIn(flag.min, flag.max));
}

void AddWorkloadOptions(CLI::App& sub, O& o) {
  sub.add_option(
      "--workload", o.workload,
      "KIND[:ARGS]: mooncake:FILE, azure:FILE[,prefixes=N,prefix=T,"
      "shared=F,seed=S], fanout[:requests=N,prefix=T,suffix=T,output=T,"
      "interval=S,warmup=0|1,seed=S], "
      "agent[:sessions=N,turns=N,system=T,message=T,"
      "output=T,interval=S,think=S,seed=S], repeat[:requests=N,"
      "prompt=T,output=T,seed=S], and the named scenarios cold-prefill:"
      "prompt=P, resend:prompt=P, shared-prefix:streams=N,prefix=P,suffix=S, "
      "needle:document=D,question=Q[,documents=N,questions=N,warmup=0|1], "
      "decode-cell:concurrency=C,context=X,seconds=S[,turn=T,turns=N] "
      "(each also output=T,seed=S) (default: the bundled Mooncake "
      "conversation trace). Limits: " +
          std::to_string(kMaxRequestsPerWorkload) + " requests, " +
          std::to_string(kMaxTokensPerRequest) +
          " tokens per request (prompt and output), " +
          std::to_string(kMaxTraceLineBytes) +
          " bytes per trace line; times up to " + NumberText(kMaxInputSeconds) +
          " s");
  AddNumber(sub, o, "limit",
            "Keep the first N requests, read or generated no further (0: the "
            "whole workload)");
  AddNumber(sub, o, "time-scale",
            "Divide arrival times by this (> 1 compresses)")
      ->capture_default_str();
  AddNumber(sub, o, "duration",
            "Keep requests arriving in the first S seconds (scaled)");
}

void AddCacheOptions(CLI::App& sub, O& o) {
  sub.add_option("--groups", o.groups,
                 "Cache groups (group-list syntax, as `hkv replay`); "
                 "without it the deployment flags resolve the cache")
      ->check(CLI::Validator(
          [](std::string& text) {
            Result<std::vector<GroupSpec>> groups = ParseGroupList(text);
            return groups ? std::string() : groups.error().message;
          },
          "LIST"));
  AddNumber(sub, o, "hash-unit",
            "Tokens per prefix key (0: the smallest block)")
      ->capture_default_str();
  AddNumber(sub, o, "num-blocks",
            "Pool size in blocks, null block excluded (at most " +
                std::to_string(kMaxPoolBlocks) + " with it)");
  AddNumber(sub, o, "capacity-tokens",
            "Pool size in tokens: each group gets capacity / its block "
            "blocks");
  AddNumber(sub, o, "dcp", "Decode-context-parallel width")
      ->capture_default_str();
  AddNumber(sub, o, "retention-interval",
            "Sparse retention R (default: keep all states)");
  AddFreeOrderOption(sub, o.free_order);
  sub.add_option("--key-function", o.key_function, "Prefix key digest")
      ->check(CLI::IsMember({"sha256_cbor", "xxh3_128_cbor"}))
      ->capture_default_str();
  sub.add_option("--preset", o.preset,
                 "Deployment preset (data/deployments/): its model, TP, DCP, "
                 "budget, geometry, engine, drafts and cost model, under the "
                 "flags given");
  sub.add_option("--model", o.model, "Model preset of the deployment")
      ->capture_default_str();
  AddNumber(sub, o, "tp", "Tensor-parallel width")->capture_default_str();
  AddNumber(sub, o, "budget-gib", "KV-cache memory per rank")
      ->capture_default_str();
  sub.add_option("--geometry", o.geometry,
                 "Page geometry target/recurrent/unit")
      ->capture_default_str();
}

void AddEngineOptions(CLI::App& sub, O& o) {
  AddNumber(sub, o, "max-batched-tokens", "Token budget per step")
      ->capture_default_str();
  AddNumber(sub, o, "max-num-seqs", "Running requests at most")
      ->capture_default_str();
  AddNumber(sub, o, "long-prefill-threshold",
            "Longest prefill chunk (0: the budget)")
      ->capture_default_str();
  AddNumber(sub, o, "concurrency", "Closed loop: requests kept in the system")
      ->capture_default_str();
  sub.add_flag("--open-loop", o.open_loop,
               "Requests arrive at their trace times instead");
  AddNumber(sub, o, "spec-drafts",
            "Draft tokens per decode (a --model deployment is planned for "
            "as many speculative state blocks)")
      ->capture_default_str();
  AddNumber(sub, o, "spec-acceptance",
            "Probability that each draft is accepted")
      ->capture_default_str();
  AddNumber(sub, o, "spec-lookahead",
            "Extra slots allocated per step for drafts")
      ->capture_default_str();
  AddNumber(sub, o, "seed", "Seed of the draft acceptances")
      ->capture_default_str();
}

void AddCostAndOutputOptions(CLI::App& sub, O& o) {
  sub.add_option("--cost-model", o.cost_model,
                 "Cost model preset (modelled step times)")
      ->capture_default_str();
  sub.add_option("--cost-file", o.cost_file,
                 "JSON object of cost coefficients over the preset (at most " +
                     std::to_string(kMaxConfigFileBytes) + " bytes)");
  std::string keys;
  for (std::string_view key : kCostCoefficients) {
    keys += (keys.empty() ? "" : ", ") + std::string(key);
  }
  sub.add_option("--cost", o.cost,
                 "KEY=VALUE coefficient override (" + keys +
                     "; seconds in [0, " + NumberText(kMaxInputSeconds) + "])");
  CLI::Option* json = sub.add_flag("--json", o.json, "Print JSON");
  sub.add_flag("--csv", o.csv, "Print CSV")->excludes(json);
}

}  // namespace

void AddSimOptions(CLI::App& sub, SimCommandOptions& options) {
  AddWorkloadOptions(sub, options);
  AddCacheOptions(sub, options);
  AddEngineOptions(sub, options);
  AddCostAndOutputOptions(sub, options);
  options.data_dir = DataDir();
  // The flags given (as field names), which a preset does not override.
  sub.parse_complete_callback([&sub, &options] {
    for (const CLI::Option* opt : sub.get_options()) {
      if (opt->count() == 0) continue;
      std::string name = opt->get_name();
      name.erase(0, name.find_first_not_of('-'));
      std::replace(name.begin(), name.end(), '-', '_');
      options.given.insert(name);
    }
  });
}

}  // namespace hkv::cli
