// Accelerators the physical cost model knows (data/hardware/, compiled in):
// the published peaks of one GPU and of the link its tensor-parallel
// all-reduce runs over, each with its source. A cost model never fits these;
// it fits how far below them a deployment runs (docs/calibration.md).
//
// Thread-safety: value types and pure functions.
//
// Example:
//   Result<HardwareSpec> gb10 = LoadHardwarePreset("gb10");
//   double flops = PeakFlops(*gb10, Precision::kBf16);
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hkv/result.h"

namespace hkv {

// The operand precision of a deployment's matrix multiplications.
enum class Precision { kBf16, kFp8, kFp4 };

// "bf16", "fp8" or "fp4"; kInvalidArgument naming the text otherwise.
[[nodiscard]] Result<Precision> ParsePrecision(std::string_view text);
std::string_view PrecisionName(Precision precision);

struct HardwareSpec {
  std::string name = {};
  double memory_bandwidth = 0.0;  // bytes/s
  // Dense tensor-core peaks, FLOP/s.
  double bf16_flops = 0.0;
  double fp8_flops = 0.0;
  double fp4_flops = 0.0;
  double link_bandwidth = 0.0;  // bytes/s per GPU of all-reduce traffic
  double link_latency_s = 0.0;  // per collective
  std::vector<std::string> sources = {};

  // kInvalidArgument naming a figure that is not positive (the latency may
  // be 0).
  [[nodiscard]] Result<void> Validate() const;
};

double PeakFlops(const HardwareSpec& hardware, Precision precision);

// Parses a hardware preset. kInvalidArgument naming the field otherwise.
[[nodiscard]] Result<HardwareSpec> ParseHardwarePreset(
    std::string_view json_text);

// The compiled-in preset `name`; kNotFound listing them otherwise.
[[nodiscard]] Result<HardwareSpec> LoadHardwarePreset(std::string_view name);

// The compiled-in presets' names, sorted.
std::vector<std::string> HardwarePresetNames();

}  // namespace hkv
