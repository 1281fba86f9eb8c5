#include "sim_setup.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "hkv/cost_model.h"
#include "hkv/group_list.h"
#include "hkv/keys.h"

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
  sub.add_option("--limit", o.limit, "Keep the first N requests");
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

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Fail(ErrorCode::kIoError, "cannot open " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Result<CostModel> CostFromFlags(const SimCommandOptions& o) {
  Result<CostModel> cost = CostModelPreset(o.cost_model);
  if (!cost) return cost;
  if (!o.cost_file.empty()) {
    Result<std::string> text = ReadFile(o.cost_file);
    if (!text) return tl::unexpected(text.error());
    cost = ApplyCostJson(std::move(*cost), *text);
    if (!cost) return cost;
  }
  for (const std::string& item : o.cost) {
    const std::size_t eq = item.find('=');
    char* end = nullptr;
    const double value = eq == std::string::npos
                             ? 0.0
                             : std::strtod(item.c_str() + eq + 1, &end);
    if (eq == std::string::npos || end == item.c_str() + eq + 1 || *end != 0) {
      return Fail(ErrorCode::kInvalidArgument,
                  "--cost wants KEY=NUMBER, got \"" + item + "\"");
    }
    if (Result<void> ok = SetCostCoefficient(*cost, item.substr(0, eq), value);
        !ok) {
      return tl::unexpected(ok.error());
    }
  }
  return cost;
}

// Usable blocks for `capacity` tokens: per group capacity / its block.
std::uint64_t BlocksForCapacity(const std::vector<GroupSpec>& groups,
                                std::uint32_t dcp, std::uint64_t capacity) {
  std::uint64_t blocks = 0;
  for (const GroupSpec& g : groups) blocks += capacity / TokensPerBlock(g, dcp);
  return blocks;
}

std::uint32_t SmallestBlock(const std::vector<GroupSpec>& groups,
                            std::uint32_t dcp) {
  std::uint64_t unit = std::numeric_limits<std::uint32_t>::max();
  for (const GroupSpec& g : groups)
    unit = std::min(unit, TokensPerBlock(g, dcp));
  return static_cast<std::uint32_t>(unit);
}

struct CacheFields {
  std::string groups;
  std::uint32_t hash_unit = 0;
  std::optional<std::uint64_t> num_blocks;
  std::optional<std::uint64_t> capacity_tokens;
};

Result<CacheConfig> CacheFromGroups(const CacheFields& f,
                                    const SimCommandOptions& o) {
  Result<std::vector<GroupSpec>> groups = ParseGroupList(f.groups);
  if (!groups) return tl::unexpected(groups.error());
  Result<KeyFunction> key = ParseKeyFunction(o.key_function);
  if (!key) return tl::unexpected(key.error());
  std::uint64_t usable = 0;
  if (f.num_blocks) {
    usable = *f.num_blocks;
  } else if (f.capacity_tokens) {
    usable = BlocksForCapacity(*groups, o.dcp, *f.capacity_tokens);
  } else {
    return Fail(ErrorCode::kInvalidArgument,
                "cache groups need --num-blocks or --capacity-tokens");
  }
  if (usable == 0 || usable >= std::numeric_limits<std::uint32_t>::max()) {
    return Fail(ErrorCode::kInvalidArgument,
                "a pool of " + std::to_string(usable) +
                    " usable blocks is empty or too large");
  }
  const std::uint32_t unit =
      f.hash_unit != 0 ? f.hash_unit : SmallestBlock(*groups, o.dcp);
  CacheConfig config{.groups = std::move(*groups),
                     .num_blocks = static_cast<std::uint32_t>(usable + 1),
                     .keys = {.function = *key, .hash_unit = unit},
                     .dcp = o.dcp,
                     .retention_interval = o.retention_interval,
                     .free_order = o.free_order};
  if (Result<void> ok = config.Validate(); !ok)
    return tl::unexpected(ok.error());
  return config;
}

Result<SimConfig> ConfigOfGroups(const CacheFields& f,
                                 const SimCommandOptions& o) {
  Result<CacheConfig> cache = CacheFromGroups(f, o);
  if (!cache) return tl::unexpected(cache.error());
  return SimConfig{.label = f.groups, .cache = std::move(*cache)};
}

// The flags --vary can set, each with its setter of a value >= 0.
using Setter = void (*)(SimCommandOptions&, double);
struct VariedFlag {
  std::string_view name;
  Setter set;
};
template <typename T>
T As(double v) {
  return static_cast<T>(v);
}
constexpr VariedFlag kVariedFlags[] = {
    {"concurrency",
     [](auto& o, double v) { o.concurrency = As<std::uint32_t>(v); }},
    {"max-batched-tokens",
     [](auto& o, double v) { o.max_batched_tokens = As<std::uint32_t>(v); }},
    {"max-num-seqs",
     [](auto& o, double v) { o.max_num_seqs = As<std::uint32_t>(v); }},
    {"long-prefill-threshold",
     [](auto& o, double v) {
       o.long_prefill_threshold = As<std::uint32_t>(v);
     }},
    {"spec-drafts",
     [](auto& o, double v) { o.spec_drafts = As<std::uint32_t>(v); }},
    {"spec-acceptance", [](auto& o, double v) { o.spec_acceptance = v; }},
    {"spec-lookahead",
     [](auto& o, double v) { o.spec_lookahead = As<std::uint32_t>(v); }},
    {"retention-interval",
     [](auto& o, double v) { o.retention_interval = As<std::uint32_t>(v); }},
    {"num-blocks",
     [](auto& o, double v) { o.num_blocks = As<std::uint32_t>(v); }},
    {"hash-unit",
     [](auto& o, double v) { o.hash_unit = As<std::uint32_t>(v); }},
    {"dcp", [](auto& o, double v) { o.dcp = As<std::uint32_t>(v); }},
    {"tp", [](auto& o, double v) { o.tp = As<std::uint32_t>(v); }},
    {"budget-gib", [](auto& o, double v) { o.budget_gib = v; }},
};

}  // namespace

