// The model presets of data/models/, compiled in (the build generates
// presets.cc from presets.cc.in and the JSON files).
#pragma once

#include <span>
#include <string_view>

namespace hkv::internal {

struct PresetText {
  std::string_view name;  // the file name without .json
  std::string_view json;
};

// Every preset, in file-name order.
std::span<const PresetText> Presets();

}  // namespace hkv::internal
