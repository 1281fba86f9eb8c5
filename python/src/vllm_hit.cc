#include "vllm_hit.h"

#include <algorithm>
#include <new>
#include <utility>

#include "fast_call.h"

namespace hkv::python {
namespace {

struct Hit {
  PyObject_HEAD CacheHit hit;
};

PyTypeObject* hit_type = nullptr;

// VllmHit(cache_hit): a copy of a bound CacheHit.
PyObject* HitNew(PyTypeObject* /*type: VllmHit, not a base*/, PyObject* args,
                 PyObject* kwargs) {
  PyObject* source = nullptr;
  static const char* names[] = {"cache_hit", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:VllmHit",
                                   const_cast<char**>(names), &source)) {
    return nullptr;
  }
  return Guarded([source] {
    return NewVllmHit(
        CacheHit(Convert<const CacheHit&>(source, "VllmHit(): cache_hit")));
  });
}

void HitDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  reinterpret_cast<Hit*>(self)->hit.~CacheHit();
  type->tp_free(self);
  Py_DECREF(type);
}

// hit(): the block ids per group, a tuple of lists.
PyObject* HitCall(PyObject* self, PyObject* args, PyObject* kwargs) {
  if (PyTuple_GET_SIZE(args) != 0 || (kwargs && PyDict_Size(kwargs) != 0)) {
    PyErr_SetString(PyExc_TypeError, "VllmHit() takes no arguments");
    return nullptr;
  }
  return Guarded([self] {
    const CacheHit& hit = reinterpret_cast<Hit*>(self)->hit;
    py::tuple ids(hit.blocks.size());
    for (std::size_t g = 0; g < hit.blocks.size(); ++g) {
      ids[g] = IdList(hit.blocks[g], false);
    }
    return ids;
  });
}

PyObject* GetNumTokens(PyObject* self, void* /*closure*/) {
  return PyLong_FromUnsignedLong(reinterpret_cast<Hit*>(self)->hit.num_tokens);
}

PyObject* CacheHitCopy(PyObject* self, PyObject* /*unused*/) {
  return Guarded(
      [self] { return py::cast(reinterpret_cast<Hit*>(self)->hit); });
}

PyGetSetDef hit_getset[] = {
    {"num_tokens", GetNumTokens, nullptr, "the tokens the hit covers", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMethodDef hit_methods[] = {
    {"cache_hit", CacheHitCopy, METH_NOARGS,
     "cache_hit(): a copy of the hit as a bound CacheHit."},
    {nullptr, nullptr, 0, nullptr}};

PyType_Slot hit_slots[] = {
    {Py_tp_doc,
     const_cast<char*>("VllmHit(cache_hit): a lookup's hit as hkv.vllm keeps "
                       "it; called, its block ids per group.")},
    {Py_tp_new, reinterpret_cast<void*>(&HitNew)},
    {Py_tp_dealloc, reinterpret_cast<void*>(&HitDealloc)},
    {Py_tp_call, reinterpret_cast<void*>(&HitCall)},
    {Py_tp_getset, hit_getset},
    {Py_tp_methods, hit_methods},
    {0, nullptr}};

PyType_Spec hit_spec = {"hkv._hkv.VllmHit", sizeof(Hit), 0, Py_TPFLAGS_DEFAULT,
                        hit_slots};

}  // namespace

py::list IdList(std::span<const BlockId> ids, bool skip_null) {
  const auto n = static_cast<Py_ssize_t>(
      skip_null ? static_cast<std::size_t>(std::count_if(
                      ids.begin(), ids.end(),
                      [](BlockId id) { return id != kNullBlock; }))
                : ids.size());
  py::list out(n);
  Py_ssize_t at = 0;
  for (BlockId id : ids) {
    if (skip_null && id == kNullBlock) continue;
    PyObject* value = PyLong_FromUnsignedLong(ToIndex(id));
    if (value == nullptr) throw py::error_already_set();
    PyList_SET_ITEM(out.ptr(), at++, value);
  }
  return out;
}

py::object NewVllmHit(CacheHit&& hit) {
  auto made =
      py::reinterpret_steal<py::object>(hit_type->tp_alloc(hit_type, 0));
  if (!made) throw py::error_already_set();
  new (&reinterpret_cast<Hit*>(made.ptr())->hit) CacheHit(std::move(hit));
  return made;
}

const CacheHit* VllmHitOf(PyObject* object) {
  return object != nullptr && Py_TYPE(object) == hit_type
             ? &reinterpret_cast<Hit*>(object)->hit
             : nullptr;
}

void BindVllmHit(py::module_& m) { hit_type = AddType(m, hit_spec, "VllmHit"); }

}  // namespace hkv::python
