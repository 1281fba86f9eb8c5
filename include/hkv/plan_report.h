// What `hkv plan` reports, as library calls the tool and Python share: a
// model named by preset or file, the plans of the geometries asked for (or
// the best of a search), and their JSON (docs/planner.md).
//
// Thread-safety: pure functions.
//
// Example:
//   Result<ModelSpec> model = LoadModel("glm53-flash-like");
//   Result<PlanReport> r = PlanGeometries(*model, options, {"2048/256/256"});
//   std::string json = PlanReportJson(*r);
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hkv/model.h"
#include "hkv/planner.h"
#include "hkv/result.h"

namespace hkv {

// One planned geometry and how it was asked for ("2048/256/256", "auto",
// or a search's "T/R1..R2/U").
struct PlanRow {
  std::string label = {};
  Plan plan = {};
};

struct PlanReport {
  std::string model = {};
  PlanOptions options = {};
  std::vector<PlanRow> rows = {};
};

// Whether `model` names a file (it holds '/' or ends in ".json") rather
// than a preset.
bool IsModelFile(std::string_view model);

// A preset by name, or a model JSON file of at most kMaxConfigFileBytes.
// kNotFound listing the presets; kIoError for a file that cannot be read,
// kCorruption for one that is larger or not a valid model, prefixed by its
// path.
[[nodiscard]] Result<ModelSpec> LoadModel(const std::string& model);

// The plans of `geometries` ("T/R/U" or "auto"), in order. The first
// error ends it, prefixed "geometry LABEL: ".
[[nodiscard]] Result<PlanReport> PlanGeometries(
    const ModelSpec& model, const PlanOptions& options,
    std::span<const std::string> geometries);

// The best `top` plans of SearchGeometries(model, options, max_unit), each
// resolved geometry once; a run of plans that differ in the recurrent block
// only (the split layout's state pages do not depend on it, so neither does
// capacity) is one row labelled "T/R1..R2/U".
[[nodiscard]] Result<PlanReport> SearchPlans(const ModelSpec& model,
                                             const PlanOptions& options,
                                             std::uint32_t max_unit,
                                             std::size_t top);

// `hkv plan --json`: {"model", "tp", "dcp", "budget_bytes",
// "context_tokens", "plans": [one object per row]}, indented by 2.
std::string PlanReportJson(const PlanReport& report);

}  // namespace hkv
