// The operation-sequence fuzzer: the first bytes choose a small cache
// configuration (cache_ops_config.h), the rest a sequence of scheduler calls
// checked against the brute-force oracle and the cache's invariants after
// every call (cache_ops_harness.h). An invalid configuration must be
// refused by both CacheManager::Create and the core.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "cache_ops_config.h"
#include "cache_ops_harness.h"

namespace {

constexpr int kMaxSteps = 256;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  using hkv::fuzz::Check;
  FuzzedDataProvider in(data, size);
  const hkv::CacheConfig config = hkv::fuzz::DecodeCacheConfig(in);
  hkv::fuzz::StartReport(config);
  const hkv::Result<void> validation = config.Validate();
  const bool valid = validation.has_value();
  if (!valid) hkv::fuzz::Note("invalid: " + validation.error().message);
  Check(hkv::CacheManager::Create(config).has_value() == valid,
        "CacheManager::Create disagrees with CacheConfig::Validate");
  if (!valid) {
    bool refused = false;
    try {
      hkv::internal::CacheCore core(config);
    } catch (const hkv::UsageError&) {
      refused = true;
    }
    Check(refused, "the cache core accepted an invalid configuration");
    return 0;
  }
  hkv::fuzz::CacheOpsHarness harness(config, in);
  for (int step = 0; step < kMaxSteps && in.remaining_bytes() > 0; ++step) {
    harness.Step();
  }
  return 0;
}
