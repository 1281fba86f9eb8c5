// Fuzzes the Azure trace parser (ParseAzureTrace) and its prefix options:
// the last bytes of the input choose the options (FuzzedDataProvider takes
// numbers from the end), the rest is the CSV text. A trace it accepts must
// be a valid workload.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "hkv/azure_trace.h"
#include "hkv/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  FuzzedDataProvider in(data, size);
  hkv::AzurePrefixOptions options{
      .num_prefixes = in.ConsumeIntegralInRange<std::uint32_t>(0, 8),
      .prefix_tokens = in.ConsumeIntegral<std::uint32_t>(),
      .shared_fraction = in.ConsumeProbability<double>(),
      .seed = in.ConsumeIntegral<std::uint64_t>()};
  // Now and then a fraction the validation must judge.
  if (in.ConsumeIntegralInRange(0, 15) == 0) {
    options.shared_fraction = in.ConsumeFloatingPoint<double>();
  }
  const std::string csv = in.ConsumeRemainingBytesAsString();
  const hkv::Result<std::vector<hkv::SimRequest>> workload =
      hkv::ParseAzureTrace(csv, options);
  if (!workload) return 0;
  const hkv::Result<void> valid = hkv::ValidateWorkload(*workload);
  hkv::fuzz::Require(valid.has_value(),
                     "an accepted Azure trace is a valid workload: " +
                         (valid ? "" : valid.error().message));
  return 0;
}
