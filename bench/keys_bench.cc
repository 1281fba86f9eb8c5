// Key computation: constructing a Request keys every complete hash unit of its
// prompt, so one iteration is the cost of keying a 128k-token prompt.

#include <benchmark/benchmark.h>
#include <openssl/evp.h>

// Inlined, as hkv's digest (core/digest.cc) builds it.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
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

// The digest alone over the bytes keying a 128k-token prompt digests: every
// unit's CBOR input built before the clock starts, then digested one unit at
// a time as keying does (SHA-256 through one fetched EVP_MD and one reused
// context, as hkv's digest runs). Keying's time over this one is the cost of
// its CBOR framing and chaining.
std::vector<std::vector<std::uint8_t>> UnitInputs(KeyFunction function,
                                                  std::uint32_t unit) {
  const std::vector<TokenId> prompt = bench::RandomTokens(bench::k128k, 1);
  const Result<KeyScheme> scheme =
      MakeKeyScheme({.function = function, .hash_unit = unit});
  std::vector<std::vector<std::uint8_t>> inputs;
  if (!scheme) return inputs;
  const std::span<const TokenId> tokens(prompt);
  for (std::size_t k = 0; (k + 1) * unit <= tokens.size(); ++k) {
    inputs.push_back(UnitKeyInput(*scheme, scheme->seed_key,
                                  tokens.subspan(k * unit, unit), {}));
  }
  return inputs;
}

void CountDigested(benchmark::State& state,
                   const std::vector<std::vector<std::uint8_t>>& inputs) {
  std::int64_t bytes = 0;
  for (const auto& input : inputs) bytes += std::ssize(input);
  state.SetItemsProcessed(state.iterations() * bench::k128k);
  state.SetBytesProcessed(state.iterations() * bytes);
}

void BM_Digest_Sha256(benchmark::State& state) {
  const auto inputs = UnitInputs(KeyFunction::kSha256Cbor,
                                 static_cast<std::uint32_t>(state.range(0)));
  EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (md == nullptr || ctx == nullptr || inputs.empty()) {
    state.SkipWithError("no SHA-256 or no inputs");
  } else {
    std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
    unsigned int size = 0;
    for (auto _ : state) {
      for (const auto& input : inputs) {
        EVP_DigestInit_ex2(ctx, md, nullptr);
        EVP_DigestUpdate(ctx, input.data(), input.size());
        EVP_DigestFinal_ex(ctx, out.data(), &size);
        benchmark::DoNotOptimize(out.data());
      }
    }
    CountDigested(state, inputs);
  }
  EVP_MD_CTX_free(ctx);
  EVP_MD_free(md);
}
BENCHMARK(BM_Digest_Sha256)
    ->ArgName("unit")
    ->Arg(16)
    ->Arg(256)
    ->Unit(benchmark::kMillisecond);

void BM_Digest_Xxh3(benchmark::State& state) {
  const auto inputs = UnitInputs(KeyFunction::kXxh3_128Cbor,
                                 static_cast<std::uint32_t>(state.range(0)));
  for (auto _ : state) {
    for (const auto& input : inputs) {
      const XXH128_hash_t hash = XXH3_128bits(input.data(), input.size());
      benchmark::DoNotOptimize(hash);
    }
  }
  CountDigested(state, inputs);
}
BENCHMARK(BM_Digest_Xxh3)
    ->ArgName("unit")
    ->Arg(16)
    ->Arg(256)
    ->Unit(benchmark::kMillisecond);

// The same digests chained as keying chains them: each unit's input takes
// the digest before it as its parent (16 bytes copied in) before it is
// digested, so one digest's latency, not its throughput, sets the pace. The
// floor of keying one prompt, whatever its framing costs.
void BM_Digest_Xxh3Chained(benchmark::State& state) {
  const auto unit = static_cast<std::uint32_t>(state.range(0));
  auto inputs = UnitInputs(KeyFunction::kXxh3_128Cbor, unit);
  const Result<KeyScheme> scheme = MakeKeyScheme(
      {.function = KeyFunction::kXxh3_128Cbor, .hash_unit = unit});
  if (inputs.empty() || !scheme) {
    state.SkipWithError("no inputs");
    return;
  }
  // Where the parent sits: the seed key every input was built with.
  const auto parent = std::span(scheme->seed_key.bytes).first(16);
  const auto at =
      static_cast<std::size_t>(std::search(inputs[0].begin(), inputs[0].end(),
                                           parent.begin(), parent.end()) -
                               inputs[0].begin());
  for (auto _ : state) {
    XXH128_hash_t hash{};
    for (auto& input : inputs) {
      const std::uint64_t words[2] = {__builtin_bswap64(hash.high64),
                                      __builtin_bswap64(hash.low64)};
      std::memcpy(input.data() + at, words, sizeof words);
      hash = XXH3_128bits(input.data(), input.size());
    }
    benchmark::DoNotOptimize(hash);
  }
  CountDigested(state, inputs);
}
BENCHMARK(BM_Digest_Xxh3Chained)
    ->ArgName("unit")
    ->Arg(16)
    ->Arg(256)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace hkv
