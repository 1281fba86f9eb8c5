// Bindings of hkv/mooncake_trace.h and hkv/replay.h: Mooncake traces, their
// synthetic prompts, and the C++ replay (the reference the Python engine
// example is checked against). Reading and replaying run without the GIL.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "hkv/keys.h"
#include "hkv/mooncake_trace.h"
#include "hkv/replay.h"

namespace hkv::python {
namespace {

void BindTraceRequest(py::module_& m) {
  py::class_<TraceRequest>(m, "TraceRequest")
      .def(py::init([](py::handle timestamp, py::handle input,
                       py::handle output, py::handle ids) {
             const std::string what = "TraceRequest(): ";
             return TraceRequest{
                 .timestamp_ms =
                     Convert<std::uint64_t>(timestamp, what + "timestamp_ms"),
                 .input_length =
                     Convert<std::uint32_t>(input, what + "input_length"),
                 .output_length =
                     Convert<std::uint32_t>(output, what + "output_length"),
                 .hash_ids = Convert<std::vector<std::uint64_t>>(
                     ids, what + "hash_ids")};
           }),
           py::arg("timestamp_ms"), py::arg("input_length"),
           py::arg("output_length"), py::arg("hash_ids"))
      .def_readwrite("timestamp_ms", &TraceRequest::timestamp_ms)
      .def_readwrite("input_length", &TraceRequest::input_length)
      .def_readwrite("output_length", &TraceRequest::output_length)
      .def_readwrite("hash_ids", &TraceRequest::hash_ids);
  m.def(
      "read_mooncake_trace",
      [](py::handle path, py::handle limit) {
        const std::string file =
            Convert<std::string>(py::module_::import("os").attr("fspath")(path),
                                 "read_mooncake_trace(): path");
        const auto most = Convert<std::optional<std::size_t>>(
            limit, "read_mooncake_trace(): limit");
        py::gil_scoped_release release;
        return ValueOrThrow(ReadMooncakeTrace(file, most));
      },
      py::arg("path"), py::arg("limit") = py::none(),
      "The requests of a Mooncake trace file, at most `limit` of them; "
      "hkv.Error naming file and line for a malformed one");
  m.def("mooncake_tokens", &MooncakeTokens, py::arg("request"));
}

ReplayOptions ToReplayOptions(const py::kwargs& kwargs) {
  ReplayOptions o;
  for (const auto& [key, value] : kwargs) {
    const std::string name = key.cast<std::string>();
    const std::string what = "replay(): " + name;
    if (name == "block_size") {
      o.block_size = Convert<std::uint32_t>(value, what);
    } else if (name == "hash_unit") {
      o.hash_unit = Convert<std::uint32_t>(value, what);
    } else if (name == "key_function") {
      o.key_function = py::isinstance<py::str>(value)
                           ? ValueOrThrow(ParseKeyFunction(
                                 Convert<std::string>(value, what)))
                           : Convert<KeyFunction>(value, what);
    } else if (name == "capacity_tokens") {
      o.capacity_tokens = Convert<std::optional<std::uint64_t>>(value, what);
    } else if (name == "groups") {
      o.groups = Convert<std::vector<GroupSpec>>(value, what);
    } else if (name == "dcp") {
      o.dcp = Convert<std::uint32_t>(value, what);
    } else if (name == "max_num_batched_tokens") {
      o.max_num_batched_tokens = Convert<std::uint32_t>(value, what);
    } else if (name == "retention_interval") {
      o.retention_interval = Convert<std::optional<std::uint32_t>>(value, what);
    } else if (name == "free_order") {
      o.free_order = Convert<FreeOrder>(value, what);
    } else if (name == "retention") {
      o.retention =
          py::isinstance<py::str>(value)
              ? ValueOrThrow(ParseRetention(Convert<std::string>(value, what)))
              : Convert<Retention>(value, what);
    } else {
      throw UsageError("replay() got an unexpected keyword " + name);
    }
  }
  return o;
}

void BindReplay(py::module_& m) {
  py::class_<GroupResidency>(m, "GroupResidency")
      .def_readonly("kind", &GroupResidency::kind)
      .def_readonly("block_size", &GroupResidency::block_size)
      .def_readonly("cached_blocks", &GroupResidency::cached_blocks);
  py::class_<ReplayResult>(m, "ReplayResult")
      .def_readonly("requests", &ReplayResult::requests)
      .def_readonly("prompt_tokens", &ReplayResult::prompt_tokens)
      .def_readonly("hit_tokens", &ReplayResult::hit_tokens)
      .def_readonly("evicted_blocks", &ReplayResult::evicted_blocks)
      .def_readonly("rejected_requests", &ReplayResult::rejected_requests)
      .def_readonly("lookup_ns_median", &ReplayResult::lookup_ns_median)
      .def_readonly("lookup_ns_p99", &ReplayResult::lookup_ns_p99)
      .def_readonly("groups", &ReplayResult::groups)
      .def_readonly("speculative_rewind", &ReplayResult::speculative_rewind)
      .def_readonly("no_checkpoint", &ReplayResult::no_checkpoint)
      .def_readonly("window_not_covered", &ReplayResult::window_not_covered)
      .def_readonly("evicted", &ReplayResult::evicted);
  m.def(
      "replay",
      [](const std::vector<TraceRequest>& trace, const py::kwargs& kwargs) {
        const ReplayOptions options = ToReplayOptions(kwargs);
        py::gil_scoped_release release;
        return ValueOrThrow(Replay(trace, options));
      },
      py::arg("trace"));
}

}  // namespace

void BindTrace(py::module_& m) {
  BindTraceRequest(m);
  BindReplay(m);
}

}  // namespace hkv::python
