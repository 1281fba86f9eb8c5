// The deployment presets of data/deployments/, compiled in (the build
// generates deployment_presets.cc from deployment_presets.cc.in and the JSON
// files).
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

}  // namespace hkv::internal
