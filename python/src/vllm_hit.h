// A lookup's hit as hkv.vllm's KVCacheManager keeps it (_hkv.VllmHit): a
// CPython object owning the C++ CacheHit, made without pybind11's instance
// registry (a third of a hybrid lookup's cost through the manager went to
// making and dropping a bound CacheHit). Called, it returns the hit's block
// ids per group, so it is the lazy ids of the lookup's KVCacheBlocks.
#pragma once

#include <Python.h>

#include "bindings.h"
#include "hkv/cache_hit.h"

namespace hkv::python {

// A new VllmHit owning `hit` (a new reference).
py::object NewVllmHit(CacheHit&& hit);

// The CacheHit of `object` if it is a VllmHit, else nullptr.
const CacheHit* VllmHitOf(PyObject* object);

// `ids` as a list of ints, without the null block with `skip_null`.
py::list IdList(std::span<const BlockId> ids, bool skip_null);

}  // namespace hkv::python
