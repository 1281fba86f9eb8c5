#include "vllm_tracked.h"

#include <structmember.h>

#include <cstddef>

#include "fast_call.h"

namespace hkv::python {
namespace {

PyTypeObject* tracked_type = nullptr;

int TrackedInit(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* names[] = {"request", "id", nullptr};
  PyObject* request = nullptr;
  long long id = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OL:VllmTracked",
                                   const_cast<char**>(names), &request, &id)) {
    return -1;
  }
  Tracked* t = reinterpret_cast<Tracked*>(self);
  if (t->request != nullptr) {
    PyErr_SetString(PyExc_TypeError, "a VllmTracked's request is set once");
    return -1;
  }
  SetField(t->request, request);
  t->id = id;
  return 0;
}

int TrackedTraverse(PyObject* self, visitproc visit, void* arg) {
  Tracked* t = reinterpret_cast<Tracked*>(self);
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(t->request);
  Py_VISIT(t->mirror);
  Py_VISIT(t->hit);
  Py_VISIT(t->hit_blocks);
  return 0;
}

int TrackedClear(PyObject* self) {
  Tracked* t = reinterpret_cast<Tracked*>(self);
  Py_CLEAR(t->request);
  Py_CLEAR(t->mirror);
  t->mirror_request = nullptr;
  Py_CLEAR(t->hit);
  Py_CLEAR(t->hit_blocks);
  return 0;
}

void TrackedDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  TrackedClear(self);
  type->tp_free(self);
  Py_DECREF(type);
}

PyObject* GetMirror(PyObject* self, void* /*closure*/) {
  PyObject* mirror = reinterpret_cast<Tracked*>(self)->mirror;
  return Py_NewRef(mirror == nullptr ? Py_None : mirror);
}

// The mirror and its C++ Request change together; a value that is not an
// hkv Request raises TypeError and changes nothing.
int SetMirror(PyObject* self, PyObject* value, void* /*closure*/) {
  Tracked* t = reinterpret_cast<Tracked*>(self);
  Request* request = nullptr;
  if (!IsNone(value)) {
    try {
      request = py::handle(value).cast<Request*>();
    } catch (const py::cast_error&) {
      PyErr_SetString(PyExc_TypeError, "mirror must be an hkv Request or None");
      return -1;
    }
  }
  SetField(t->mirror, IsNone(value) ? nullptr : value);
  t->mirror_request = request;
  return 0;
}

PyObject* GetQuiet(PyObject* self, void* /*closure*/) {
  const Tracked* t = reinterpret_cast<Tracked*>(self);
  if (!t->has_quiet) Py_RETURN_NONE;
  return Guarded([t] { return t->quiet.AsTuple(); });
}

// None drops the record; anything but a record's tuple raises and changes
// nothing.
int SetQuiet(PyObject* self, PyObject* value, void* /*closure*/) {
  Tracked* t = reinterpret_cast<Tracked*>(self);
  if (IsNone(value)) {
    t->has_quiet = 0;
    return 0;
  }
  try {
    t->quiet = QuietRecord::FromTuple(value);
    t->has_quiet = 1;
    return 0;
  } catch (...) {
    RaiseInPython();
    return -1;
  }
}

#define HKV_TRACKED_FIELD(name, type) \
  { #name, type, offsetof(Tracked, name), 0, nullptr }
// The request is set once (the core finds an entry by it).
PyMemberDef tracked_members[] = {
    {"request", T_OBJECT, offsetof(Tracked, request), READONLY, nullptr},
    HKV_TRACKED_FIELD(id, T_LONGLONG),
    HKV_TRACKED_FIELD(num_tokens, T_LONGLONG),
    HKV_TRACKED_FIELD(num_keys, T_LONGLONG),
    HKV_TRACKED_FIELD(hit, T_OBJECT),
    HKV_TRACKED_FIELD(hit_blocks, T_OBJECT),
    HKV_TRACKED_FIELD(holds, T_BOOL),
    {nullptr, 0, 0, 0, nullptr}};
#undef HKV_TRACKED_FIELD

PyGetSetDef tracked_getset[] = {
    {"mirror", GetMirror, SetMirror,
     "the hkv Request keyed from the engine's, or None", nullptr},
    {"quiet", GetQuiet, SetQuiet,
     "the quiet record of the last allocation (QuietCells.record's tuple), "
     "or None",
     nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyType_Slot tracked_slots[] = {
    {Py_tp_doc, const_cast<char*>(
                    "VllmTracked(request, id): what hkv.vllm's manager knows "
                    "of one engine request.")},
    {Py_tp_init, reinterpret_cast<void*>(&TrackedInit)},
    {Py_tp_traverse, reinterpret_cast<void*>(&TrackedTraverse)},
    {Py_tp_clear, reinterpret_cast<void*>(&TrackedClear)},
    {Py_tp_dealloc, reinterpret_cast<void*>(&TrackedDealloc)},
    {Py_tp_members, tracked_members},
    {Py_tp_getset, tracked_getset},
    {0, nullptr}};

PyType_Spec tracked_spec = {"hkv._hkv.VllmTracked", sizeof(Tracked), 0,
                            Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
                            tracked_slots};

}  // namespace

PyTypeObject* TrackedType() { return tracked_type; }

void BindVllmTracked(py::module_& m) {
  tracked_type = AddType(m, tracked_spec, "VllmTracked");
}

}  // namespace hkv::python
