// Text output of `hkv plan` (its JSON is the library's PlanReportJson).
#pragma once

#include "hkv/plan_report.h"

namespace hkv::cli {

// One row per geometry under a header; docs/planner.md explains the columns.
void PrintPlanText(const PlanReport& report);

}  // namespace hkv::cli
