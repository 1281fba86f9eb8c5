// The type of hkv.vllm's manager core (vllm_core.h): its fields as
// attributes, _bind_core, garbage collection, and the helpers its methods
// share.
#include <Python.h>  // before structmember.h
#include <structmember.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "bindings.h"
#include "fast_call.h"
#include "vllm_core.h"
#include "vllm_tracked.h"

namespace hkv::python {

CoreNames core_names;

bool EventsOn(const Core& core) {
  PyObject* events =
      PyObject_GetAttr(core.block_pool, core_names.enable_kv_cache_events);
  const int on = events == nullptr ? -1 : PyObject_IsTrue(events);
  Py_XDECREF(events);
  if (on < 0) PyErr_Clear();
  return on != 0;
}

bool DigestKnown(Core& core) {
  if (!core.digest_known) {
    PyObject* size = PyObject_GetAttr(core.block_pool, core_names.digest_size);
    if (size == nullptr) PyErr_Clear();
    core.digest_known = size != nullptr && size != Py_None;
    Py_XDECREF(size);
  }
  return core.digest_known != 0;
}

py::object MakeBlocks(const Core& core, PyObject* ids) {
  std::array<PyObject*, 2> args = {ids, core.views};
  PyObject* blocks =
      PyObject_Vectorcall(core.blocks_type, args.data(), 2, nullptr);
  if (blocks == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(blocks);
}

Tracked& NewTracked(Core& core, PyObject* request, PyObject* id,
                    py::object& holder) {
  PyTypeObject* type = TrackedType();
  holder = py::reinterpret_steal<py::object>(type->tp_alloc(type, 0));
  if (!holder) throw py::error_already_set();
  Tracked& t = *AsTracked(holder.ptr());
  SetField(t.request, request);
  t.id = core.next_id++;  // before the insert, as the manager's Python does
  if (PyDict_SetItem(core.tracked, id, holder.ptr()) != 0) {
    throw py::error_already_set();
  }
  return t;
}

Tracked* RunningEntry(Core& core, PyObject* request) {
  if (core.running != nullptr) {
    const auto found = core.running->find(request);
    // (Its request is cleared only when the garbage collector breaks a
    // cycle through the entry.)
    if (found != core.running->end() && found->second->request == request) {
      return found->second;
    }
  }
  PyObject* id = PyObject_GetAttr(request, core_names.request_id);
  PyObject* entry =
      id == nullptr ? nullptr : PyDict_GetItemWithError(core.tracked, id);
  Py_XDECREF(id);
  PyErr_Clear();
  Tracked* t = AsTracked(entry);
  if (t == nullptr || t->request != request) return nullptr;
  if (core.running == nullptr) core.running = new RunningEntries();
  // A stale slot (see above) stays until the map is cleared: replacing it
  // would drop a reference, which may run Python while `t` is borrowed.
  if (core.running->try_emplace(request, t).second) Py_INCREF(entry);
  return t;
}

PyObject* CallPython(PyObject* self, PyObject* name, PyObject* const* args,
                     Py_ssize_t nargs, PyObject* kwnames) {
  const Py_ssize_t total =
      nargs + (kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames));
  std::vector<PyObject*> with_self(static_cast<std::size_t>(total) + 1);
  with_self[0] = self;
  std::copy(args, args + total, with_self.begin() + 1);
  return PyObject_VectorcallMethod(
      name, with_self.data(), static_cast<std::size_t>(nargs) + 1, kwnames);
}

namespace {

// Drops `t` from core.running, if there.
void ForgetRunning(Core& core, Tracked& t) {
  if (core.running == nullptr) return;
  const auto found = core.running->find(t.request);
  if (found == core.running->end() || found->second != &t) return;
  core.running->erase(found);
  Py_DECREF(reinterpret_cast<PyObject*>(&t));
}

// Drops every entry from core.running (their last references may run
// Python: the map is emptied first).
void ClearRunning(Core& core) {
  if (core.running == nullptr) return;
  RunningEntries entries;
  entries.swap(*core.running);
  for (const auto& [request, t] : entries) {
    Py_DECREF(reinterpret_cast<PyObject*>(t));
  }
}

// _untrack(request_id): pops the request id's entry from _tracked (None
// when it has none), and from the running entries.
PyObject* UntrackMethod(PyObject* self, PyObject* const* args,
                        Py_ssize_t nargs) {
  Core& core = *reinterpret_cast<Core*>(self);
  return Guarded([&]() -> py::object {
    const FastArgs a("_untrack", args, nargs, 1);
    if (core.tracked == nullptr || !PyDict_Check(core.tracked)) {
      throw UsageError("_untrack(): _tracked is not a dict");
    }
    PyObject* entry = PyDict_GetItemWithError(core.tracked, a[0].ptr());
    if (entry == nullptr) {
      if (PyErr_Occurred()) throw py::error_already_set();
      return py::none();
    }
    const auto held = py::reinterpret_borrow<py::object>(entry);
    if (PyDict_DelItem(core.tracked, a[0].ptr()) != 0) {
      throw py::error_already_set();
    }
    if (Tracked* t = AsTracked(held.ptr())) ForgetRunning(core, *t);
    return held;
  });
}

// _bind_core(cache, cells, zeroed_groups, blocks_type, views, block_pool,
// hash_block_size): what the core reads and the manager sets once.
PyObject* BindCoreMethod(PyObject* self, PyObject* const* args,
                         Py_ssize_t nargs) {
  Core& core = *reinterpret_cast<Core*>(self);
  return Guarded([&]() -> py::object {
    const FastArgs a("_bind_core", args, nargs, 7);
    CacheManager& cache = a.Get<CacheManager&>(0, "cache");
    const QuietCells& cells = a.Get<const QuietCells&>(1, "cells");
    const auto zeroed = a.Get<py::tuple>(2, "zeroed_groups");
    const auto hash_block_size = a.Get<std::uint32_t>(6, "hash_block_size");
    if (hash_block_size == 0) {
      throw UsageError("_bind_core(): hash_block_size must be at least 1");
    }
    if (core.tracked == nullptr || core.empty_blocks == nullptr ||
        core.new_block_ids == nullptr) {
      throw UsageError(
          "_bind_core(): set _tracked, empty_kv_cache_blocks and "
          "_new_block_ids first");
    }
    SetField(core.cache_object, a[0].ptr());
    core.cache = &cache;
    SetField(core.cells_object, a[1].ptr());
    core.cells = &cells;
    SetField(core.zeroed, zeroed.ptr());
    SetField(core.blocks_type, a[3].ptr());
    SetField(core.views, a[4].ptr());
    SetField(core.block_pool, a[5].ptr());
    core.hash_block_size = hash_block_size;
    core.digest_known = 0;
    return py::none();
  });
}

int CoreTraverse(PyObject* self, visitproc visit, void* arg) {
  Core& core = *reinterpret_cast<Core*>(self);
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(core.tracked);
  Py_VISIT(core.empty_blocks);
  Py_VISIT(core.new_block_ids);
  Py_VISIT(core.cache_object);
  Py_VISIT(core.cells_object);
  Py_VISIT(core.zeroed);
  Py_VISIT(core.blocks_type);
  Py_VISIT(core.views);
  Py_VISIT(core.block_pool);
  if (core.running != nullptr) {
    for (const auto& [request, t] : *core.running) {
      Py_VISIT(reinterpret_cast<PyObject*>(t));
    }
  }
  return 0;
}

int CoreClear(PyObject* self) {
  Core& core = *reinterpret_cast<Core*>(self);
  ClearRunning(core);
  Py_CLEAR(core.tracked);
  Py_CLEAR(core.empty_blocks);
  Py_CLEAR(core.new_block_ids);
  core.cache = nullptr;
  core.cells = nullptr;
  Py_CLEAR(core.cache_object);
  Py_CLEAR(core.cells_object);
  Py_CLEAR(core.zeroed);
  Py_CLEAR(core.blocks_type);
  Py_CLEAR(core.views);
  Py_CLEAR(core.block_pool);
  return 0;
}

void CoreDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  CoreClear(self);
  Core& core = *reinterpret_cast<Core*>(self);
  delete core.running;
  core.running = nullptr;
  type->tp_free(self);
  Py_DECREF(type);
}

// The object fields Python sets and reads but cannot delete: once bound,
// the core's methods read them without checking for none.
PyObject*& ObjectField(PyObject* self, void* offset) {
  return *reinterpret_cast<PyObject**>(
      reinterpret_cast<char*>(self) + reinterpret_cast<std::uintptr_t>(offset));
}

PyObject* GetObjectField(PyObject* self, void* offset) {
  PyObject* value = ObjectField(self, offset);
  if (value == nullptr) {
    PyErr_SetString(PyExc_AttributeError, "not set yet");
    return nullptr;
  }
  return Py_NewRef(value);
}

int SetObjectField(PyObject* self, PyObject* value, void* offset) {
  if (value == nullptr) {
    PyErr_SetString(PyExc_AttributeError,
                    "the manager's core reads this: it cannot be deleted");
    return -1;
  }
  SetField(ObjectField(self, offset), value);
  return 0;
}

// Setting _tracked drops the running entries, which were its.
int SetTracked(PyObject* self, PyObject* value, void* offset) {
  if (SetObjectField(self, value, offset) != 0) return -1;
  ClearRunning(*reinterpret_cast<Core*>(self));
  return 0;
}

#define HKV_CORE_OBJECT(python_name, field, doc)       \
  {                                                    \
    python_name, GetObjectField, SetObjectField, doc,  \
        reinterpret_cast<void*>(offsetof(Core, field)) \
  }
PyGetSetDef core_getset[] = {
    {"_tracked", GetObjectField, SetTracked,
     "engine request id -> VllmTracked (a dict); entries leave it through "
     "_untrack only",
     reinterpret_cast<void*>(offsetof(Core, tracked))},
    HKV_CORE_OBJECT("empty_kv_cache_blocks", empty_blocks,
                    "the shared empty KVCacheBlocks"),
    HKV_CORE_OBJECT("_new_block_ids", new_block_ids,
                    "the ids placed in zeroed groups since the last take"),
    {nullptr, nullptr, nullptr, nullptr, nullptr}};
#undef HKV_CORE_OBJECT

#define HKV_CORE_FIELD(python_name, field, type) \
  { python_name, type, offsetof(Core, field), 0, nullptr }
PyMemberDef core_members[] = {
    HKV_CORE_FIELD("_epoch", epoch, T_LONGLONG),
    HKV_CORE_FIELD("_next_id", next_id, T_LONGLONG),
    HKV_CORE_FIELD("max_model_len", max_model_len, T_LONGLONG),
    HKV_CORE_FIELD("enable_caching", enable_caching, T_BOOL),
    HKV_CORE_FIELD("log_stats", log_stats, T_BOOL),
    {nullptr, 0, 0, 0, nullptr}};
#undef HKV_CORE_FIELD

PyMethodDef core_methods[] = {
    {"allocate_slots",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)()>(&AllocateSlotsMethod)),
     METH_FASTCALL | METH_KEYWORDS,
     "allocate_slots($self, request, num_new_tokens, "
     "num_new_computed_tokens=0, new_computed_blocks=None, "
     "num_lookahead_tokens=0, num_external_computed_tokens=0, "
     "delay_cache_blocks=False, num_encoder_tokens=0, "
     "full_sequence_must_fit=False)\n--\n\n"
     "The blocks this allocation places from where its slots start in each "
     "group (null padding included), or None when free blocks are short; "
     "then caches the prefix up to min(computed + hit + external + new "
     "tokens, the request's tokens) unless delay_cache_blocks. "
     "new_computed_blocks with num_new_computed_tokens is the request's "
     "lookup (a smaller count cuts it). Raises ValueError for no new nor "
     "external tokens, as the engine does, and hkv.UsageError for a hit "
     "that is not the request's lookup or encoder tokens. A running "
     "request's call whose token counts stay in the cells of its last "
     "allocation's quiet record, with nothing else changed since, returns "
     "the empty blocks at once (QuietCells)."},
    {"get_computed_blocks",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)()>(&GetComputedBlocksMethod)),
     METH_FASTCALL | METH_KEYWORDS,
     "get_computed_blocks($self, request)\n--\n\n"
     "(KVCacheBlocks, num_tokens): the longest cached prefix of a request "
     "holding no blocks, at most num_tokens - 1 tokens; none with caching "
     "off or skip_reading_prefix_cache."},
    {"get_num_common_prefix_blocks",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)()>(&GetNumCommonPrefixBlocksMethod)),
     METH_FASTCALL | METH_KEYWORDS,
     "get_num_common_prefix_blocks($self, running_request_id)\n--\n\n"
     "Per group, the leading blocks every request holding blocks holds (0 "
     "for groups that do not read the whole prefix, and everywhere with "
     "caching off, as the engine counts). Raises hkv.UsageError for a "
     "request holding no blocks."},
    {"new_step_starts", &NewStepStartsMethod, METH_NOARGS,
     "new_step_starts($self)\n--\n\n"
     "A scheduler step starts: recurrent states cached in the previous one "
     "can now be hit."},
    {"take_new_block_ids", &TakeNewBlockIdsMethod, METH_NOARGS,
     "take_new_block_ids($self)\n--\n\n"
     "The ids of blocks placed in full-attention groups since the last "
     "call, for the worker to zero."},
    {"take_events", &TakeEventsMethod, METH_NOARGS,
     "take_events($self)\n--\n\n"
     "KV events since the last call, oldest first: the engine's BlockStored "
     "(annotated with its group's spec kind and window, as the engine does; "
     "a warning for a group index out of range), BlockRemoved and "
     "AllBlocksCleared. An empty list at once with events off and none "
     "pending; else the manager's _take_events."},
    {"_untrack",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)()>(&UntrackMethod)),
     METH_FASTCALL,
     "_untrack(request_id): pops the request id's VllmTracked from _tracked "
     "(None when it has none), and from the entries running calls find by "
     "request."},
    {"_bind_core",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)()>(&BindCoreMethod)),
     METH_FASTCALL,
     "_bind_core(cache, cells, zeroed_groups, blocks_type, views, "
     "block_pool, hash_block_size): what allocate_slots reads, set once."},
    {nullptr, nullptr, 0, nullptr}};

