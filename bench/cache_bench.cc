// Single-request calls at 128k tokens: prefix lookup (a warm hit over blocks
// a finished request left cached, and a cold miss against the same cache) and
// Free; and a long prompt's lookup, adoption and free from 8k to 1M tokens.

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common.h"
#include "hkv/cache_manager.h"
#include "hkv/request.h"

namespace hkv {
namespace {

// Args: block size, hash unit.
Result<CacheManager> MakeCache(const benchmark::State& state) {
  const auto block = static_cast<std::uint32_t>(state.range(0));
  const auto unit = static_cast<std::uint32_t>(state.range(1));
  return CacheManager::Create({.groups = {{.block_size = block}},
                               .num_blocks = bench::k128k / block + 2,
                               .keys = {.hash_unit = unit}});
}

// The longest hit a lookup may return: all tokens but the last, floored to
// the hash unit (hits end on unit boundaries, at most one block past the
// full blocks).
std::uint32_t ExpectedHit(const benchmark::State& state) {
  const auto unit = static_cast<std::uint32_t>(state.range(1));
  return (bench::k128k - 1) / unit * unit;
}

// Caches a 128k-token prompt, then times Lookup of a request for
// `lookup_seed`'s tokens (the cached prompt's when the seeds match).
void LookupAfterCaching(benchmark::State& state, std::uint32_t lookup_seed,
                        std::uint32_t expected_hit) {
  constexpr std::uint32_t kCachedSeed = 1;
  Result<CacheManager> cache = MakeCache(state);
  if (!cache) {
    state.SkipWithError(cache.error().message.c_str());
    return;
  }
  const std::vector<TokenId> cached =
      bench::RandomTokens(bench::k128k, kCachedSeed);
  if (!bench::CachePrompt(*cache, cached, RequestId{1})) {
    state.SkipWithError("the pool cannot hold the cached prompt");
    return;
  }
  const std::vector<TokenId> tokens =
      lookup_seed == kCachedSeed
          ? cached
          : bench::RandomTokens(bench::k128k, lookup_seed);
  const Request request({.id = RequestId{2}}, tokens, cache->key_scheme());
  const std::uint32_t hit_tokens = cache->Lookup(request).num_tokens;
  if (hit_tokens != expected_hit) {
    const std::string message = "hit " + std::to_string(hit_tokens) +
                                " tokens, expected " +
                                std::to_string(expected_hit);
    state.SkipWithError(message.c_str());
    return;
  }
  for (auto _ : state) {
    CacheHit hit = cache->Lookup(request);
    benchmark::DoNotOptimize(hit);
  }
  const auto block = static_cast<std::uint32_t>(state.range(0));
  // Items are the blocks the hit covers (rounded up: a hit may end inside
  // a block when hash units are finer than blocks).
  if (hit_tokens > 0) {
    state.SetItemsProcessed(state.iterations() *
                            ((hit_tokens + block - 1) / block));
  }
  state.counters["hit_tokens"] = hit_tokens;
}

void BM_Lookup_WarmHit(benchmark::State& state) {
  LookupAfterCaching(state, 1, ExpectedHit(state));
}
BENCHMARK(BM_Lookup_WarmHit)
    ->ArgNames({"block", "unit"})
    ->Args({16, 16})
    ->Args({256, 256})
    ->Args({256, 16})
    ->Unit(benchmark::kMicrosecond);

void BM_Lookup_ColdMiss(benchmark::State& state) {
  LookupAfterCaching(state, 2, 0);
}
BENCHMARK(BM_Lookup_ColdMiss)
    ->ArgNames({"block", "unit"})
    ->Args({16, 16})
    ->Args({256, 256})
    ->Args({256, 16});

// Free of a committed 128k-token request at block 16. Each iteration
// re-admits the request untimed (a full prefix hit), then times Free.
void BM_Free_128k(benchmark::State& state) {
  constexpr std::uint32_t kBlock = 16;
  Result<CacheManager> cache =
      CacheManager::Create({.groups = {{.block_size = kBlock}},
                            .num_blocks = bench::k128k / kBlock + 2,
                            .keys = {}});
  const std::vector<TokenId> prompt = bench::RandomTokens(bench::k128k, 1);
  if (!cache || !bench::CachePrompt(*cache, prompt, RequestId{1})) {
    state.SkipWithError("setup failed");
    return;
  }
  const Request request({.id = RequestId{2}}, prompt, cache->key_scheme());
  for (auto _ : state) {
    const CacheHit hit = cache->Lookup(request);
    if (!cache->Allocate(
            request,
            {.num_new_tokens = bench::k128k - hit.num_tokens, .hit = &hit})) {
      state.SkipWithError("re-admission failed");
      break;
    }
    cache->Commit(request, bench::k128k);
    bench::TimeIteration(state, [&] { cache->Free(request.id()); });
  }
  state.SetItemsProcessed(state.iterations() * (bench::k128k / kBlock));
}
BENCHMARK(BM_Free_128k)
    ->UseManualTime()
    ->MinTime(0.1)
    ->Unit(benchmark::kMicrosecond);

// The engine's per-step question: the leading blocks every running request
// holds. Two requests share a 65,536-token prompt (4,095 common blocks at
// block 16, adopted from the cache); each iteration asks once.
void BM_NumCommonPrefixBlocks_64k(benchmark::State& state) {
  constexpr std::uint32_t kBlock = 16;
  constexpr std::uint32_t kTokens = 65536;
  Result<CacheManager> cache =
      CacheManager::Create({.groups = {{.block_size = kBlock}},
                            .num_blocks = 3 * kTokens / kBlock,
                            .keys = {}});
  const std::vector<TokenId> prompt = bench::RandomTokens(kTokens, 1);
  if (!cache || !bench::CachePrompt(*cache, prompt, RequestId{1})) {
    state.SkipWithError("setup failed");
    return;
  }
  for (std::uint64_t id : {2u, 3u}) {
    const Request request({.id = RequestId{id}}, prompt, cache->key_scheme());
    const CacheHit hit = cache->Lookup(request);
    if (!cache->Allocate(request, {.num_new_tokens = kTokens - hit.num_tokens,
                                   .hit = &hit})) {
      state.SkipWithError("admission failed");
      return;
    }
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        cache->NumCommonPrefixBlocks(RequestId{2}, GroupId{0}));
  }
  state.counters["common_blocks"] = static_cast<double>(
      cache->NumCommonPrefixBlocks(RequestId{2}, GroupId{0}));
}
BENCHMARK(BM_NumCommonPrefixBlocks_64k)->Unit(benchmark::kMicrosecond);

// The calls a long prompt's cached prefix costs, by prompt length at block
// 16: a warm Lookup of the whole prompt (less the last token), the Allocate
// adopting that hit, and the Free of the request, each timed alone; the
// counters are their means in µs, the iteration time their sum. The pool
// holds the prompt's blocks plus 2.
void BM_Scale_PromptCalls(benchmark::State& state) {
  constexpr std::uint32_t kBlock = 16;
  const auto tokens = static_cast<std::uint32_t>(state.range(0));
  Result<CacheManager> cache =
      CacheManager::Create({.groups = {{.block_size = kBlock}},
                            .num_blocks = tokens / kBlock + 2,
                            .keys = {}});
  const std::vector<TokenId> prompt = bench::RandomTokens(tokens, 1);
  if (!cache || !bench::CachePrompt(*cache, prompt, RequestId{1})) {
    state.SkipWithError("setup failed");
    return;
  }
  const Request request({.id = RequestId{2}}, prompt, cache->key_scheme());
  double lookup_us = 0, adopt_us = 0, free_us = 0;
  const auto micros = [](auto from, auto to) {
    return std::chrono::duration<double, std::micro>(to - from).count();
  };
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const CacheHit hit = cache->Lookup(request);
    const auto t1 = std::chrono::steady_clock::now();
    const bool adopted =
        cache
            ->Allocate(request,
                       {.num_new_tokens = tokens - hit.num_tokens, .hit = &hit})
            .has_value();
    const auto t2 = std::chrono::steady_clock::now();
    if (!adopted || hit.num_tokens != tokens - kBlock) {
      state.SkipWithError("the prompt did not hit whole");
      return;
    }
    cache->Commit(request, tokens);
    const auto t3 = std::chrono::steady_clock::now();
    cache->Free(request.id());
    const auto t4 = std::chrono::steady_clock::now();
    lookup_us += micros(t0, t1);
    adopt_us += micros(t1, t2);
    free_us += micros(t3, t4);
    state.SetIterationTime(
        std::chrono::duration<double>((t2 - t0) + (t4 - t3)).count());
  }
  const auto n = static_cast<double>(state.iterations());
  state.SetItemsProcessed(state.iterations() * (tokens / kBlock));
  state.counters["lookup_us"] = lookup_us / n;
  state.counters["adopt_us"] = adopt_us / n;
  state.counters["free_us"] = free_us / n;
}
BENCHMARK(BM_Scale_PromptCalls)
    ->ArgName("tokens")
    ->Arg(8192)
    ->Arg(131072)
    ->Arg(1 << 20)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace hkv
