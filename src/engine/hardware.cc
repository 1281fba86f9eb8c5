// The hardware presets of data/hardware/ (hkv/hardware.h).
#include "hkv/hardware.h"

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "engine/deployment_presets.h"

namespace hkv {
namespace {

using Json = nlohmann::json;

double* Figure(HardwareSpec& h, const std::string& key) {
  if (key == "memory_bandwidth") return &h.memory_bandwidth;
  if (key == "bf16_flops") return &h.bf16_flops;
  if (key == "fp8_flops") return &h.fp8_flops;
  if (key == "fp4_flops") return &h.fp4_flops;
  if (key == "link_bandwidth") return &h.link_bandwidth;
  if (key == "link_latency_s") return &h.link_latency_s;
  return nullptr;
}

HardwareSpec HardwareOf(const Json& j) {
  if (!j.is_object()) throw std::invalid_argument("not a JSON object");
  HardwareSpec h;
  for (const auto& [key, value] : j.items()) {
    if (double* figure = Figure(h, key)) {
      if (!value.is_number()) {
        throw std::invalid_argument(key + " must be a number");
      }
      *figure = value.get<double>();
    } else if (key == "name") {
      h.name = value.get<std::string>();
    } else if (key == "source") {
      h.sources = value.get<std::vector<std::string>>();
    } else if (key != "description" && key != "licence") {
      throw std::invalid_argument("unknown field \"" + key + "\"");
    }
  }
  return h;
}

}  // namespace

Result<Precision> ParsePrecision(std::string_view text) {
  for (const Precision p :
       {Precision::kBf16, Precision::kFp8, Precision::kFp4}) {
    if (PrecisionName(p) == text) return p;
  }
  return Fail(
      ErrorCode::kInvalidArgument,
      "unknown precision \"" + std::string(text) + "\" (bf16, fp8, fp4)");
}

std::string_view PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kFp8:
      return "fp8";
    case Precision::kFp4:
      return "fp4";
    default:
      return "bf16";
  }
}

Result<void> HardwareSpec::Validate() const {
  for (const auto& [field, value] :
       {std::pair{"memory_bandwidth", memory_bandwidth},
        {"bf16_flops", bf16_flops},
        {"fp8_flops", fp8_flops},
        {"fp4_flops", fp4_flops},
        {"link_bandwidth", link_bandwidth}}) {
    if (!(value > 0.0 && value < 1e30)) {
      return Fail(ErrorCode::kInvalidArgument,
                  "hardware " + name + ": " + field + " must be positive");
    }
  }
  if (!(link_latency_s >= 0.0 && link_latency_s < 1.0)) {
    return Fail(ErrorCode::kInvalidArgument,
                "hardware " + name + ": link_latency_s must be in [0, 1) s");
  }
  return {};
}

double PeakFlops(const HardwareSpec& hardware, Precision precision) {
  switch (precision) {
    case Precision::kFp8:
      return hardware.fp8_flops;
    case Precision::kFp4:
      return hardware.fp4_flops;
    default:
      return hardware.bf16_flops;
  }
}

Result<HardwareSpec> ParseHardwarePreset(std::string_view json_text) {
  HardwareSpec hardware;
  try {
    hardware = HardwareOf(Json::parse(json_text));
  } catch (const std::exception& e) {  // nlohmann's and ours
    return Fail(ErrorCode::kInvalidArgument,
                std::string("hardware preset: ") + e.what());
  }
  if (hardware.name.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "hardware preset: no name");
  }
  if (Result<void> ok = hardware.Validate(); !ok) {
    return tl::unexpected(ok.error());
  }
  return hardware;
}

Result<HardwareSpec> LoadHardwarePreset(std::string_view name) {
  Result<std::string_view> json = internal::FindPresetJson(
      internal::HardwarePresetTexts(), name, "hardware");
  if (!json) return tl::unexpected(json.error());
  return ParseHardwarePreset(*json);
}

std::vector<std::string> HardwarePresetNames() {
  return internal::SortedNames(internal::HardwarePresetTexts());
}

}  // namespace hkv
