// Decode steps of a batch of running requests: Allocate alone, and the whole
// per-request step. Manual timing keeps commits and restarts out of the
// Allocate measurement without PauseTiming's per-iteration overhead.

#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "common.h"
#include "hkv/cache_manager.h"
#include "hkv/request.h"

namespace hkv {
namespace {

// A scheduler's decode batch: kBatch running requests with ~2k-token prompts,
// each step computing one more token per request. A request that decoded
// kDecodeTokens tokens is freed and re-admitted with its prompt (a prefix
// hit), so the pool stays at a steady mix of running, cached and evicted
// blocks however long the benchmark runs.
class DecodeBatch {
 public:
  static constexpr std::uint32_t kBatch = 256;
  static constexpr std::uint32_t kPromptTokens = 2048;
  // A multiple of every block size benchmarked, so restarts keep the share
  // of steps that open a new block at exactly 1 / block size.
  static constexpr std::uint32_t kDecodeTokens = 1024;

  // Enough blocks for every request at its longest, plus half again so
  // finished prompts stay cached while older blocks are evicted.
  static std::uint32_t PoolBlocks(std::uint32_t block_size) {
    const std::uint32_t longest = kPromptTokens + 16 + kDecodeTokens;
    const std::uint32_t per_request =
        (longest + block_size - 1) / block_size + 1;
    return 1 + kBatch * per_request * 3 / 2;
  }

  explicit DecodeBatch(CacheManager& cache) : cache_(cache) {}
  DecodeBatch(const DecodeBatch&) = delete;
  DecodeBatch& operator=(const DecodeBatch&) = delete;

  // Admits every request; prompt lengths are staggered over 16 tokens so
  // block boundaries are spread over steps. Returns false when the pool is
  // too small.
  bool Start() {
    slots_.resize(kBatch);
    for (std::uint32_t i = 0; i < kBatch; ++i) {
      slots_[i].prompt = bench::RandomTokens(kPromptTokens + i % 16, 100 + i);
      if (!Admit(slots_[i])) return false;
    }
    FinishAdmissions();
    return true;
  }

  // The scheduler's allocation for one decode step of every request.
  // Returns false when an allocation failed.
  bool Allocate() {
    bool ok = true;
    for (Slot& slot : slots_) {
      std::optional<NewBlocks> placed = cache_.Allocate(
          *slot.request,
          {.num_computed_tokens = slot.num_computed, .num_new_tokens = 1});
      ok = ok && placed.has_value();
      benchmark::DoNotOptimize(placed);
    }
    return ok;
  }

  // After the model ran: commit each request's new token and append the
  // token it sampled (keying every 16th).
  void Commit() {
    for (Slot& slot : slots_) {
      cache_.Commit(*slot.request, ++slot.num_computed);
      if (!Finished(slot)) slot.request->AppendTokens(Sample());
    }
  }

  // Frees and re-admits the requests that finished. Returns false when the
  // pool is too small.
  bool RestartFinished() {
    for (Slot& slot : slots_) {
      if (Finished(slot) && !Admit(slot)) return false;
    }
    FinishAdmissions();
    return true;
  }

 private:
  struct Slot {
    std::vector<TokenId> prompt;
    std::optional<Request> request;
    std::uint32_t num_computed = 0;
  };

  static bool Finished(const Slot& slot) {
    return slot.num_computed - slot.request->num_prompt_tokens() >=
           kDecodeTokens;
  }

  std::array<TokenId, 1> Sample() {
    return {static_cast<TokenId>(sampler_() % bench::kVocabSize)};
  }

  // Prefills the slot's prompt (after freeing its previous request) and
  // samples its first output token.
  bool Admit(Slot& slot) {
    if (slot.request) cache_.Free(slot.request->id());
    Request& request =
        slot.request.emplace(RequestOptions{.id = RequestId{next_id_++}},
                             slot.prompt, cache_.key_scheme());
    const CacheHit hit = cache_.Lookup(request);
    const std::uint32_t n = request.num_tokens();
    if (!cache_.Allocate(request,
                         {.num_new_tokens = n - hit.num_tokens, .hit = &hit})) {
      return false;
    }
    cache_.Commit(request, n);
    slot.num_computed = n;
    request.AppendTokens(Sample());
    return true;
  }

