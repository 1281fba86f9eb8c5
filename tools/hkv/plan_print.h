// Text and JSON output of `hkv plan`.
#pragma once

#include <string>
#include <vector>

#include "hkv/planner.h"

namespace hkv::cli {

// One planned geometry and how the user asked for it ("2048/256/256",
// "auto").
struct PlanRow {
  std::string label;
  Plan plan;
};

struct PlanReport {
  std::string model;
  PlanOptions options;
  std::vector<PlanRow> rows;
};

// One row per geometry under a header; docs/planner.md explains the columns.
void PrintPlanText(const PlanReport& report);

// One JSON object with every figure of every plan.
void PrintPlanJson(const PlanReport& report);

}  // namespace hkv::cli