Result<void> SetSimOption(SimCommandOptions& options, std::string_view name,
                          const std::string& value) {
  if (name == "geometry") {
    options.geometry = value;
    return {};
  }
  for (const VariedFlag& flag : kVariedFlags) {
    if (flag.name != name) continue;
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || *end != 0 || !(v >= 0.0) || v > 4e9) {
      return Fail(ErrorCode::kInvalidArgument, "--vary " + std::string(name) +
                                                   ": \"" + value +
                                                   "\" is not a number >= 0");
    }
    flag.set(options, v);
    return {};
  }
  return Fail(ErrorCode::kInvalidArgument,
              "--vary cannot vary \"" + std::string(name) + "\" (see --help)");
}

Result<KeyValues> ParseKeyValues(std::string_view text, char separator) {
  KeyValues out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(separator, start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(start, end - start);
    const std::size_t eq = item.find('=');
    // An item without '=' is the positional value, under key "".
    std::string key(eq == std::string_view::npos ? "" : item.substr(0, eq));
    std::string value(eq == std::string_view::npos ? item
                                                   : item.substr(eq + 1));
    if (!out.emplace(std::move(key), std::move(value)).second) {
      return Fail(ErrorCode::kInvalidArgument, "\"" + std::string(item) +
                                                   "\" given twice in \"" +
                                                   std::string(text) + "\"");
    }
    start = end + 1;
  }
  return out;
}

Result<std::uint64_t> TakeNumber(KeyValues& fields, const std::string& key,
                                 std::uint64_t fallback) {
  auto it = fields.find(key);
  if (it == fields.end()) return fallback;
  const std::string text = std::move(it->second);
  fields.erase(it);
  std::uint64_t value = 0;
  const auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return Fail(ErrorCode::kInvalidArgument,
                key + "=" + text + " is not a whole number");
  }
  return value;
}

void AddSimOptions(CLI::App& sub, SimCommandOptions& options) {
  AddWorkloadOptions(sub, options);
  AddCacheOptions(sub, options);
  AddEngineOptions(sub, options);
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

Result<SimConfig> ConfigFromFlags(const SimCommandOptions& o) {
  if (o.groups.empty()) {
    Result<SimConfig> config = DeploymentConfig(o.geometry, o);
    if (config && o.num_blocks) config->cache.num_blocks = *o.num_blocks + 1;
    return config;
  }
  return ConfigOfGroups({.groups = o.groups,
                         .hash_unit = o.hash_unit,
                         .num_blocks = o.num_blocks,
                         .capacity_tokens = o.capacity_tokens},
                        o);
}

Result<SimConfig> ConfigFromSpec(const std::string& spec,
                                 const SimCommandOptions& o) {
  Result<KeyValues> fields = ParseKeyValues(spec, ';');
  if (!fields) return tl::unexpected(fields.error());
  KeyValues& f = *fields;
  const std::string label = f.count("label") ? f["label"] : spec;
  const std::string geometry = f.count("geometry") ? f["geometry"] : "";
  CacheFields cache{.groups = f.count("") ? f[""] : "",
                    .num_blocks = o.num_blocks,
                    .capacity_tokens = o.capacity_tokens};
  Result<std::uint64_t> unit = TakeNumber(f, "unit", o.hash_unit);
  Result<std::uint64_t> blocks = TakeNumber(f, "blocks", 0);
  Result<std::uint64_t> capacity = TakeNumber(f, "capacity", 0);
  for (const auto* r : {&unit, &blocks, &capacity}) {
    if (!*r) return tl::unexpected(r->error());
  }
  for (const char* key : {"label", "geometry", ""}) f.erase(key);
  if (!f.empty() || geometry.empty() == cache.groups.empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "--config \"" + spec +
                    "\" wants GROUPS[;unit=U][;blocks=N|;capacity=T]"
                    "[;label=L] or geometry=T/R/U[;blocks=N][;label=L]");
  }
  cache.hash_unit = static_cast<std::uint32_t>(*unit);
  if (*blocks != 0) cache.num_blocks = *blocks;
  if (*capacity != 0) cache.capacity_tokens = *capacity;
  Result<SimConfig> config = geometry.empty() ? ConfigOfGroups(cache, o)
                                              : DeploymentConfig(geometry, o);
  if (!config) return tl::unexpected(config.error());
  if (!geometry.empty() && *blocks != 0) {
    config->cache.num_blocks = static_cast<std::uint32_t>(*blocks + 1);
  }
  config->label = label;
  return config;
}

Result<SimulationOptions> EngineFromFlags(const SimCommandOptions& o) {
  Result<CostModel> cost = CostFromFlags(o);
  if (!cost) return tl::unexpected(cost.error());
  return SimulationOptions{
      .cost = std::move(*cost),
      .limits = {.max_num_batched_tokens = o.max_batched_tokens,
                 .max_num_seqs = o.max_num_seqs,
                 .long_prefill_threshold = o.long_prefill_threshold},
      .speculation = {.num_drafts = o.spec_drafts,
                      .acceptance_rate = o.spec_acceptance,
                      .lookahead_slots = o.spec_lookahead,
                      .seed = o.seed},
      .arrivals =
          o.open_loop ? ArrivalMode::kOpenLoop : ArrivalMode::kClosedLoop,
      .concurrency = o.concurrency};
}

}  // namespace hkv::cli