  // The engine runs the copies a partial-block hit queued, then the step
  // ends and their pins go.
  void FinishAdmissions() {
    cache_.TakeCopies();
    cache_.FinishStep();
  }

  CacheManager& cache_;
  std::vector<Slot> slots_;
  std::mt19937 sampler_{7};
  std::uint64_t next_id_ = 1;
};

// Full attention at block state.range(0), or with kHybrid the engine's
// hybrid as hkv.vllm configures it (bench::EngineHybrid, no record of
// evicted keys): its window holds up to 4096 tokens a request and its
// recurrent state a few blocks, so three times the blocks.
template <bool kHybrid>
Result<CacheManager> MakeDecodeCache(const benchmark::State& state) {
  const auto block = static_cast<std::uint32_t>(state.range(0));
  if constexpr (kHybrid) {
    CacheConfig config =
        bench::EngineHybrid(block, 3 * DecodeBatch::PoolBlocks(block));
    config.eviction_record = EvictionRecord::kOff;
    return CacheManager::Create(config);
  }
  return CacheManager::Create({.groups = {{.block_size = block}},
                               .num_blocks = DecodeBatch::PoolBlocks(block),
                               .keys = {}});
}

// Items are request-steps; per_request is the measured time of one.
void ReportPerRequest(benchmark::State& state) {
  state.SetItemsProcessed(state.iterations() * DecodeBatch::kBatch);
  state.counters["per_request"] = benchmark::Counter(
      DecodeBatch::kBatch, benchmark::Counter::kIsIterationInvariantRate |
                               benchmark::Counter::kInvert);
}

// One iteration is one step of the whole batch. Only Allocate (and Commit
// when kTimeCommit) is timed; restarts and the step's end are never timed.
template <bool kTimeCommit, bool kHybrid = false>
void RunDecodeSteps(benchmark::State& state) {
  Result<CacheManager> cache = MakeDecodeCache<kHybrid>(state);
  if (!cache) {
    state.SkipWithError(cache.error().message.c_str());
    return;
  }
  DecodeBatch batch(*cache);
  if (!batch.Start()) {
    state.SkipWithError("the pool cannot hold the batch");
    return;
  }
  for (auto _ : state) {
    bool allocated = false;
    bench::TimeIteration(state, [&] {
      allocated = batch.Allocate();
      if constexpr (kTimeCommit) batch.Commit();
    });
    if constexpr (!kTimeCommit) batch.Commit();
    cache->FinishStep();  // as the scheduler's next step starts
    if (!allocated || !batch.RestartFinished()) {
      state.SkipWithError("an allocation failed");
      break;
    }
  }
  ReportPerRequest(state);
}

// Allocate alone: {.num_computed_tokens = n, .num_new_tokens = 1} per request.
void BM_Allocate_DecodeStep(benchmark::State& state) {
  RunDecodeSteps<false>(state);
}
BENCHMARK(BM_Allocate_DecodeStep)
    ->ArgName("block")
    ->Arg(16)
    ->Arg(256)
    ->UseManualTime();

// The whole step per request: Allocate, Commit(n + 1), AppendTokens(1).
void BM_CacheManager_DecodeStep(benchmark::State& state) {
  RunDecodeSteps<true>(state);
}
BENCHMARK(BM_CacheManager_DecodeStep)
    ->ArgName("block")
    ->Arg(16)
    ->Arg(256)
    ->UseManualTime();

// The whole step per request on the engine's hybrid (full attention, a
// 4096-token window, a recurrent state in align mode; block 16, the engine's
// behaviour): what hkv.vllm's allocate_slots runs in C++ for the decode
// workload of bench_scheduler_step.py. A step crosses a boundary of some
// group for about 3 requests in 16.
void BM_CacheManager_DecodeStep_Hybrid(benchmark::State& state) {
  RunDecodeSteps<true, true>(state);
}
BENCHMARK(BM_CacheManager_DecodeStep_Hybrid)
    ->ArgName("block")
    ->Arg(16)
    ->UseManualTime();

}  // namespace
}  // namespace hkv
