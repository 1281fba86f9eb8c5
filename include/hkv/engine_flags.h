// The reference engine's command line for a configuration: the flags of the
// engine at commit kEngineCommit (vLLM, `vllm serve`) that give its KV cache
// a configuration's page geometry, or, when that engine cannot run it, why.
// Each rule names the engine code it follows (docs/simulator.md, "On the
// reference engine today").
//
// The flags cover the cache and the deployment's shape (block sizes, cache
// mode, prefix caching, context, TP, DCP); the model, its dtype and its
// drafts are the user's own.
//
// Thread-safety: pure functions.
//
// Example:
//   EngineFlags e = EngineFlagsFor(config.cache, {.tp = 1, .context = 131072});
//   if (e.runs()) print(JoinedFlags(e.argv)); else print(e.why_not);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/cache_config.h"
#include "hkv/model.h"

namespace hkv {

// The engine tree the rules were read from.
inline constexpr std::string_view kEngineCommit = "28be48fa";

// What the flags are for besides the cache: the deployment's shape.
struct EngineDeployment {
  std::uint32_t tp = 1;
  std::uint64_t context_tokens = 0;  // max_model_len; 0: not given
  Layout layout = Layout::kCoupled;  // the model preset's
};

struct EngineFlags {
  // `vllm serve` arguments, one element per word: {"--block-size", "256",
  // ...}; empty when the engine cannot run the configuration.
  std::vector<std::string> argv = {};
  // Empty when it can; else one clause naming the engine's rule.
  std::string why_not = {};

  bool runs() const { return why_not.empty(); }
};

// The engine's flags for `cache` (a resolved configuration) deployed as
// `deployment`.
EngineFlags EngineFlagsFor(const CacheConfig& cache,
                           const EngineDeployment& deployment);

// argv joined by spaces.
std::string JoinedFlags(const std::vector<std::string>& argv);

}  // namespace hkv
