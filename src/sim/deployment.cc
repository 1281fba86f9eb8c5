#include "hkv/deployment.h"

#include <charconv>
#include <string>
#include <vector>

#include "hkv/group_list.h"

namespace hkv {
namespace {

// Stand-in for the capacity planner: glm53-flash-like at TP 4 with 33 GiB
// per rank, one MLA group and four recurrent groups (34 recurrent layers
// in buckets of 9, 9, 8, 8; 11 MLA layers), pages from spec §5.5:
// a recurrent state 2,342,912 B per layer at TP 2, so 1,171,456 B at TP 4
// (9 layers: 10,543,104 B); MLA 561 B per token and layer (11 layers:
// 1,579,776 B per 256 tokens, 12,638,208 B per 2048). The stride is the
// larger group's bytes per block, the blocks 33 GiB / stride:
// 10,543,104 B -> 3,360 blocks (256-token target), 12,638,208 B -> 2,803.
struct StandIn {
  std::uint32_t target_block;
  std::uint32_t num_blocks;
};
constexpr StandIn kGlm53Tp4Budget33GiB[] = {{256, 3360}, {2048, 2803}};

std::string GroupList(const DeploymentSpec& spec) {
  const std::string recurrent =
      ",recurrent:" + std::to_string(spec.recurrent_block);
  return "full:" + std::to_string(spec.target_block) + recurrent + recurrent +
         recurrent + recurrent;
}

Result<void> BadGeometry(std::string_view text) {
  return Fail(ErrorCode::kInvalidArgument,
              "page geometry \"" + std::string(text) +
                  "\" is not target/recurrent/unit, e.g. 2048/256/256");
}

}  // namespace

Result<void> ParsePageGeometry(std::string_view text, DeploymentSpec& spec) {
  std::uint32_t values[3] = {};
  std::string_view rest = text;
  for (int i = 0; i < 3; ++i) {
    const std::size_t slash = rest.find('/');
    const std::string_view part = i < 2 ? rest.substr(0, slash) : rest;
    if ((i < 2 && slash == std::string_view::npos) || part.empty()) {
      return BadGeometry(text);
    }
    const auto [end, ec] =
        std::from_chars(part.data(), part.data() + part.size(), values[i]);
    if (ec != std::errc() || end != part.data() + part.size() ||
        values[i] == 0) {
      return BadGeometry(text);
    }
    if (i < 2) rest = rest.substr(slash + 1);
  }
  spec.target_block = values[0];
  spec.recurrent_block = values[1];
  spec.hash_unit = values[2];
  return {};
}

// TODO(#4): replace the stand-in table with the capacity planner: the
// planned groups (kind, block tokens, draft flag) and the shared pool's
// block count.
Result<CacheConfig> ResolveCacheConfig(const DeploymentSpec& spec) {
  const bool known = spec.model == "glm53-flash-like" && spec.tp == 4 &&
                     spec.budget_bytes == (std::uint64_t{33} << 30);
  for (const StandIn& row : kGlm53Tp4Budget33GiB) {
    if (!known || row.target_block != spec.target_block) continue;
    Result<std::vector<GroupSpec>> groups = ParseGroupList(GroupList(spec));
    if (!groups) return tl::unexpected(groups.error());
    CacheConfig config{.groups = std::move(*groups),
                       .num_blocks = row.num_blocks,
                       .keys = {.function = KeyFunction::kXxh3_128Cbor,
                                .hash_unit = spec.hash_unit}};
    if (Result<void> ok = config.Validate(); !ok) {
      return tl::unexpected(ok.error());
    }
    return config;
  }
  return Fail(ErrorCode::kNotFound,
              "no capacity plan for " + spec.model + " at TP " +
                  std::to_string(spec.tp) + " with " +
                  std::to_string(spec.budget_bytes) +
                  " bytes and target "
                  "block " +
                  std::to_string(spec.target_block) +
                  " until the planner lands; known: glm53-flash-like, TP 4, "
                  "33 GiB, target block 256 or 2048; or give --groups");
}

}  // namespace hkv
