// Bindings of hkv/planner.h and hkv/model.h: model presets, geometries and
// the capacity planner. Planning runs without the GIL.
#include "hkv/planner.h"

#include <string>
#include <vector>

#include "bindings.h"
#include "hkv/model.h"
#include "hkv/plan_report.h"

namespace hkv::python {
namespace {

void BindModel(py::module_& m) {
  py::enum_<LayerKind>(m, "LayerKind")
      .value("FULL_ATTENTION", LayerKind::kFullAttention)
      .value("SLIDING_WINDOW", LayerKind::kSlidingWindow)
      .value("CHUNKED_LOCAL", LayerKind::kChunkedLocal)
      .value("MLA", LayerKind::kMla)
      .value("RECURRENT", LayerKind::kRecurrent);
  m.def("layer_kind_name",
        [](LayerKind kind) { return std::string(LayerKindName(kind)); });
  // Opaque: the planner's input, named after its preset or file.
  py::class_<ModelSpec>(m, "ModelSpec").def_readonly("name", &ModelSpec::name);
  m.def("preset_names", &PresetNames);
  m.def("load_preset",
        [](std::string_view name) { return ValueOrThrow(LoadPreset(name)); });
  m.def("parse_model_json", [](std::string_view text) {
    return ValueOrThrow(ParseModelJson(text));
  });
  m.def(
      "load_model",
      [](const std::string& model) { return ValueOrThrow(LoadModel(model)); },
      py::arg("model"),
      "A preset by name, or a model JSON file (a path with '/' or ending "
      "in .json), read within the configuration-file limit");
  m.def("parse_byte_size", [](std::string_view text) {
    return ValueOrThrow(ParseByteSize(text));
  });
}

void BindInputs(py::module_& m) {
  py::class_<Geometry>(m, "Geometry")
      .def(py::init<std::uint32_t, std::uint32_t, std::uint32_t>(),
           py::arg("target_block"), py::arg("recurrent_block"),
           py::arg("hash_unit") = 0)
      .def_readwrite("target_block", &Geometry::target_block)
      .def_readwrite("recurrent_block", &Geometry::recurrent_block)
      .def_readwrite("hash_unit", &Geometry::hash_unit)
      .def(py::self == py::self);
  m.def("parse_geometry", [](std::string_view text) {
    return ValueOrThrow(ParseGeometry(text));
  });
  py::class_<PlanOptions>(m, "PlanOptions")
      .def(py::init<>())
      .def_readwrite("tp", &PlanOptions::tp)
      .def_readwrite("dcp", &PlanOptions::dcp)
      .def_readwrite("budget_bytes", &PlanOptions::budget_bytes)
      .def_readwrite("context_tokens", &PlanOptions::context_tokens)
      .def_readwrite("max_batched_tokens", &PlanOptions::max_batched_tokens)
      .def_readwrite("checkpoint_blocks", &PlanOptions::checkpoint_blocks)
      .def_readwrite("speculative_tokens", &PlanOptions::speculative_tokens)
      .def_readwrite("retention_interval", &PlanOptions::retention_interval)
      .def_readwrite("max_scheduled_tokens",
                     &PlanOptions::max_scheduled_tokens);
}

void BindOutputs(py::module_& m) {
  py::class_<GroupPlan>(m, "GroupPlan")
      .def_readonly("kind", &GroupPlan::kind)
      .def_readonly("draft", &GroupPlan::draft)
      .def_readonly("num_layers", &GroupPlan::num_layers)
      .def_readonly("block_tokens", &GroupPlan::block_tokens)
      .def_readonly("slot_bytes", &GroupPlan::slot_bytes)
      .def_readonly("data_bytes", &GroupPlan::data_bytes)
      .def_readonly("waste_bytes", &GroupPlan::waste_bytes)
      .def_readonly("blocks_per_request", &GroupPlan::blocks_per_request)
      .def_readonly("pool_page_bytes", &GroupPlan::pool_page_bytes)
      .def_readonly("pool_blocks", &GroupPlan::pool_blocks);
  py::class_<PoolCapacity>(m, "PoolCapacity")
      .def_readonly("blocks", &PoolCapacity::blocks)
      .def_readonly("blocks_per_request", &PoolCapacity::blocks_per_request)
      .def_readonly("concurrency", &PoolCapacity::concurrency)
      .def_readonly("tokens", &PoolCapacity::tokens)
      .def_readonly("waste", &PoolCapacity::waste);
  py::class_<Plan>(m, "Plan")
      .def_readonly("geometry", &Plan::geometry)
      .def_readonly("scheduler_block", &Plan::scheduler_block)
      .def_readonly("hit_unit", &Plan::hit_unit)
      .def_readonly("partial_hits", &Plan::partial_hits)
      .def_readonly("groups", &Plan::groups)
      .def_readonly("stride_bytes", &Plan::stride_bytes)
      .def_readonly("cost_bytes", &Plan::cost_bytes)
      .def_readonly("baseline_layer_counts", &Plan::baseline_layer_counts)
      .def_readonly("baseline_stride_bytes", &Plan::baseline_stride_bytes)
      .def_readonly("baseline_cost_bytes", &Plan::baseline_cost_bytes)
      .def_readonly("shared", &Plan::shared)
      .def_readonly("per_group", &Plan::per_group)
      .def_readonly("null_bytes", &Plan::null_bytes)
      .def_readonly("reference_tokens", &Plan::reference_tokens);
}

void BindPlanning(py::module_& m) {
  m.def(
      "plan_capacity",
      [](const ModelSpec& model, const Geometry& geometry,
         const PlanOptions& options) {
        py::gil_scoped_release release;
        return ValueOrThrow(PlanCapacity(model, geometry, options));
      },
      py::arg("model"), py::arg("geometry"), py::arg("options"));
  m.def(
      "auto_geometry",
      [](const ModelSpec& model, const PlanOptions& options) {
        return ValueOrThrow(AutoGeometry(model, options));
      },
      py::arg("model"), py::arg("options"));
  m.def(
      "search_geometries",
      [](const ModelSpec& model, const PlanOptions& options,
         std::uint32_t max_hit_unit) {
        py::gil_scoped_release release;
        return ValueOrThrow(SearchGeometries(model, options, max_hit_unit));
      },
      py::arg("model"), py::arg("options"), py::arg("max_hit_unit"));
  m.def(
      "plan_report_json",
      [](const ModelSpec& model, const PlanOptions& options,
         const std::vector<std::string>& geometries, bool search,
         std::uint32_t max_unit, std::size_t top) {
        py::gil_scoped_release release;
        Result<PlanReport> report =
            search ? SearchPlans(model, options, max_unit, top)
                   : PlanGeometries(model, options, geometries);
        return PlanReportJson(ValueOrThrow(std::move(report)));
      },
      py::arg("model"), py::arg("options"), py::arg("geometries"),
      py::arg("search"), py::arg("max_unit"), py::arg("top"));
}

}  // namespace

void BindPlanner(py::module_& m) {
  BindModel(m);
  BindInputs(m);
  BindOutputs(m);
  BindPlanning(m);
}

}  // namespace hkv::python