PyType_Slot core_slots[] = {
    {Py_tp_doc,
     const_cast<char*>("hkv.vllm.KVCacheManager's core: allocate_slots for a "
                       "running request, and the fields it reads.")},
    {Py_tp_traverse, reinterpret_cast<void*>(&CoreTraverse)},
    {Py_tp_clear, reinterpret_cast<void*>(&CoreClear)},
    {Py_tp_dealloc, reinterpret_cast<void*>(&CoreDealloc)},
    {Py_tp_members, core_members},
    {Py_tp_getset, core_getset},
    {Py_tp_methods, core_methods},
    {0, nullptr}};

PyType_Spec core_spec = {
    "hkv._hkv.VllmManagerCore", sizeof(Core), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, core_slots};

PyObject* Intern(const char* text) {
  PyObject* name = PyUnicode_InternFromString(text);
  if (name == nullptr) throw py::error_already_set();
  return name;
}

}  // namespace

void BindVllmManager(py::module_& m) {
  InternAllocateArgs();
  core_names.request_id = Intern("request_id");
  core_names.num_computed_tokens = Intern("num_computed_tokens");
  core_names.num_tokens = Intern("num_tokens");
  core_names.num_prompt_tokens = Intern("num_prompt_tokens");
  core_names.lora_request = Intern("lora_request");
  core_names.lora_int_id = Intern("lora_int_id");
  core_names.block_hashes = Intern("block_hashes");
  core_names.enable_kv_cache_events = Intern("enable_kv_cache_events");
  core_names.digest_size = Intern("digest_size");
  core_names.skip_reading_prefix_cache = Intern("skip_reading_prefix_cache");
  core_names.python_allocate_slots = Intern("_allocate_slots");
  core_names.python_get_computed_blocks = Intern("_get_computed_blocks");
  core_names.python_get_num_common_prefix_blocks =
      Intern("_get_num_common_prefix_blocks");
  core_names.record_lookup = Intern("_record_lookup");
  core_names.pending_events = Intern("pending_events");
  core_names.python_take_events = Intern("_take_events");
  AddType(m, core_spec, "VllmManagerCore");
}

}  // namespace hkv::python
