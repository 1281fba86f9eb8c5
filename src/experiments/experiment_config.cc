// The caches and engines of the experiments (hkv/experiment.h): explicit
// groups or a deployment, a --config spec, the cost model and engine.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "engine/sim_stats.h"
#include "experiments/experiment_util.h"
#include "hkv/cost_model.h"
#include "hkv/experiment.h"
#include "hkv/group_list.h"
#include "hkv/keys.h"
#include "hkv/limits.h"
#include "hkv/numbers.h"

namespace hkv {
namespace {

using hkv::Named;
using hkv::ReadSmallFile;
using internal::KeyValues;
using internal::ParseKeyValues;
using internal::TakeNumber;

Result<CostModel> CostFromFlags(const ExperimentOptions& o) {
  Result<CostModel> cost = CostModelPreset(o.cost_model);
  if (!cost) return Named("--cost-model", cost.error());
  if (!o.cost_file.empty()) {
    Result<std::string> text = ReadSmallFile(o.cost_file, kMaxConfigFileBytes);
    if (!text) return Named("--cost-file", text.error());
    cost = ApplyCostJson(std::move(*cost), *text);
    if (!cost) {  // the file's content, not an argument
      return Fail(ErrorCode::kCorruption,
                  "--cost-file " + o.cost_file + ": " + cost.error().message);
    }
  }
  for (const std::string& item : o.cost) {
    const std::size_t eq = item.find('=');
    double value = 0.0;
    const char* end = item.data() + item.size();
    const bool number =
        eq != std::string::npos &&
        std::from_chars(item.data() + eq + 1, end, value).ptr == end &&
        eq + 1 < item.size();
    if (!number) {
      return Fail(ErrorCode::kInvalidArgument,
                  "--cost wants KEY=NUMBER, got \"" + item + "\"");
    }
    if (Result<void> ok = SetCostCoefficient(*cost, item.substr(0, eq), value);
        !ok) {
      return Named("--cost " + item, ok.error());
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
  for (const GroupSpec& g : groups) {
    unit = std::min(unit, TokensPerBlock(g, dcp));
  }
  return static_cast<std::uint32_t>(unit);
}

// The pool of an explicit cache: where each field came from, for errors
// (a flag, or a --config spec's key).
struct CacheFields {
  std::string groups = {};
  std::uint32_t hash_unit = 0;
  std::optional<std::uint64_t> num_blocks = std::nullopt;
  std::optional<std::uint64_t> capacity_tokens = std::nullopt;
  // How errors name the fields: a flag and a space, or a key and '='.
  std::string groups_name = "--groups ";
  std::string blocks_name = "--num-blocks ";
  std::string capacity_name = "--capacity-tokens ";
};

Result<std::uint32_t> UsableBlocks(const CacheFields& f,
                                   const std::vector<GroupSpec>& groups,
                                   std::uint32_t dcp) {
  constexpr std::uint64_t kMax = kMaxPoolBlocks - 1;  // the null block
  if (f.num_blocks) {
    if (*f.num_blocks >= 1 && *f.num_blocks <= kMax) {
      return static_cast<std::uint32_t>(*f.num_blocks);
    }
    return Fail(ErrorCode::kInvalidArgument,
                f.blocks_name + std::to_string(*f.num_blocks) +
                    " is not in [1, " + std::to_string(kMax) +
                    "] (the limit of blocks per pool, null block excluded)");
  }
  if (!f.capacity_tokens) {
    return Fail(ErrorCode::kInvalidArgument,
                "cache groups need --num-blocks or --capacity-tokens");
  }
  const std::uint64_t usable =
      BlocksForCapacity(groups, dcp, *f.capacity_tokens);
  if (usable >= 1 && usable <= kMax) return static_cast<std::uint32_t>(usable);
  return Fail(ErrorCode::kInvalidArgument,
              f.capacity_name + std::to_string(*f.capacity_tokens) + " gives " +
                  std::to_string(usable) + " usable blocks, not in " + "[1, " +
                  std::to_string(kMax) +
                  "] (the limit of blocks per pool, null block excluded)");
}

Result<CacheConfig> CacheFromGroups(const CacheFields& f,
                                    const ExperimentOptions& o,
                                    PoolLayout pools) {
  Result<std::vector<GroupSpec>> groups = ParseGroupList(f.groups);
  if (!groups) return Named(f.groups_name + f.groups, groups.error());
  Result<KeyFunction> key = ParseKeyFunction(o.key_function);
  if (!key) return Named("--key-function", key.error());
  Result<Retention> retention = ParseRetention(o.retention);
  if (!retention) return Named("--retention", retention.error());
  if (Result<void> ok = CheckDcp(*groups, o.dcp); !ok) {
    return tl::unexpected(ok.error());
  }
  Result<std::uint32_t> usable = UsableBlocks(f, *groups, o.dcp);
  if (!usable) return tl::unexpected(usable.error());
  const std::uint32_t unit =
      f.hash_unit != 0 ? f.hash_unit : SmallestBlock(*groups, o.dcp);
  CacheConfig config{.groups = std::move(*groups),
                     .num_blocks = *usable + 1,
                     .keys = {.function = *key, .hash_unit = unit},
                     .dcp = o.dcp,
                     .retention_interval = o.retention_interval,
                     .retention = *retention,
                     .free_order = o.free_order};
  if (pools != PoolLayout::kShared) {
    config.group_pool_blocks = internal::SplitIntoGroupPools(config, *usable);
    if (config.group_pool_blocks.empty()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "--pools per-group: " + std::to_string(*usable) +
                      " blocks leave a group no block");
    }
    // Without page bytes, a block of any group is worth one of another.
    if (pools == PoolLayout::kRebalanced) {
      config.pool_slot_bytes.assign(config.groups.size(), 1);
    }
  }
  if (Result<void> ok = config.Validate(); !ok) {
    return tl::unexpected(ok.error());
  }
  return config;
}

Result<SimConfig> ConfigOfGroups(const CacheFields& f,
                                 const ExperimentOptions& o) {
  Result<PoolLayout> pools = ParsePoolLayout(o.pools);
  if (!pools) return Named("--pools", pools.error());
  Result<CacheConfig> cache = CacheFromGroups(f, o, *pools);
  if (!cache) return tl::unexpected(cache.error());
  EngineFlags engine = EngineFlagsFor(
      *cache, {.tp = o.tp, .context_tokens = o.context.value_or(0)});
  return SimConfig{
      .label = f.groups,
      .cache = std::move(*cache),
      .split_pools_by_workload = *pools == PoolLayout::kPerGroupByWorkload,
      .engine = std::move(engine)};
}

}  // namespace

Result<void> CheckDcp(const std::vector<GroupSpec>& groups, std::uint32_t dcp) {
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const std::uint64_t tokens = TokensPerBlock(groups[g], dcp);
    if (tokens > std::numeric_limits<std::uint32_t>::max()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "--dcp " + std::to_string(dcp) + ": group " +
                      std::to_string(g) + "'s block of " +
                      std::to_string(groups[g].block_size) + " tokens x " +
                      std::to_string(dcp) + " = " + std::to_string(tokens) +
                      " tokens exceeds 2^32 - 1");
    }
  }
  return {};
}

