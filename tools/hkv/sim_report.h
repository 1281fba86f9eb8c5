// Output of `hkv simulate` and `hkv compare`: text (one column per
// configuration), CSV (one row per configuration) and JSON.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hkv/comparison.h"
#include "hkv/deployment.h"
#include "hkv/scenarios.h"
#include "hkv/simulator.h"

namespace hkv::cli {

struct SimReport {
  std::string label;
  const SimulationResult* result;  // not null
  std::string cost_model;
  double wall_s = 0.0;  // real time of the run
  // A deployment's resolved groups and capacity (empty, unset otherwise).
  std::string groups = {};
  std::optional<DeploymentCapacity> capacity = std::nullopt;
  std::uint64_t max_model_len = 0;
  const std::vector<ScenarioFigure>* figures = nullptr;  // may be empty
  // Open loop: the offered load against the served (JSON "saturation").
  std::optional<Load> load = std::nullopt;
};

void PrintText(const std::vector<SimReport>& reports);
void PrintCsv(const std::vector<SimReport>& reports);
nlohmann::json ReportJson(const SimReport& report);

// Open loop: the offered load against what the modelled engine served;
// a warning on stderr when the queue kept growing (the JSON says so too).
void PrintLoad(const SimReport& report);

}  // namespace hkv::cli
