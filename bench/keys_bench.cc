// Key computation: constructing a Request keys every complete hash unit of its
// prompt, so one iteration is the cost of keying a 128k-token prompt.

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common.h"
#include "hkv/keys.h"
#include "hkv/request.h"

namespace hkv {
namespace {

// The CBOR bytes digested to key `tokens` (every unit has the same shape, so
// the seed key stands in for the real parents).
std::size_t KeyInputBytes(const KeyScheme& scheme,
                          std::span<const TokenId> tokens) {
  const std::size_t unit = scheme.hash_unit;
  std::size_t bytes = 0;
  for (std::size_t k = 0; (k + 1) * unit <= tokens.size(); ++k) {
    bytes += UnitKeyInput(scheme, scheme.seed_key,
                          tokens.subspan(k * unit, unit), {})
                 .size();
  }
  return bytes;
}

void KeyPrompt(benchmark::State& state, KeyFunction function) {
  const std::vector<TokenId> prompt = bench::RandomTokens(bench::k128k, 1);
  const Result<KeyScheme> scheme =
      MakeKeyScheme({.function = function,
                     .hash_unit = static_cast<std::uint32_t>(state.range(0))});
  if (!scheme) {
    state.SkipWithError(scheme.error().message.c_str());
    return;
  }
  for (auto _ : state) {
    const Request request({.id = RequestId{1}}, prompt, *scheme);
    benchmark::DoNotOptimize(request.keys().data());
  }
  state.SetItemsProcessed(state.iterations() * bench::k128k);
  state.SetBytesProcessed(
      state.iterations() *
      static_cast<std::int64_t>(KeyInputBytes(*scheme, prompt)));
}

void BM_Keys_Sha256Cbor(benchmark::State& state) {
  KeyPrompt(state, KeyFunction::kSha256Cbor);
}
BENCHMARK(BM_Keys_Sha256Cbor)
    ->ArgName("unit")
    ->Arg(16)
    ->Arg(256)
    ->Unit(benchmark::kMillisecond);

void BM_Keys_Xxh3Cbor(benchmark::State& state) {
  KeyPrompt(state, KeyFunction::kXxh3_128Cbor);
}
BENCHMARK(BM_Keys_Xxh3Cbor)
    ->ArgName("unit")
    ->Arg(16)
    ->Arg(256)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace hkv
