// Output of `hkv simulate` and `hkv compare`: text (one column per
// configuration), CSV (one row per configuration) and JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hkv/simulator.h"

namespace hkv::cli {

struct SimReport {
  std::string label;
  const SimulationResult* result;  // not null
  std::string cost_model;
  double wall_s = 0.0;  // real time of the run
};

void PrintText(const std::vector<SimReport>& reports);
void PrintCsv(const std::vector<SimReport>& reports);
nlohmann::json ReportJson(const SimReport& report);

// Open loop: the offered load against what the modelled engine served;
// a warning on stderr when the queue kept growing.
void PrintLoad(const std::vector<SimRequest>& workload,
               const SimReport& report);

}  // namespace hkv::cli
