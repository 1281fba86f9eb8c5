// get_num_common_prefix_blocks of hkv.vllm's manager core (vllm_core.h):
// the scheduler asks once a step, for every group. A request holding blocks
// is answered here in one call; caching off, a request holding none (to
// raise about) and anything not plain go to the manager's Python.
#include <cstdint>

#include "bindings.h"
#include "fast_call.h"
#include "vllm_core.h"
#include "vllm_tracked.h"

namespace hkv::python {
namespace {

// The per-group counts, or a null object when the manager's Python answers.
py::object CommonPrefixBlocks(const Core& core, PyObject* request_id) {
  if (!core.enable_caching || core.cache == nullptr ||
      !PyDict_CheckExact(core.tracked)) {
    return {};
  }
  const Tracked* t =
      AsTracked(PyDict_GetItemWithError(core.tracked, request_id));
  if (t == nullptr || !t->holds) {
    PyErr_Clear();
    return {};
  }
  const CacheManager& cache = *core.cache;
  const RequestId id{static_cast<std::uint64_t>(t->id)};
  const std::uint32_t num_groups = cache.num_groups();
  py::list counts(num_groups);
  for (std::uint32_t g = 0; g < num_groups; ++g) {
    PyObject* count =
        PyLong_FromUnsignedLong(cache.NumCommonPrefixBlocks(id, GroupId{g}));
    if (count == nullptr) throw py::error_already_set();
    PyList_SET_ITEM(counts.ptr(), g, count);
  }
  return counts;
}

}  // namespace

PyObject* GetNumCommonPrefixBlocksMethod(PyObject* self, PyObject* const* args,
                                         Py_ssize_t nargs, PyObject* kwnames) {
  const Core& core = *reinterpret_cast<Core*>(self);
  PyObject* done = Guarded([&] {
    return nargs == 1 && kwnames == nullptr ? CommonPrefixBlocks(core, args[0])
                                            : py::object();
  });
  if (done != nullptr || PyErr_Occurred()) return done;
  return CallPython(self, Names().python_get_num_common_prefix_blocks, args,
                    nargs, kwnames);
}

}  // namespace hkv::python
