// Shared by the hkv benchmarks: realistic token ids, cache setup, and manual
// timing of the one call a benchmark measures.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "hkv/cache_manager.h"
#include "hkv/request.h"
#include "hkv/types.h"

namespace hkv::bench {

inline constexpr std::uint32_t kVocabSize = 151936;  // Qwen2 tokenizer
inline constexpr std::uint32_t k128k = 131072;

// `n` pseudo-random token ids in [0, kVocabSize), identical for a given seed
// on every platform: mt19937 is fully specified (the modulo bias is < 1e-4).
inline std::vector<TokenId> RandomTokens(std::size_t n, std::uint32_t seed) {
  std::mt19937 generator(seed);
  std::vector<TokenId> tokens(n);
  for (TokenId& t : tokens) t = static_cast<TokenId>(generator() % kVocabSize);
  return tokens;
}

// The hybrid that python/bench gives the engine's manager and hkv.vllm:
// full attention, a 4096-token window and a recurrent state (align mode),
// all at block and hash unit `block`, under the engine's behaviour.
inline CacheConfig EngineHybrid(std::uint32_t block, std::uint32_t num_blocks) {
  return {.groups = {{.block_size = block},
                     {.kind = GroupKind::kSlidingWindow,
                      .block_size = block,
                      .sliding_window = 4096},
                     {.kind = GroupKind::kRecurrent, .block_size = block}},
          .num_blocks = num_blocks,
          .keys = {.hash_unit = block},
          .behaviour = Behaviour::kEngine};
}

// Runs `tokens` as one request to completion (allocate, commit, free) so its
// blocks stay cached and free, as a finished request leaves them. Returns
// false when the pool is too small.
inline bool CachePrompt(CacheManager& cache, std::span<const TokenId> tokens,
                        RequestId id) {
  const Request request({.id = id}, tokens, cache.key_scheme());
  const std::uint32_t n = request.num_tokens();
  if (!cache.Allocate(request, {.num_new_tokens = n})) return false;
  cache.Commit(request, n);
  cache.Free(id);
  return true;
}

// Times `f` as the iteration's duration, for UseManualTime() benchmarks
// whose setup runs inside the loop. A clock read costs ~20 ns, so time
// calls of several microseconds or batches of short ones.
template <typename F>
void TimeIteration(benchmark::State& state, F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  const auto end = std::chrono::steady_clock::now();
  state.SetIterationTime(std::chrono::duration<double>(end - start).count());
}

// The 3-group hybrid of hybrid_bench.cc at DCP 1 in one pool: full
// attention 2048, recurrent 256, a 4096-token window over 2048-token blocks,
// 4096 blocks, hashed at 256.
inline CacheConfig HybridOfThreeGroups() {
  return {.groups = {{.block_size = 2048},
                     {.kind = GroupKind::kRecurrent, .block_size = 256},
                     {.kind = GroupKind::kSlidingWindow,
                      .block_size = 2048,
                      .sliding_window = 4096}},
          .num_blocks = 4096,
          .keys = {.hash_unit = 256}};
}

}  // namespace hkv::bench
