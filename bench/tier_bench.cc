// The connector (hkv/tier_connector.h) on a 128k-token prompt (512 units of
// 256 tokens) of the 3-group hybrid of hybrid_bench.cc (full attention
// 2048, recurrent 256, a 4096-token window over 2048-token blocks), whose
// object groups a host tier holds: its states every 2048 tokens, its pages
// and window pages at every block. Lookup (no I/O) with the GPU empty: the
// union of GPU and tier entries, then the cache's own coordinator; and with
// the tier holding nothing past the GPU's hit (the early exit every
// lookup pays). Load: the whole extension read from the host tier and
// placed, 4 KiB parts. Counter: the worst single call.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common.h"
#include "hkv/cache_manager.h"
#include "hkv/object_group.h"
#include "hkv/request.h"
#include "hkv/tier_chain.h"
#include "hkv/tier_connector.h"

namespace hkv {
namespace {

struct Tiered {
  std::unique_ptr<CacheManager> cache;
  std::unique_ptr<TierChain> chain;
  std::unique_ptr<TierConnector> connector;
  std::vector<TokenId> tokens;
};

// A chain holding the prompt's object groups at every 2048-token block
// (all three groups' parts) up to `units` units.
bool Fill(Tiered& t, std::size_t units) {
  Result<CacheManager> cache =
      CacheManager::Create(bench::HybridOfThreeGroups());
  if (!cache) return false;
  t.cache = std::make_unique<CacheManager>(std::move(*cache));
  std::vector<std::unique_ptr<ObjectStore>> stores;
  stores.push_back(MakeHostStore(std::uint64_t{1} << 32));
  t.chain = std::make_unique<TierChain>(
      TierChainOptions{.ns = {.model = "bench",
                              .geometry = "2048/256/256",
                              .salt_domain = ""}},
      std::move(stores));
  Result<TierConnector> connector =
      TierConnector::Create(bench::HybridOfThreeGroups(), *t.chain);
  if (!connector) return false;
  t.connector = std::make_unique<TierConnector>(std::move(*connector));
  t.tokens = bench::RandomTokens(bench::k128k, 7);
  const Request r({}, t.tokens, t.cache->key_scheme());
  std::vector<ObjectGroup> groups;
  for (std::size_t u = 7; u < units; u += 8) {
    ObjectGroup group{.key = r.keys()[u],
                      .end_tokens = static_cast<std::uint32_t>((u + 1) * 256)};
    for (std::uint32_t g = 0; g < 3; ++g)
      group.parts.push_back(
          {.group = GroupId{g}, .bytes = std::string(4096, 'x')});
    groups.push_back(std::move(group));
  }
  return t.chain->Store(groups) == groups.size();
}

template <typename Call>
void TimeCalls(benchmark::State& state, Call&& call) {
  double worst_us = 0.0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(call());
    const std::chrono::duration<double, std::micro> took =
        std::chrono::steady_clock::now() - start;
    worst_us = std::max(worst_us, took.count());
  }
  state.counters["worst_us"] = worst_us;
}

void BM_Tier_Lookup128k(benchmark::State& state) {
  Tiered t;
  const std::size_t units = state.range(0) != 0 ? 512 : 0;
  if (!Fill(t, units)) {
    state.SkipWithError("cannot fill the tier");
    return;
  }
  const Request r({.id = RequestId{1}}, t.tokens, t.cache->key_scheme());
  if ((t.connector->Lookup(*t.cache, r).num_external_tokens > 0) !=
      (units > 0)) {
    state.SkipWithError("the tier's reach is not what was stored");
    return;
  }
  TimeCalls(state, [&] { return t.connector->Lookup(*t.cache, r); });
}
BENCHMARK(BM_Tier_Lookup128k)
    ->ArgName("tier_holds_prompt")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond);

void BM_Tier_Load128k(benchmark::State& state) {
  Tiered t;
  if (!Fill(t, 512)) {
    state.SkipWithError("cannot fill the tier");
    return;
  }
  const Request r({.id = RequestId{1}}, t.tokens, t.cache->key_scheme());
  const TierHit hit = t.connector->Lookup(*t.cache, r);
  const std::optional<NewBlocks> placed = t.cache->Allocate(
      r, {.num_external_computed_tokens = hit.num_external_tokens,
          .num_new_tokens = r.num_tokens() - hit.num_external_tokens,
          .hit = &hit.hit});
  if (!placed) {
    state.SkipWithError("cannot allocate");
    return;
  }
  TimeCalls(state,
            [&] { return t.connector->Load(*t.cache, r, hit, *placed); });
  state.counters["external_tokens"] = hit.num_external_tokens;
}
BENCHMARK(BM_Tier_Load128k)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace hkv
