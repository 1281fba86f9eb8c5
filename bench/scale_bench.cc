// Pools of 10^6 blocks (and 2^14, quick enough for the smoke test): the
// worst single call of a long steady-state run, a cold 8192-token chunk
// whose allocation evicts cached blocks, and the bytes the cache owns per
// cached block, fresh and after churn.

#include <benchmark/benchmark.h>
#include <malloc.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <optional>
#include <utility>
#include <vector>

#include "common.h"
#include "hkv/cache_manager.h"
#include "hkv/request.h"
#include "steady_workload.h"

namespace hkv {
namespace {

using bench::Call;
using bench::SteadyWorkload;

// The steady-state runs go on until this many times the pool's blocks were
// evicted: past every point where a table sized by its contents would grow.
constexpr std::uint64_t kChurnRounds = 3;

Result<CacheManager> MakeCache(const benchmark::State& state) {
  return CacheManager::Create(
      SteadyWorkload::Config(static_cast<std::uint32_t>(state.range(0))));
}

// This thread's CPU time: unlike wall time, it leaves out the time the
// thread waited for a core on a loaded machine.
double ThreadCpuMicros() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 +
         static_cast<double>(ts.tv_nsec) * 1e-3;
}

// The q-quantile (nearest rank) of `values` from `first` on.
double Quantile(const std::vector<double>& values, double q,
                std::size_t first = 0) {
  std::vector<double> sorted(
      values.begin() + static_cast<std::ptrdiff_t>(first), values.end());
  if (sorted.empty()) return 0;
  const auto rank =
      static_cast<std::ptrdiff_t>(q * static_cast<double>(sorted.size() - 1));
  std::nth_element(sorted.begin(), sorted.begin() + rank, sorted.end());
  return sorted[static_cast<std::size_t>(rank)];
}

// The steady-state run is repeated kRuns times, each on a fresh cache, and a
// call's time is its least over the runs. The workload is the same in every
// run, so a stall of the cache's own (a table rehashing) recurs at the same
// call in each of them, while waiting for a core on a shared machine rarely
// hits one call in all of them.
constexpr int kRuns = 3;

// The wall time (steady_clock) and kind of each call of one run, in order.
struct RunTimes {
  std::vector<double> us;
  std::vector<Call> calls;
  std::size_t first_eviction = 0;  // the first call once the pool was full
};

// One run from an empty pool: the fill, then kChurnRounds x num_blocks
// evictions. std::nullopt when the pool cannot hold the workload.
std::optional<RunTimes> TimeOneRun(std::uint32_t num_blocks) {
  Result<CacheManager> cache =
      CacheManager::Create(SteadyWorkload::Config(num_blocks));
  if (!cache) return std::nullopt;
  SteadyWorkload workload;
  RunTimes run;
  const auto timer = [&run](Call call, auto&& f) {
    const auto start = std::chrono::steady_clock::now();
    f();
    const auto end = std::chrono::steady_clock::now();
    run.us.push_back(
        std::chrono::duration<double, std::micro>(end - start).count());
    run.calls.push_back(call);
  };
  const std::uint64_t target = kChurnRounds * cache->num_free_blocks();
  while (cache->counters().evicted_blocks < target) {
    if (!workload.Step(*cache, timer)) return std::nullopt;
    if (run.first_eviction == 0 && cache->counters().evicted_blocks > 0) {
      run.first_eviction = run.us.size();
    }
  }
  return run;
}

// Counters over the calls' least times: the worst (all calls, from the
// first eviction on, and per kind of call), p99.9 and p99; and the worst
// single time of any run (waits for a core included).
void ReportWorstCalls(benchmark::State& state,
                      const std::vector<RunTimes>& runs) {
  std::vector<double> least = runs.front().us;
  double raw_max = 0;
  for (const RunTimes& run : runs) {
    for (std::size_t i = 0; i < least.size(); ++i) {
      least[i] = std::min(least[i], run.us[i]);
      raw_max = std::max(raw_max, run.us[i]);
    }
  }
  std::array<double, 4> worst{};
  double total = 0;
  for (std::size_t i = 0; i < least.size(); ++i) {
    double& kind = worst[static_cast<std::size_t>(runs.front().calls[i])];
    kind = std::max(kind, least[i]);
    total += least[i];
  }
  state.SetIterationTime(total * 1e-6);
  state.counters["max_us"] = Quantile(least, 1.0);
  state.counters["steady_max_us"] =
      Quantile(least, 1.0, runs.front().first_eviction);
  state.counters["p999_us"] = Quantile(least, 0.999);
  state.counters["p99_us"] = Quantile(least, 0.99);
  state.counters["lookup_max_us"] = worst[0];
  state.counters["allocate_max_us"] = worst[1];
  state.counters["commit_max_us"] = worst[2];
  state.counters["free_max_us"] = worst[3];
  state.counters["raw_max_us"] = raw_max;
  state.counters["calls"] = static_cast<double>(least.size());
}

// kRuns runs of `time_one` on a pool of state.range(0) blocks, reported by
// ReportWorstCalls; an error when a run fails or the runs' calls differ.
void WorstCallsOver(benchmark::State& state,
                    std::optional<RunTimes> (*time_one)(std::uint32_t)) {
  const auto num_blocks = static_cast<std::uint32_t>(state.range(0));
  for (auto _ : state) {
    std::vector<RunTimes> runs;
    for (int r = 0; r < kRuns; ++r) {
      std::optional<RunTimes> run = time_one(num_blocks);
      if (!run || (!runs.empty() && run->calls != runs.front().calls)) {
        state.SkipWithError("the runs differ or the pool is too small");
        return;
      }
      runs.push_back(std::move(*run));
    }
    ReportWorstCalls(state, runs);
  }
}

// A long steady-state run, every Lookup, Allocate, Commit and Free timed on
// its own (see kRuns).
void BM_Scale_WorstCall(benchmark::State& state) {
  WorstCallsOver(state, TimeOneRun);
}
BENCHMARK(BM_Scale_WorstCall)
    ->ArgName("blocks")
    ->Arg(1 << 14)
    ->Arg(1'000'000)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

constexpr std::uint32_t kChunk = 8192;
constexpr std::uint32_t kChunkBlocks = kChunk / SteadyWorkload::kBlock;

// Caches kChunk-token prompts until one evicts: then every usable block is
// cached. Returns the next unused seed, or 0 when the pool is too small.
std::uint32_t FillWithChunks(CacheManager& cache) {
  std::uint32_t seed = 1;
  while (cache.counters().evicted_blocks == 0) {
    const std::vector<TokenId> tokens = bench::RandomTokens(kChunk, seed);
    if (!bench::CachePrompt(cache, tokens, RequestId{seed++})) return 0;
  }
  return seed;
}

// A full pool of cached, free blocks (left by 8192-token requests); each
// iteration allocates and commits one cold 8192-token chunk (512 blocks, all
// evicting a cached block) and frees it untimed (its blocks stay cached, so
// the pool stays full). Keying the chunk's tokens is not timed. With
// `evicting:0` the prefix cache is reset (untimed) before each chunk, so the
// same chunk takes blocks that hold no key: the cost of allocation alone.
void BM_Scale_EvictingChunk(benchmark::State& state) {
  Result<CacheManager> cache = MakeCache(state);
  std::uint32_t seed = cache ? FillWithChunks(*cache) : 0;
  if (seed == 0) {
    state.SkipWithError("the pool cannot hold a chunk");
    return;
  }
  const bool evicting = state.range(1) != 0;
  double allocate_us = 0, commit_us = 0, cpu_us = 0;
  for (auto _ : state) {
    if (!evicting && !cache->ResetPrefixCache()) {
      state.SkipWithError("the prefix cache did not reset");
      return;
    }
    const std::vector<TokenId> tokens = bench::RandomTokens(kChunk, seed);
    const Request request({.id = RequestId{seed++}}, tokens,
                          cache->key_scheme());
    const std::uint64_t evicted = cache->counters().evicted_blocks;
    const double cpu_start = ThreadCpuMicros();
    const auto start = std::chrono::steady_clock::now();
    const bool allocated =
        cache->Allocate(request, {.num_new_tokens = kChunk}).has_value();
    const auto middle = std::chrono::steady_clock::now();
    cache->Commit(request, kChunk);
    const auto end = std::chrono::steady_clock::now();
    cpu_us += ThreadCpuMicros() - cpu_start;
    state.SetIterationTime(std::chrono::duration<double>(end - start).count());
    allocate_us +=
        std::chrono::duration<double, std::micro>(middle - start).count();
    commit_us +=
        std::chrono::duration<double, std::micro>(end - middle).count();
    const std::uint64_t expected = evicting ? kChunkBlocks : 0;
    if (!allocated || cache->counters().evicted_blocks - evicted != expected) {
      state.SkipWithError("the chunk did not evict as expected");
      return;
    }
    cache->Free(request.id());
  }
  const auto n = static_cast<double>(state.iterations());
  state.SetItemsProcessed(state.iterations() * kChunkBlocks);
  state.counters["allocate_us"] = allocate_us / n;
  state.counters["commit_us"] = commit_us / n;
  state.counters["cpu_us"] = cpu_us / n;
}
BENCHMARK(BM_Scale_EvictingChunk)
    ->ArgNames({"blocks", "evicting"})
    ->ArgsProduct({{1 << 14, 1'000'000}, {1, 0}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// The evicting-chunk churn, every call timed alone: a full pool of cached
// 8192-token prompts, then cold 8192-token chunks (512 blocks, each
// evicting a cached block) allocated, committed and freed (their blocks
// stay cached) until the pool's blocks were evicted kChurnRounds times over.
// Keying is not timed. As BM_Scale_WorstCall: kRuns runs on fresh caches,
// a call's time its least over the runs, the counters over those.
std::optional<RunTimes> TimeOneChurn(std::uint32_t num_blocks) {
  Result<CacheManager> cache =
      CacheManager::Create(SteadyWorkload::Config(num_blocks));
  std::uint32_t seed = cache ? FillWithChunks(*cache) : 0;
  if (seed == 0) return std::nullopt;
  RunTimes run;
  const auto timed = [&run](Call call, auto&& f) {
    const auto start = std::chrono::steady_clock::now();
    const bool ok = f();
    const auto end = std::chrono::steady_clock::now();
    run.us.push_back(
        std::chrono::duration<double, std::micro>(end - start).count());
    run.calls.push_back(call);
    return ok;
  };
  const std::uint64_t target = kChurnRounds * std::uint64_t{num_blocks};
  while (cache->counters().evicted_blocks < target) {
    const std::vector<TokenId> tokens = bench::RandomTokens(kChunk, seed);
    const Request r({.id = RequestId{seed++}}, tokens, cache->key_scheme());
    if (!timed(Call::kAllocate, [&] {
          return cache->Allocate(r, {.num_new_tokens = kChunk}).has_value();
        })) {
      return std::nullopt;
    }
    timed(Call::kCommit, [&] {
      cache->Commit(r, kChunk);
      return true;
    });
    timed(Call::kFree, [&] {
      cache->Free(r.id());
      return true;
    });
  }
  return run;
}

void BM_Scale_ChurnWorstCall(benchmark::State& state) {
  WorstCallsOver(state, TimeOneChurn);
}
BENCHMARK(BM_Scale_ChurnWorstCall)
    ->ArgName("blocks")
    ->Arg(1 << 14)
    ->Arg(1'000'000)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// Hands every free block out one at a time to kInterleave requests in
// turn, as decode steps do, and frees them all uncached: the free queue then
// holds runs of blocks kInterleave ids apart. Returns false on failure.
bool InterleaveFreeQueue(CacheManager& cache) {
  constexpr std::uint32_t kInterleave = 1024;
  const std::uint32_t per_request = cache.num_free_blocks() / kInterleave;
  std::vector<Request> requests;
  for (std::uint32_t r = 0; r < kInterleave; ++r) {
    const std::vector<TokenId> tokens = bench::RandomTokens(
        std::size_t{per_request} * SteadyWorkload::kBlock, 5000 + r);
    requests.emplace_back(RequestOptions{.id = RequestId{5000 + r}}, tokens,
                          cache.key_scheme());
  }
  for (std::uint32_t step = 0; step < per_request; ++step) {
    for (const Request& request : requests) {
      if (!cache.Allocate(request,
                          {.num_computed_tokens = step * SteadyWorkload::kBlock,
                           .num_new_tokens = SteadyWorkload::kBlock})) {
        return false;
      }
    }
  }
  for (const Request& request : requests) cache.Free(request.id());
  return true;
}

// A pool of 10^6 blocks holding as many distinct 128k-token prompts as fit
// (122), and a lookup of the last one: a warm hit of 8191 blocks, as in
// BM_Lookup_WarmHit but with every table 122 times larger. order:0: the
// blocks were taken in id order; order:1: the free queue was first
// interleaved (InterleaveFreeQueue), so a prompt's consecutive blocks lie
// 1024 ids apart, and so does their metadata.
void BM_Scale_WarmLookup(benchmark::State& state) {
  Result<CacheManager> cache = MakeCache(state);
  if (!cache || (state.range(1) != 0 && !InterleaveFreeQueue(*cache))) {
    state.SkipWithError("setup failed");
    return;
  }
  // As many prompts as fit without evicting.
  const std::uint32_t prompts = cache->num_free_blocks() / (bench::k128k / 16);
  std::vector<TokenId> tokens;
  for (std::uint32_t seed = 1; seed <= prompts; ++seed) {
    tokens = bench::RandomTokens(bench::k128k, seed);
    bench::CachePrompt(*cache, tokens, RequestId{seed});
  }
  const Request request({.id = RequestId{1u << 20}}, tokens,
                        cache->key_scheme());
  if (cache->Lookup(request).num_tokens != bench::k128k - 16 ||
      cache->counters().evicted_blocks != 0) {
    state.SkipWithError("the lookup missed");
    return;
  }
  for (auto _ : state) {
    CacheHit hit = cache->Lookup(request);
    benchmark::DoNotOptimize(hit);
  }
  state.SetItemsProcessed(state.iterations() * (bench::k128k / 16 - 1));
}
BENCHMARK(BM_Scale_WarmLookup)
    ->ArgNames({"blocks", "order"})
    ->Args({1 << 14, 0})
    ->Args({1 << 14, 1})
    ->Args({1'000'000, 0})
    ->Args({1'000'000, 1})
    ->Unit(benchmark::kMicrosecond);

// Bytes the process holds in malloc (glibc: in use in the arena plus mmapped
// chunks), which the cache's containers dominate.
double HeapBytes() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<double>(info.uordblks + info.hblkhd);
}

// Heap bytes per cached block the cache holds: measured from before its
// construction, with every request freed and destroyed, so that what remains
// is the pool, the index, the record of evicted keys and the (empty) request
// tables. "fresh": once the fill evicted its first block (every block is
// cached); "churned": the most at any of the checkpoints every num_blocks / 8
// evictions up to kChurnRounds x num_blocks (running requests are freed at
// each one).
void BM_Scale_BytesPerCachedBlock(benchmark::State& state) {
  for (auto _ : state) {
    SteadyWorkload workload;
    const auto untimed = [](Call, auto&& f) { f(); };
    const double before = HeapBytes();
    Result<CacheManager> cache = MakeCache(state);
    const std::uint64_t blocks = cache->num_free_blocks();
    // Bytes per cached block once `evictions` blocks were evicted.
    const auto bytes_after = [&](std::uint64_t evictions) {
      while (cache->counters().evicted_blocks < evictions) {
        if (!workload.Step(*cache, untimed)) return 0.0;
      }
      workload.FreeAll(*cache);
      return (HeapBytes() - before) /
             static_cast<double>(cache->CachedBlocksPerGroup()[0]);
    };
    state.counters["fresh_B_per_block"] = bytes_after(1);
    double churned = 0;
    for (std::uint64_t e = blocks / 8; e <= kChurnRounds * blocks;
         e += blocks / 8) {
      churned = std::max(churned, bytes_after(e));
    }
    state.counters["churned_B_per_block"] = churned;
  }
}
BENCHMARK(BM_Scale_BytesPerCachedBlock)
    ->ArgName("blocks")
    ->Arg(1 << 14)
    ->Arg(1'000'000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace hkv
