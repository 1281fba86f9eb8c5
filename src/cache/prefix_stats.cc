#include "cache/prefix_stats.h"

namespace hkv::internal {

void RecordAdmission(std::uint32_t num_tokens, const CacheHit* hit,
                     PrefixCacheStats& stats) {
  ++stats.requests;
  stats.queries += num_tokens;
  if (hit == nullptr) return;
  stats.hits += hit->num_tokens;
  MissCounters* counters = nullptr;
  switch (hit->miss_cause) {
    case MissCause::kNone:
      return;
    case MissCause::kSpeculativeRewind:
      counters = &stats.speculative_rewind;
      break;
    case MissCause::kNoCheckpoint:
      counters = &stats.no_checkpoint;
      break;
    case MissCause::kWindowNotCovered:
      counters = &stats.window_not_covered;
      break;
    case MissCause::kEvicted:
      counters = &stats.evicted;
      break;
  }
  ++counters->requests;
  counters->tokens += hit->chain_tokens - hit->num_tokens;
}

}  // namespace hkv::internal
