// The caches and engines of the experiments (hkv/experiment.h): explicit
// groups or a deployment, a --config spec, the cost model and engine.
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
#include "hkv/experiment.h"
#include "hkv/group_list.h"
#include "hkv/keys.h"
#include "sim/experiment_util.h"

namespace hkv {
namespace {

using internal::KeyValues;
using internal::ParseKeyValues;
using internal::TakeNumber;

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Fail(ErrorCode::kIoError, "cannot open " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Result<CostModel> CostFromFlags(const ExperimentOptions& o) {
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
                                    const ExperimentOptions& o) {
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
                                 const ExperimentOptions& o) {
  Result<CacheConfig> cache = CacheFromGroups(f, o);
  if (!cache) return tl::unexpected(cache.error());
  return SimConfig{.label = f.groups, .cache = std::move(*cache)};
}

}  // namespace

Result<SimConfig> ConfigFromFlags(const ExperimentOptions& o) {
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
                                 const ExperimentOptions& o) {
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

Result<SimulationOptions> EngineFromFlags(const ExperimentOptions& o) {
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

}  // namespace hkv
