// Where a prefill chunk must stop so that aligned recurrent groups keep a
// usable state (spec §7.3): recurrent kernels leave a state only at the end
// of a chunk, so chunks end on block boundaries, at the prompt's checkpoint
// (where a resend resumes), and at a shared-prefix junction.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "cache/cache_geometry.h"
#include "hkv/allocation.h"
#include "hkv/cache_config.h"

namespace hkv::internal {

// The split's own rules; the cache-wide facts come with each call.
struct SplitRules {
  bool applies = false;     // an aligned recurrent group exists
  std::uint32_t block = 0;  // chunks end on its multiples (per rank)
  bool fine = false;        // hits may end inside blocks
  // The state block when every aligned recurrent group (all of this block)
  // exports the prompt's checkpoint from inside a chunk; 0 otherwise.
  std::uint32_t export_block = 0;
};

SplitRules MakeSplitRules(const CacheConfig& config,
                          const CacheGeometry& geometry);

struct SplitInput {
  const SplitRules& rules;
  const CacheFacts& facts;
  std::uint32_t num_prompt_tokens = 0;
  std::uint32_t num_tokens = 0;  // prompt and outputs so far
  PrefillChunk chunk;
};

// The tokens to schedule: chunk.num_new_tokens, shortened to the first stop.
std::uint32_t SplitPrefill(const SplitInput& input);

}  // namespace hkv::internal
