// What the simulator is told to simulate when it is given a model instead of
// cache groups: a model preset, its tensor-parallel width, the KV-cache
// memory budget of one rank and a page geometry (target block / recurrent
// block / hash unit), resolved into the CacheConfig the simulator drives.
//
// ResolveCacheConfig asks the capacity planner (include/hkv/planner.h):
// its groups become cache groups and its shared pool's blocks the pool.
//
// Thread-safety: value types and pure functions.
//
// Example:
//   Result<CacheConfig> config = ResolveCacheConfig(
//       {.model = "glm53-flash-like", .tp = 4, .budget_bytes = 33ull << 30,
//        .target_block = 2048, .recurrent_block = 256, .hash_unit = 256});
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "hkv/cache_manager.h"
#include "hkv/result.h"

namespace hkv {

struct DeploymentSpec {
  std::string model = "glm53-flash-like";
  std::uint32_t tp = 4;
  std::uint32_t dcp = 1;
  std::uint64_t budget_bytes = std::uint64_t{33} << 30;
  // The longest request planned for: one must fit the budget.
  std::uint64_t context_tokens = 262144;
  // Draft tokens per decode step the engine runs with (recurrent groups
  // keep as many speculative state blocks, and convolution states grow with
  // them); unset: the model's draft.
  std::optional<std::uint32_t> speculative_tokens = std::nullopt;
  // Page geometry, tokens per block on one rank.
  std::uint32_t target_block = 2048;
  std::uint32_t recurrent_block = 256;
  std::uint32_t hash_unit = 256;
};

// Parses "target/recurrent/unit", e.g. "2048/256/256", into `spec`'s
// geometry. kInvalidArgument naming the text otherwise.
[[nodiscard]] Result<void> ParsePageGeometry(std::string_view text,
                                             DeploymentSpec& spec);

// The cache groups and block count of `spec`, as the capacity planner lays
// them out in the shared pool: one group per planned group (attention at the
// target block, DCP-sharded; recurrent states at the recurrent block, with
// the engine's draft tokens as speculative state blocks; groups holding
// draft layers feed an EAGLE-style draft), the planned blocks, the resolved
// hash unit, xxh3 keys. Returns the planner's error (an unknown model, a
// geometry it rejects, a budget that holds no request) otherwise.
[[nodiscard]] Result<CacheConfig> ResolveCacheConfig(
    const DeploymentSpec& spec);

}  // namespace hkv
