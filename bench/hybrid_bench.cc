// Lookup of a 128k-token warm hit in a 3-group hybrid: full attention 2048,
// aligned recurrent state 256 and a 4096-token sliding window over 2048
// blocks, hash unit 256; with DCP 1 and 4 (full attention sharded, the
// window replicated); in one shared pool, in per-group pools and in
// rebalancing per-group pools. And the allocation path: a 128k-token
// prefill in 8192-token chunks, committed and freed, in each pool layout;
// and one such chunk, evicting, in the shape of the scheduler-step bench's
// long hybrid workload (block 16).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common.h"
#include "hkv/cache_manager.h"
#include "hkv/request.h"

namespace hkv {
namespace {

// `pools`: 0, one pool of 4095 blocks; 1, pools of 2047, 1024 and 1024
// blocks; 2, those pools rebalancing, a state slot worth half a page.
CacheConfig HybridConfig(std::uint32_t dcp, std::int64_t pools) {
  return {.groups = {{.block_size = 2048},
                     {.kind = GroupKind::kRecurrent, .block_size = 256},
                     {.kind = GroupKind::kSlidingWindow,
                      .block_size = 2048,
                      .sliding_window = 4096,
                      .dcp_layout = DcpLayout::kReplicated}},
          .num_blocks = 4096,
          .group_pool_blocks =
              pools > 0 ? std::vector<std::uint32_t>{2047, 1024, 1024}
                        : std::vector<std::uint32_t>{},
          .pool_slot_bytes = pools > 1 ? std::vector<std::uint64_t>{2, 1, 2}
                                       : std::vector<std::uint64_t>{},
          .keys = {.hash_unit = 256},
          .dcp = dcp};
}

// Prefills `tokens` as the scheduler would (8192-token budget, chunks split
// where recurrent states must land), then frees it: its blocks and states
// stay cached.
bool CacheInChunks(CacheManager& cache, std::span<const TokenId> tokens) {
  const Request r({.id = RequestId{1}}, tokens, cache.key_scheme());
  for (std::uint32_t done = 0; done < r.num_tokens();) {
    const std::uint32_t n =
        cache.SplitPrefill(r, {.num_computed_tokens = done,
                               .num_new_tokens = std::min<std::uint32_t>(
                                   8192, r.num_tokens() - done)});
    if (!cache.Allocate(r,
                        {.num_computed_tokens = done, .num_new_tokens = n})) {
      return false;
    }
    done += n;
    cache.Commit(r, done);
    cache.TakeCopies();
    cache.TakePoolMoves();
    cache.FinishStep();
  }
  cache.Free(r.id());
  return true;
}

// Times the lookup of `tokens` (a new request's), once it is checked to hit
// `expected` tokens; skips the benchmark with the hit it got otherwise.
void TimeWarmLookups(benchmark::State& state, CacheManager& cache,
                     std::span<const TokenId> tokens, std::uint32_t expected) {
  const Request request({.id = RequestId{2}}, tokens, cache.key_scheme());
  const std::uint32_t hit = cache.Lookup(request).num_tokens;
  if (hit != expected) {
    const std::string message =
        "hit " + std::to_string(hit) + ", expected " + std::to_string(expected);
    state.SkipWithError(message.c_str());
    return;
  }
  for (auto _ : state) {
    CacheHit result = cache.Lookup(request);
    benchmark::DoNotOptimize(result);
  }
  state.counters["hit_tokens"] = hit;
}

void BM_Lookup_HybridWarmHit(benchmark::State& state) {
  const auto dcp = static_cast<std::uint32_t>(state.range(0));
  Result<CacheManager> cache =
      CacheManager::Create(HybridConfig(dcp, state.range(1)));
  const std::vector<TokenId> tokens = bench::RandomTokens(bench::k128k, 1);
  if (!cache || !CacheInChunks(*cache, tokens)) {
    state.SkipWithError("cannot set up the hybrid cache");
    return;
  }
  TimeWarmLookups(state, *cache, tokens, 130816);
}
BENCHMARK(BM_Lookup_HybridWarmHit)
    ->ArgNames({"dcp", "pools"})
    ->Args({1, 0})
    ->Args({4, 0})
    ->Args({1, 1})
    ->Args({1, 2})
    ->Unit(benchmark::kMicrosecond);

// The shape of bench_vs_reference.py's hybrid lookup row (the engine's
// manager beside hkv.vllm's): full attention, a 4096-token window and a
// recurrent state, all at block 256 and hash unit 256, the engine's
// behaviour; a 128k-token prompt cached in one allocation, then a prompt one
// block longer looked up (hit 131,072 tokens, 512 blocks a group).
void BM_Lookup_HybridBlock256(benchmark::State& state) {
  Result<CacheManager> cache =
      CacheManager::Create(bench::EngineHybrid(256, 1600));
  if (!cache) {
    state.SkipWithError(cache.error().message.c_str());
    return;
  }
  const std::vector<TokenId> tokens =
      bench::RandomTokens(bench::k128k + 256, 1);
  const std::span<const TokenId> prompt(tokens.data(), bench::k128k);
  const Request first({.id = RequestId{1}}, prompt, cache->key_scheme());
  if (!cache->Allocate(first, {.num_new_tokens = bench::k128k})) {
    state.SkipWithError("cannot set up the hybrid cache");
    return;
  }
  cache->Commit(first, bench::k128k);
  cache->Free(first.id());
  TimeWarmLookups(state, *cache, tokens, bench::k128k);
}
BENCHMARK(BM_Lookup_HybridBlock256)->Unit(benchmark::kMicrosecond);

// The shape of the scheduler-step bench's long hybrid workload
// (bench_scheduler_step.py): EngineHybrid at block 16, 40,000 blocks;
// 131,072-token prompts prefilled in 8192-token chunks, each chunk's
// Allocate + Commit timed (what hkv.vllm's allocate_slots does in C++). Each
// prompt is new: once the pool is full, every chunk evicts. Keying is not
// timed (manual time: only the two calls count).
void BM_PrefillChunk_HybridBlock16(benchmark::State& state) {
  Result<CacheManager> cache =
      CacheManager::Create(bench::EngineHybrid(16, 40000));
  if (!cache) {
    state.SkipWithError(cache.error().message.c_str());
    return;
  }
  constexpr std::uint32_t kChunk = 8192;
  std::uint32_t seed = 1;
  std::optional<Request> request;
  std::uint32_t done = bench::k128k;
  double allocate_us = 0, commit_us = 0;
  for (auto _ : state) {
    if (done == bench::k128k) {
      if (request) cache->Free(request->id());
      const std::vector<TokenId> tokens =
          bench::RandomTokens(bench::k128k, seed);
      request.emplace(RequestOptions{.id = RequestId{seed++}}, tokens,
                      cache->key_scheme());
      done = 0;
    }
    const auto start = std::chrono::steady_clock::now();
    if (!cache->Allocate(*request, {.num_computed_tokens = done,
                                    .num_new_tokens = kChunk})) {
      state.SkipWithError("the chunk does not fit");
      return;
    }
    const auto middle = std::chrono::steady_clock::now();
    done += kChunk;
    cache->Commit(*request, done);
    const auto end = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(end - start).count());
    allocate_us +=
        std::chrono::duration<double, std::micro>(middle - start).count();
    commit_us +=
        std::chrono::duration<double, std::micro>(end - middle).count();
    cache->FinishStep();
  }
  const auto n = static_cast<double>(state.iterations());
  state.counters["allocate_us"] = allocate_us / n;
  state.counters["commit_us"] = commit_us / n;
  state.counters["evicted_blocks"] =
      static_cast<double>(cache->counters().evicted_blocks) / n;
}
BENCHMARK(BM_PrefillChunk_HybridBlock16)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void BM_Prefill_Hybrid128k(benchmark::State& state) {
  Result<CacheManager> cache =
      CacheManager::Create(HybridConfig(1, state.range(0)));
  const std::vector<TokenId> tokens = bench::RandomTokens(bench::k128k, 1);
  if (!cache) {
    state.SkipWithError("cannot set up the hybrid cache");
    return;
  }
  for (auto _ : state) {
    if (!CacheInChunks(*cache, tokens)) {
      state.SkipWithError("the prefill does not fit");
      return;
    }
  }
}
BENCHMARK(BM_Prefill_Hybrid128k)
    ->ArgName("pools")
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace hkv
