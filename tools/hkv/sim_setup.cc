// The flags of `hkv simulate` and `hkv compare`.
#include "sim_setup.h"

#include <algorithm>
#include <string>

namespace hkv::cli {
namespace {

void AddWorkloadOptions(CLI::App& sub, SimCommandOptions& o) {
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
      "conversation trace)");
  sub.add_option("--limit", o.limit,
                 "Keep the first N requests (0: the whole workload)");
  sub.add_option("--time-scale", o.time_scale,
                 "Divide arrival times by this (> 1 compresses)")
      ->capture_default_str();
  sub.add_option("--duration", o.duration_s,
                 "Keep requests arriving in the first S seconds (scaled)");
}

void AddCacheOptions(CLI::App& sub, SimCommandOptions& o) {
  sub.add_option("--groups", o.groups,
                 "Cache groups (group-list syntax, as `hkv replay`); "
                 "without it the deployment flags resolve the cache");
  sub.add_option("--hash-unit", o.hash_unit,
                 "Tokens per prefix key (0: the smallest block)")
      ->capture_default_str();
  sub.add_option("--num-blocks", o.num_blocks,
                 "Pool size in blocks, null block excluded");
  sub.add_option("--capacity-tokens", o.capacity_tokens,
                 "Pool size in tokens: each group gets capacity / its "
                 "block blocks");
  sub.add_option("--dcp", o.dcp, "Decode-context-parallel width")
      ->capture_default_str();
  sub.add_option("--retention-interval", o.retention_interval,
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
  sub.add_option("--tp", o.tp, "Tensor-parallel width")->capture_default_str();
  sub.add_option("--budget-gib", o.budget_gib, "KV-cache memory per rank")
      ->capture_default_str();
  sub.add_option("--geometry", o.geometry,
                 "Page geometry target/recurrent/unit")
      ->capture_default_str();
}

void AddEngineOptions(CLI::App& sub, SimCommandOptions& o) {
  sub.add_option("--max-batched-tokens", o.max_batched_tokens,
                 "Token budget per step")
      ->capture_default_str();
  sub.add_option("--max-num-seqs", o.max_num_seqs, "Running requests at most")
      ->capture_default_str();
  sub.add_option("--long-prefill-threshold", o.long_prefill_threshold,
                 "Longest prefill chunk (0: the budget)")
      ->capture_default_str();
  sub.add_option("--concurrency", o.concurrency,
                 "Closed loop: requests kept in the system")
      ->capture_default_str();
  sub.add_flag("--open-loop", o.open_loop,
               "Requests arrive at their trace times instead");
  sub.add_option("--spec-drafts", o.spec_drafts,
                 "Draft tokens per decode (a --model deployment is planned for "
                 "as many speculative state blocks)")
      ->capture_default_str();
  sub.add_option("--spec-acceptance", o.spec_acceptance,
                 "Probability that each draft is accepted")
      ->capture_default_str();
  sub.add_option("--spec-lookahead", o.spec_lookahead,
                 "Extra slots allocated per step for drafts")
      ->capture_default_str();
  sub.add_option("--seed", o.seed, "Seed of the draft acceptances")
      ->capture_default_str();
  sub.add_option("--cost-model", o.cost_model,
                 "Cost model preset (modelled step times)")
      ->capture_default_str();
  sub.add_option("--cost-file", o.cost_file,
                 "JSON object of cost coefficients over the preset");
  sub.add_option("--cost", o.cost,
                 "KEY=VALUE coefficient override (step_s, prefill_token_s, "
                 "prefill_attention_s, decode_token_s, decode_context_s)");
  sub.add_flag("--json", o.json, "Print JSON");
  sub.add_flag("--csv", o.csv, "Print CSV");
}

}  // namespace

void AddSimOptions(CLI::App& sub, SimCommandOptions& options) {
  AddWorkloadOptions(sub, options);
  AddCacheOptions(sub, options);
  AddEngineOptions(sub, options);
  // HKV_DATA_DIR is the source tree's data/ folder.
  options.data_dir = HKV_DATA_DIR;
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