// A deployment's pool set to `usable` blocks; refused for per-group pools,
// whose split the planner makes from the budget.
Result<void> SetDeploymentBlocks(SimConfig& config, std::uint32_t usable,
                                 const std::string& name) {
  if (!config.cache.group_pool_blocks.empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                name +
                    " with --pools per-group: the planner splits the "
                    "budget between the pools; set --budget-gib instead");
  }
  config.cache.num_blocks = usable + 1;
  return {};
}

Result<SimConfig> ConfigFromFlags(const ExperimentOptions& o) {
  if (o.groups.empty()) {
    Result<SimConfig> config = DeploymentConfig(o.geometry, o);
    if (!config) return config;
    if (o.num_blocks) {
      Result<std::uint32_t> usable = UsableBlocks({.num_blocks = o.num_blocks},
                                                  config->cache.groups, o.dcp);
      if (!usable) return tl::unexpected(usable.error());
      Result<void> ok = SetDeploymentBlocks(*config, *usable, "--num-blocks");
      if (!ok) return tl::unexpected(ok.error());
    }
    return config;
  }
  return ConfigOfGroups({.groups = o.groups,
                         .hash_unit = o.hash_unit,
                         .num_blocks = o.num_blocks,
                         .capacity_tokens = o.capacity_tokens},
                        o);
}

Result<SimConfig> ConfigFromSpec(const std::string& spec,
                                 const ExperimentOptions& o) {
  Result<KeyValues> fields = ParseKeyValues(spec, ';');
  if (!fields) return tl::unexpected(fields.error());
  KeyValues& f = *fields;
  const std::string label = f.count("label") ? f["label"] : spec;
  const std::string geometry = f.count("geometry") ? f["geometry"] : "";
  CacheFields cache{.groups = f.count("") ? f[""] : "",
                    .num_blocks = o.num_blocks,
                    .capacity_tokens = o.capacity_tokens,
                    .groups_name = "groups ",
                    .blocks_name = "blocks=",
                    .capacity_name = "capacity="};
  Result<std::uint64_t> unit = TakeNumber(
      f, "unit", o.hash_unit, std::numeric_limits<std::uint32_t>::max());
  Result<std::uint64_t> blocks = TakeNumber(f, "blocks", 0, kMaxPoolBlocks - 1);
  Result<std::uint64_t> capacity =
      TakeNumber(f, "capacity", 0, std::numeric_limits<std::uint64_t>::max());
  for (const auto* r : {&unit, &blocks, &capacity}) {
    if (!*r) return Named("--config " + spec, r->error());
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
  if (!config) return Named("--config " + spec, config.error());
  if (!geometry.empty() && *blocks != 0) {
    Result<void> ok = SetDeploymentBlocks(
        *config, static_cast<std::uint32_t>(*blocks), "blocks=");
    if (!ok) return Named("--config " + spec, ok.error());
  }
  config->label = label;
  return config;
}

// The options' tier chains, joined in order; errors name --tier.
Result<std::vector<TierSpec>> TiersFromFlags(const ExperimentOptions& o) {
  std::vector<TierSpec> chain;
  for (const std::string& text : o.tiers) {
    Result<std::vector<TierSpec>> part = ParseTierChain(text);
    if (!part) return Named("--tier", part.error());
    chain.insert(chain.end(), part->begin(), part->end());
  }
  return chain;
}

Result<SimulationOptions> EngineFromFlags(const ExperimentOptions& o) {
  Result<CostModel> cost = CostFromFlags(o);
  if (!cost) return tl::unexpected(cost.error());
  Result<Router> router = ParseRouter(o.router);
  if (!router) return tl::unexpected(router.error());
  Result<std::vector<TierSpec>> tiers = TiersFromFlags(o);
  if (!tiers) return tl::unexpected(tiers.error());
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
      .concurrency = o.concurrency,
      .kv_events = o.kv_events,
      .instances = o.instances,
      .router = *router,
      .tiers = std::move(*tiers)};
}

}  // namespace hkv
