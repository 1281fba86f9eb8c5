// The cluster index (hkv/cluster_index.h): one query of a 128k-token prompt
// (512 keys of 256 tokens) against 8 instances holding `blocks` keys each,
// of the 3-group hybrid of hybrid_bench.cc (full attention 2048, recurrent
// 256, a 4096-token window over 2048-token blocks). Instance k holds the
// prompt's attention chain to k/8 of its length and states every 8 units
// below it; the rest of each instance is other prompts' keys. By keys
// given (the router has them from the engine), and by tokens (hashed
// first); hashes as bytes or as their low 64 bits. Counters: the worst
// single query, and bytes per indexed key.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "common.h"
#include "hkv/cluster_index.h"
#include "hkv/request.h"

namespace hkv {
namespace {

constexpr std::uint32_t kInstances = 8;

// Another prompt's key: uniform bytes, as a digest's.
BlockHash Filler(std::uint64_t n) {
  BlockHash h;
  for (std::size_t word = 0; word < 4; ++word) {
    std::uint64_t x = n * 4 + word + 0x9e3779b97f4a7c15;  // SplitMix64
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9;
    x = (x ^ (x >> 27)) * 0x94d049bb133111eb;
    x ^= x >> 31;
    for (std::size_t i = 0; i < 8; ++i) {
      h.bytes[8 * word + i] = static_cast<std::uint8_t>(x >> (8 * i));
    }
  }
  return h;
}

struct Cluster {
  std::unique_ptr<ClusterIndex> index;
  std::vector<TokenId> tokens;
  std::vector<BlockHash> keys;
};

// Fills every instance with `blocks` keys: the prompt's share, then fillers.
bool Fill(Cluster& c, std::uint32_t blocks, HashEncoding hashes) {
  Result<std::unique_ptr<ClusterIndex>> index =
      ClusterIndex::Create({.instance_config = bench::HybridOfThreeGroups(),
                            .capacity_keys = blocks,
                            .hashes = hashes},
                           kInstances);
  if (!index) return false;
  c.index = std::move(*index);
  c.tokens = bench::RandomTokens(bench::k128k, 7);
  const Request r({}, c.tokens, c.index->key_scheme());
  c.keys.assign(r.keys().begin(), r.keys().end());
  std::uint64_t next_filler = 0;
  for (std::uint32_t k = 0; k < kInstances; ++k) {
    const std::size_t units = c.keys.size() * k / kInstances;
    std::vector<KvEvent> events;
    BlockStored attention{.group = GroupId{0}};
    BlockStored states{.group = GroupId{1}};
    BlockStored window{.group = GroupId{2}};
    for (std::size_t u = 7; u < units; u += 8) {  // 2048-token blocks
      attention.block_hashes.push_back(c.keys[u]);
      window.block_hashes.push_back(c.keys[u]);
      states.block_hashes.push_back(c.keys[u]);
    }
    const std::size_t held = attention.block_hashes.size() * 3;
    events.push_back(std::move(attention));
    events.push_back(std::move(states));
    events.push_back(std::move(window));
    for (std::uint32_t g = 0; g < 3; ++g) {
      BlockStored fillers{.group = GroupId{g}};
      for (std::size_t i = held + g; i < blocks; i += 3) {
        fillers.block_hashes.push_back(Filler(next_filler++));
      }
      events.push_back(std::move(fillers));
    }
    if (!c.index->Apply(k, events)) return false;
  }
  return true;
}

template <typename Query>
void TimeQueries(benchmark::State& state, const Cluster& c, Query&& query) {
  double worst_us = 0.0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<InstanceMatch> matches = query();
    const std::chrono::duration<double, std::micro> took =
        std::chrono::steady_clock::now() - start;
    worst_us = std::max(worst_us, took.count());
    benchmark::DoNotOptimize(matches);
  }
  state.counters["worst_us"] = worst_us;
  std::uint64_t keys = 0;
  for (std::uint32_t k = 0; k < kInstances; ++k) {
    for (std::uint64_t n : c.index->ResidentKeys(k)) keys += n;
  }
  state.counters["B_per_key"] =
      static_cast<double>(c.index->MemoryBytes()) / static_cast<double>(keys);
}

void BM_Index_Query128kKeys(benchmark::State& state) {
  Cluster c;
  const HashEncoding hashes =
      state.range(1) != 0 ? HashEncoding::kLow64 : HashEncoding::kBytes;
  if (!Fill(c, static_cast<std::uint32_t>(state.range(0)), hashes)) {
    state.SkipWithError("cannot fill the index");
    return;
  }
  const std::vector<InstanceMatch> first =
      *c.index->MatchKeys(c.keys, bench::k128k);
  if (first[kInstances - 1].hybrid_tokens == 0) {
    state.SkipWithError("the deepest instance matched nothing");
    return;
  }
  TimeQueries(state, c,
              [&] { return *c.index->MatchKeys(c.keys, bench::k128k); });
}
BENCHMARK(BM_Index_Query128kKeys)
    ->ArgNames({"blocks", "low64"})
    ->Args({1 << 14, 0})
    ->Args({1 << 14, 1})
    ->Args({1'000'000, 0})
    ->Args({1'000'000, 1})
    ->Unit(benchmark::kMicrosecond);

void BM_Index_Query128kTokens(benchmark::State& state) {
  Cluster c;
  if (!Fill(c, static_cast<std::uint32_t>(state.range(0)),
            HashEncoding::kBytes)) {
    state.SkipWithError("cannot fill the index");
    return;
  }
  TimeQueries(state, c, [&] { return c.index->Match(c.tokens); });
}
BENCHMARK(BM_Index_Query128kTokens)
    ->ArgName("blocks")
    ->Arg(1 << 14)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMicrosecond);

// One batch storing the same key `copies` times (a hostile or a very
// repetitive engine): each copy is a key the index holds until its removal,
// so applying the batch must be linear in its length.
void BM_Index_ApplyRepeatedKey(benchmark::State& state) {
  const auto copies = static_cast<std::size_t>(state.range(0));
  Result<std::unique_ptr<ClusterIndex>> index = ClusterIndex::Create(
      {.instance_config = bench::HybridOfThreeGroups(),
       .capacity_keys = static_cast<std::uint32_t>(copies)},
      1);
  if (!index) {
    state.SkipWithError("cannot make the index");
    return;
  }
  const std::vector<KvEvent> batch = {
      BlockStored{.block_hashes = std::vector<BlockHash>(copies, Filler(1)),
                  .group = GroupId{0}}};
  for (auto _ : state) {
    (*index)->Clear(0);
    if (!(*index)->Apply(0, batch)) state.SkipWithError("apply failed");
  }
  state.SetItemsProcessed(state.iterations() *
                          static_cast<std::int64_t>(copies));
}
BENCHMARK(BM_Index_ApplyRepeatedKey)
    ->ArgName("copies")
    ->Arg(10'000)
    ->Arg(100'000)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace hkv
