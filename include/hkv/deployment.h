// What the simulator is told to simulate when it is given a model instead of
// cache groups: a model preset, its tensor-parallel width, the KV-cache
// memory budget of one rank and a page geometry (target block / recurrent
// block / hash unit), resolved into the CacheConfig the simulator drives.
//
// ResolveCacheConfig is the one place where the capacity planner plugs in
// (model + TP + budget + geometry -> groups and block count). Until it
// does, it knows only the built-in comparison's stand-in figures (see
// docs/simulator.md, "The default comparison").
//
// Thread-safety: value types and pure functions.
//
// Example:
//   Result<CacheConfig> config = ResolveCacheConfig(
//       {.model = "glm53-flash-like", .tp = 4, .budget_bytes = 33ull << 30,
//        .target_block = 2048, .recurrent_block = 256, .hash_unit = 256});
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "hkv/cache_manager.h"
#include "hkv/result.h"

namespace hkv {

struct DeploymentSpec {
  std::string model = "glm53-flash-like";
  std::uint32_t tp = 4;
  std::uint64_t budget_bytes = std::uint64_t{33} << 30;
  // Page geometry, tokens per block on one rank.
  std::uint32_t target_block = 2048;
  std::uint32_t recurrent_block = 256;
  std::uint32_t hash_unit = 256;
};

// Parses "target/recurrent/unit", e.g. "2048/256/256", into `spec`'s
// geometry. kInvalidArgument naming the text otherwise.
[[nodiscard]] Result<void> ParsePageGeometry(std::string_view text,
                                             DeploymentSpec& spec);

// The cache groups and block count of `spec`. Returns kNotFound, naming
// what is known, for a deployment the stand-in table lacks.
[[nodiscard]] Result<CacheConfig> ResolveCacheConfig(
    const DeploymentSpec& spec);

}  // namespace hkv
