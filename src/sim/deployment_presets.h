// The deployment presets of data/deployments/ and the hardware presets of
// data/hardware/, compiled in (the build generates deployment_presets.cc and
// hardware_presets.cc from their .cc.in templates and the JSON files).
#pragma once

#include <span>
#include <string_view>

namespace hkv::internal {

struct DeploymentPresetText {
  std::string_view name;  // the file name without .json
  std::string_view json;
};

// Every preset, in file-name order.
std::span<const DeploymentPresetText> DeploymentPresetTexts();
std::span<const DeploymentPresetText> HardwarePresetTexts();

}  // namespace hkv::internal
