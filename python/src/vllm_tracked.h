// What hkv.vllm's KVCacheManager knows of one engine request
// (_hkv.VllmTracked): a CPython type, so that the manager's core
// (vllm_core.h) reads it as a struct on every scheduler step, while the
// manager's Python reads and sets the same fields as attributes.
#pragma once

#include <Python.h>

#include "bindings.h"
#include "hkv/request.h"
#include "quiet_cells.h"

namespace hkv::python {

// An object field holds a reference or nullptr; nullptr reads as None in
// Python, and the core treats it as None too.
struct Tracked {
  PyObject_HEAD PyObject* request;  // the engine's Request
  long long id;                     // the mirror's request id, once built
  // The hkv Request keyed from the engine's (None until the request is
  // first allocated; a lookup before reads the engine's keys as it probes),
  // and its C++ object, kept in step by the attribute's setter.
  PyObject* mirror;
  Request* mirror_request;
  long long num_tokens;  // the mirror's, kept here
  long long num_keys;
  PyObject* hit;         // the last lookup's CacheHit
  PyObject* hit_blocks;  // the KVCacheBlocks of the last lookup
  char holds;            // whether the request holds blocks
  // After an allocation (has_quiet), the token counts over which the next
  // allocation would change nothing (QuietCells::Record). Python reads and
  // sets it as `quiet`: its tuple, or None.
  char has_quiet;
  QuietRecord quiet;
};

// The type, once BindVllmTracked has made it.
PyTypeObject* TrackedType();

// `object` as a Tracked, or nullptr if it is not one.
inline Tracked* AsTracked(PyObject* object) {
  return object != nullptr && Py_TYPE(object) == TrackedType()
             ? reinterpret_cast<Tracked*>(object)
             : nullptr;
}

// Whether `object` is unset or None.
inline bool IsNone(PyObject* object) {
  return object == nullptr || object == Py_None;
}

// Replaces the reference in `field` with a new one to `value` (nullptr
// allowed).
inline void SetField(PyObject*& field, PyObject* value) {
  Py_XINCREF(value);
  Py_XSETREF(field, value);
}

}  // namespace hkv::python
