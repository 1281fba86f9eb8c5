// Fuzzes the simulator's --workload KIND:ARGS parsing through the library's
// LoadWorkload (hkv/experiment.h), as the CLI calls it. Trace files are the
// Mooncake and Azure targets' business: Mooncake workloads and the default
// (empty) one are skipped, and an Azure workload reads the bundled sample
// whatever path the input names. A workload it accepts must validate.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "hkv/experiment.h"
#include "hkv/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  std::string spec(reinterpret_cast<const char*>(data), size);
  if (spec.empty() || spec.starts_with("mooncake")) return 0;
  if (spec.starts_with("azure:")) {
    const std::size_t comma = spec.find(',');
    spec = "azure:" HKV_FUZZ_AZURE_SAMPLE +
           (comma == std::string::npos ? "" : spec.substr(comma));
  }
  hkv::ExperimentOptions options;
  options.workload = spec;
  const hkv::Result<std::vector<hkv::SimRequest>> workload =
      hkv::LoadWorkload(options);
  if (!workload) return 0;
  const hkv::Result<void> valid = hkv::ValidateWorkload(*workload);
  hkv::fuzz::Require(
      valid.has_value(),
      "an accepted workload is valid: " + (valid ? "" : valid.error().message));
  return 0;
}
