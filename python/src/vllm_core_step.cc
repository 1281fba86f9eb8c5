// The calls of hkv.vllm's manager core (vllm_core.h) the scheduler makes
// once a step whatever it schedules: new_step_starts, take_new_block_ids and
// take_events (with events off and none pending; else the manager's Python,
// `_take_events`). Each was a Python method costing a microsecond a step.
#include <string>
#include <utility>

#include "bindings.h"
#include "fast_call.h"
#include "vllm_core.h"

namespace hkv::python {
namespace {

// UsageError naming `what` before _bind_core.
void CheckBound(const Core& core, const char* what) {
  if (core.cache == nullptr || core.block_pool == nullptr) {
    throw UsageError(std::string(what) + ": the manager's core is not bound");
  }
}

}  // namespace

PyObject* NewStepStartsMethod(PyObject* self, PyObject* /*unused*/) {
  Core& core = *reinterpret_cast<Core*>(self);
  return Guarded([&]() -> py::object {
    CheckBound(core, "new_step_starts()");
    core.cache->FinishStep();
    return py::none();
  });
}

PyObject* TakeNewBlockIdsMethod(PyObject* self, PyObject* /*unused*/) {
  Core& core = *reinterpret_cast<Core*>(self);
  return Guarded([&]() -> py::object {
    CheckBound(core, "take_new_block_ids()");
    auto fresh = py::reinterpret_steal<py::object>(PyList_New(0));
    if (!fresh) throw py::error_already_set();
    PyObject* taken = std::exchange(core.new_block_ids, fresh.release().ptr());
    return py::reinterpret_steal<py::object>(taken);
  });
}

PyObject* TakeEventsMethod(PyObject* self, PyObject* /*unused*/) {
  Core& core = *reinterpret_cast<Core*>(self);
  PyObject* done = Guarded([&]() -> py::object {
    CheckBound(core, "take_events()");
    if (EventsOn(core)) return {};
    const py::object pending = Attr(self, Names().pending_events);
    if (!pending || !PyList_CheckExact(pending.ptr()) ||
        PyList_GET_SIZE(pending.ptr()) != 0) {
      return {};
    }
    auto fresh = py::reinterpret_steal<py::object>(PyList_New(0));
    if (!fresh ||
        PyObject_SetAttr(self, Names().pending_events, fresh.ptr()) != 0) {
      throw py::error_already_set();
    }
    return pending;
  });
  if (done != nullptr || PyErr_Occurred()) return done;
  return CallPython(self, Names().python_take_events, nullptr, 0, nullptr);
}

}  // namespace hkv::python
