// The rules of hkv/engine_flags.h, each read from the engine tree at
// kEngineCommit (paths relative to its root).
#include "hkv/engine_flags.h"

#include <optional>

namespace hkv {
namespace {

std::string Tokens(std::uint64_t n) { return std::to_string(n) + " tokens"; }

// Why the engine cannot hold `cache` the way it is configured; "" when it
// can. `block` is set to the one block size every group has.
std::string WhyNot(const CacheConfig& cache, const EngineDeployment& d,
                   std::uint32_t& block) {
  if (!cache.group_pool_blocks.empty()) {
    return "per-group pools are hkv's: the engine's KV cache manager "
           "allocates every group from one block pool";
  }
  if (cache.retention == Retention::kPlacement) {
    return "placement retention is hkv's; the engine keeps every block's "
           "state or only the step-aligned ones (--mamba-cache-mode)";
  }
  if (cache.retention_interval) {
    return "the engine has no retention interval";
  }
  if (d.layout == Layout::kSplit) {
    return "the split layout (a page size per layer kind) is not the "
           "engine's: vllm/platforms/interface.py "
           "_align_hybrid_block_size gives attention and recurrent layers "
           "one page size";
  }
  std::optional<std::uint32_t> common;
  for (const GroupSpec& g : cache.groups) {
    if (g.kind == GroupKind::kScratch) continue;
    if (common && *common != g.block_size) {
      return "groups of " + Tokens(*common) + " and " + Tokens(g.block_size) +
             " per block: the engine gives every attention layer "
             "--block-size and sets --mamba-block-size to it "
             "(_align_hybrid_block_size)";
    }
    common = g.block_size;
  }
  if (!common) return "no cacheable group";
  block = *common;
  const bool hybrid = cache.groups.size() > 1;
  if (hybrid && cache.dcp > 1) {
    return "vllm/v1/core/kv_cache_utils.py resolve_kv_cache_block_sizes "
           "refuses context parallelism with more than one KV-cache group";
  }
  // One group: its block (x DCP); several: the gcd of equal blocks.
  const std::uint64_t unit = hybrid ? block : std::uint64_t{block} * cache.dcp;
  if (cache.keys.hash_unit != unit) {
    return "hash unit " + std::to_string(cache.keys.hash_unit) +
           ": the engine hashes in units of " + Tokens(unit) +
           " here (resolve_kv_cache_block_sizes; hash_block_size has no "
           "command-line flag)";
  }
  return "";
}

std::optional<RecurrentMode> RecurrentModeOf(const CacheConfig& cache) {
  for (const GroupSpec& g : cache.groups) {
    if (g.kind == GroupKind::kRecurrent) return g.recurrent_mode;
  }
  return std::nullopt;
}

}  // namespace

EngineFlags EngineFlagsFor(const CacheConfig& cache,
                           const EngineDeployment& deployment) {
  EngineFlags out;
  std::uint32_t block = 0;
  out.why_not = WhyNot(cache, deployment, block);
  if (!out.runs()) return out;
  std::vector<std::string>& a = out.argv;
  a = {"--block-size", std::to_string(block)};
  if (const std::optional<RecurrentMode> mode = RecurrentModeOf(cache)) {
    if (*mode == RecurrentMode::kNone) {
      out = {.why_not =
                 "recurrent states not cached: the engine caches "
                 "them whenever prefix caching is on"};
      return out;
    }
    a.insert(a.end(),
             {"--mamba-block-size", std::to_string(block), "--mamba-cache-mode",
              *mode == RecurrentMode::kAll ? "all" : "align"});
  }
  a.push_back(cache.caching == PrefixCaching::kEnabled
                  ? "--enable-prefix-caching"
                  : "--no-enable-prefix-caching");
  if (deployment.context_tokens) {
    a.insert(a.end(),
             {"--max-model-len", std::to_string(deployment.context_tokens)});
  }
  a.insert(a.end(), {"--tensor-parallel-size", std::to_string(deployment.tp)});
  if (cache.dcp > 1) {
    a.insert(a.end(),
             {"--decode-context-parallel-size", std::to_string(cache.dcp)});
  }
  return out;
}

std::string JoinedFlags(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& word : argv) {
    if (!out.empty()) out += ' ';
    out += word;
  }
  return out;
}

}  // namespace hkv
