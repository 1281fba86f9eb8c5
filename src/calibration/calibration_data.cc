// Calibration data files, preset files with new coefficients, and running a
// scenario on a preset (hkv/calibration.h).
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "hkv/calibration.h"

namespace hkv {
namespace {

using Json = nlohmann::json;

void SetCapacity(MeasuredFigure& f, const Json& capacity) {
  for (const auto& [key, value] : capacity.items()) {
    if (key == "max_model_len") {
      f.max_model_len = value.get<std::uint64_t>();
    } else if (key == "pool_tokens") {
      f.value = value.get<double>();
    } else if (key == "concurrency") {
      f.concurrency = value.get<double>();
    } else {
      throw std::invalid_argument("unknown capacity field \"" + key + "\"");
    }
  }
  if (f.max_model_len == 0) {
    throw std::invalid_argument("capacity needs max_model_len");
  }
}

MeasuredFigure FigureOf(const Json& j) {
  MeasuredFigure f;
  for (const auto& [key, value] : j.items()) {
    if (key == "id") {
      f.id = value.get<std::string>();
    } else if (key == "preset") {
      f.preset = value.get<std::string>();
    } else if (key == "geometry") {
      f.geometry = value.get<std::string>();
    } else if (key == "scenario") {
      f.scenario = value.get<std::string>();
    } else if (key == "figure") {
      f.figure = value.get<std::string>();
    } else if (key == "value") {
      f.value = value.get<double>();
    } else if (key == "capacity") {
      SetCapacity(f, value);
    } else if (key == "source") {
      f.source = value.get<std::string>();
    } else if (key != "note" && key != "metric") {
      throw std::invalid_argument("unknown field \"" + key + "\"");
    }
  }
  if (f.id.empty() || f.preset.empty() || f.geometry.empty()) {
    throw std::invalid_argument("id, preset and geometry are required");
  }
  if (f.scenario.empty() == (f.max_model_len == 0)) {
    throw std::invalid_argument("give a scenario and figure, or a capacity");
  }
  if (!(f.value > 0.0)) throw std::invalid_argument("value must be > 0");
  return f;
}

}  // namespace

Result<CalibrationData> ParseCalibrationData(std::string_view json_text) {
  CalibrationData data;
  std::size_t index = 0;
  try {
    const Json doc = Json::parse(json_text);
    if (!doc.is_object()) throw std::invalid_argument("not a JSON object");
    bool held_out = false;
    if (doc.contains("held_out")) {
      if (!doc["held_out"].is_boolean()) {
        throw std::invalid_argument("held_out must be true or false");
      }
      held_out = doc["held_out"].get<bool>();
    }
    for (const auto& [key, value] : doc.items()) {
      if (key == "figures") {
        for (const Json& figure : value) {
          data.figures.push_back(FigureOf(figure));
          data.figures.back().independent = held_out;
          ++index;
        }
      } else if (key != "description" && key != "source" && key != "licence" &&
                 key != "held_out") {
        throw std::invalid_argument("unknown field \"" + key + "\"");
      }
    }
  } catch (const std::exception& e) {
    return Fail(
        ErrorCode::kInvalidArgument,
        "calibration data, figure " + std::to_string(index) + ": " + e.what());
  }
  return data;
}

Result<std::string> WithCost(std::string_view preset_json,
                             const CostModel& cost) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(
      preset_json, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) {
    return Fail(ErrorCode::kInvalidArgument, "preset file is not an object");
  }
  doc["cost"] = nlohmann::ordered_json::parse(CostJson(cost));
  return doc.dump(2) + "\n";
}

SimulationOptions PresetEngine(const DeploymentPreset& preset) {
  return {.cost = preset.cost,
          .limits = {.max_num_batched_tokens = preset.max_batched_tokens},
          .speculation = {.num_drafts = preset.speculative_tokens,
                          .acceptance_rate = preset.acceptance_rate,
                          .lookahead_slots = preset.speculative_tokens},
          .arrivals = ArrivalMode::kClosedLoop};
}

Result<ScenarioRun> RunScenario(const DeploymentPreset& preset,
                                std::string_view geometry,
                                std::string_view scenario_spec) {
  Result<Scenario> scenario = ParseScenario(scenario_spec);
  if (!scenario) return tl::unexpected(scenario.error());
  DeploymentSpec spec = preset.spec;
  if (!geometry.empty()) {
    if (Result<void> ok = ParsePageGeometry(geometry, spec); !ok) {
      return tl::unexpected(ok.error());
    }
  }
  Result<ResolvedDeployment> deployment = ResolveDeployment(spec);
  if (!deployment) return tl::unexpected(deployment.error());
  ScenarioRun run{.scenario = *scenario,
                  .deployment = std::move(*deployment),
                  .engine = PresetEngine(preset)};
  run.engine.cache = run.deployment.cache;
  run.engine.page_bytes = run.deployment.page_bytes;
  run.engine.concurrency = ScenarioConcurrency(run.scenario);
  run.engine.record_steps = true;
  const std::vector<SimRequest> workload = GenerateScenario(run.scenario);
  Result<SimulationResult> result = Simulate(workload, run.engine);
  if (!result) return tl::unexpected(result.error());
  run.result = std::move(*result);
  return run;
}

}  // namespace hkv
