// The deployment presets of data/deployments/ (format in
// docs/calibration.md).
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "engine/deployment_presets.h"
#include "hkv/deployment.h"
#include "hkv/planner.h"

namespace hkv {
namespace {

using Json = nlohmann::json;

// A draft object in the model format (data/models/), read through the model
// parser so that both formats stay one.
DraftSpec DraftOf(const Json& draft) {
  const Json model = {{"name", "draft"},
                      {"layers",
                       {{{"kind", "full"},
                         {"count", 1},
                         {"kv_heads", 1},
                         {"head_size", 1},
                         {"dtype", "bf16"}}}},
                      {"draft", draft}};
  Result<ModelSpec> parsed = ParseModelJson(model.dump());
  if (!parsed) throw std::invalid_argument(parsed.error().message);
  return parsed->draft;
}

template <typename E>
void Check(const Result<E>& r) {
  if (!r) throw std::invalid_argument(r.error().message);
}

// One field of the spec part; false when `key` is not one.
bool SetSpecField(DeploymentSpec& s, const std::string& key, const Json& v) {
  if (key == "model") {
    s.model = v.get<std::string>();
  } else if (key == "tp") {
    s.tp = v.get<std::uint32_t>();
  } else if (key == "dcp") {
    s.dcp = v.get<std::uint32_t>();
  } else if (key == "budget") {
    const Result<std::uint64_t> bytes = ParseByteSize(v.get<std::string>());
    Check(bytes);
    s.budget_bytes = *bytes;
  } else if (key == "context_tokens") {
    s.context_tokens = v.get<std::uint64_t>();
  } else if (key == "in_flight_tokens") {
    s.in_flight_tokens = v.get<std::uint32_t>();
  } else if (key == "geometry") {
    Check(ParsePageGeometry(v.get<std::string>(), s));
  } else if (key == "draft") {
    s.draft = DraftOf(v);
  } else if (key == "draft_rewind") {
    const std::string rewind = v.get<std::string>();
    if (rewind != "one-unit" && rewind != "none") {
      throw std::invalid_argument("draft_rewind is one-unit or none");
    }
    s.draft_rewind =
        rewind == "none" ? DraftRewind::kNone : DraftRewind::kOneUnit;
  } else {
    return false;
  }
  return true;
}

DeploymentPreset PresetOf(const Json& j) {
  DeploymentPreset p;
  for (const auto& [key, value] : j.items()) {
    if (SetSpecField(p.spec, key, value)) continue;
    if (key == "name") {
      p.name = value.get<std::string>();
    } else if (key == "max_batched_tokens") {
      p.max_batched_tokens = value.get<std::uint32_t>();
    } else if (key == "speculative_tokens") {
      p.speculative_tokens = value.get<std::uint32_t>();
    } else if (key == "acceptance_rate") {
      p.acceptance_rate = value.get<double>();
    } else if (key == "cost") {
      Result<CostModel> cost = ApplyCostJson({}, value.dump());
      Check(cost);
      p.cost = *cost;
    } else if (key == "hardware") {
      p.hardware = value.get<std::string>();
    } else if (key == "gemm_precision") {
      Result<Precision> precision = ParsePrecision(value.get<std::string>());
      Check(precision);
      p.gemm_precision = *precision;
    } else if (key == "source") {
      p.sources = value.get<std::vector<std::string>>();
    } else if (key == "fit") {
      p.fit_json = value.dump();
    } else if (key != "description" && key != "licence") {
      throw std::invalid_argument("unknown field \"" + key + "\"");
    }
  }
  return p;
}

}  // namespace

Result<DeploymentPreset> ParseDeploymentPreset(std::string_view json_text) {
  DeploymentPreset preset;
  try {
    preset = PresetOf(Json::parse(json_text));
  } catch (const std::exception& e) {  // nlohmann's and ours
    return Fail(ErrorCode::kInvalidArgument,
                std::string("deployment preset: ") + e.what());
  }
  if (preset.name.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "deployment preset: no name");
  }
  if (!(preset.acceptance_rate >= 0.0 && preset.acceptance_rate <= 1.0)) {
    return Fail(ErrorCode::kInvalidArgument,
                "deployment preset " + preset.name +
                    ": acceptance_rate must be in [0, 1]");
  }
  preset.spec.speculative_tokens = preset.speculative_tokens;
  preset.cost.name = preset.name;
  if (Result<void> ok = preset.cost.Validate(); !ok) {
    return tl::unexpected(ok.error());
  }
  if (!preset.hardware.empty()) {
    Result<PhysicalCost> physics = PresetPhysics(preset, preset.spec);
    if (!physics) {
      return Fail(physics.error().code, "deployment preset " + preset.name +
                                            ": " + physics.error().message);
    }
    preset.cost.physics = std::move(*physics);
  }
  return preset;
}

Result<PhysicalCost> PresetPhysics(const DeploymentPreset& preset,
                                   const DeploymentSpec& spec) {
  Result<HardwareSpec> hardware = LoadHardwarePreset(preset.hardware);
  if (!hardware) return tl::unexpected(hardware.error());
  Result<ModelSpec> model = LoadPreset(spec.model);
  if (!model) return tl::unexpected(model.error());
  return ResolvePhysicalCost(*model, spec, *hardware, preset.gemm_precision);
}

std::vector<std::string> DeploymentPresetNames() {
  return internal::SortedNames(internal::DeploymentPresetTexts());
}

Result<DeploymentPreset> LoadDeploymentPreset(std::string_view name) {
  Result<std::string_view> json = internal::FindPresetJson(
      internal::DeploymentPresetTexts(), name, "deployment preset");
  if (!json) return tl::unexpected(json.error());
  return ParseDeploymentPreset(*json);
}

}  // namespace hkv
