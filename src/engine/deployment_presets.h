// The deployment presets of data/deployments/ and the hardware presets of
// data/hardware/, compiled in (the build generates deployment_presets.cc and
// hardware_presets.cc from their .cc.in templates and the JSON files).
#pragma once

#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/result.h"

namespace hkv::internal {

struct DeploymentPresetText {
  std::string_view name;  // the file name without .json
  std::string_view json;
};

// Every preset, in file-name order.
std::span<const DeploymentPresetText> DeploymentPresetTexts();
std::span<const DeploymentPresetText> HardwarePresetTexts();

// The presets' names, sorted.
inline std::vector<std::string> SortedNames(
    std::span<const DeploymentPresetText> presets) {
  std::vector<std::string> names;
  for (const DeploymentPresetText& p : presets) names.emplace_back(p.name);
  std::sort(names.begin(), names.end());
  return names;
}

// The preset called `name`; kNotFound naming `what` and listing the
// presets otherwise.
inline Result<std::string_view> FindPresetJson(
    std::span<const DeploymentPresetText> presets, std::string_view name,
    std::string_view what) {
  for (const DeploymentPresetText& p : presets) {
    if (p.name == name) return p.json;
  }
  std::string known;
  for (const std::string& n : SortedNames(presets)) {
    known += (known.empty() ? "" : ", ") + n;
  }
  return Fail(ErrorCode::kNotFound, "unknown " + std::string(what) + " \"" +
                                        std::string(name) +
                                        "\" (presets: " + known + ")");
}

}  // namespace hkv::internal
