// hkv.vllm.KVCacheManager's core (_hkv.VllmManagerCore): the CPython type
// the manager's Python class derives from, so that the call the engine's
// scheduler makes for every running request on every step, allocate_slots,
// is a C method: a quiet decode call (QuietCells) returns without running
// Python, and a running request's allocation that crosses a block runs its
// mirror's sync, the allocation and the commit here (vllm_calls.h).
// Everything else, and any call this path does not take as it is (a first
// allocation, a hit, connector tokens, events on, caching off, arguments
// that are not plain ints and bools, anything to raise about), goes to the
// manager's Python, `_allocate_slots`, with the arguments as given.
#include <Python.h>  // before structmember.h
#include <structmember.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "bindings.h"
#include "fast_call.h"
#include "vllm_calls.h"
#include "vllm_tracked.h"

namespace hkv::python {
namespace {

struct Core {
  PyObject_HEAD
      // Attributes the manager's Python sets and reads.
      PyObject* tracked;    // dict: engine request id -> VllmTracked
  PyObject* empty_blocks;   // the shared empty KVCacheBlocks
  PyObject* new_block_ids;  // list: ids placed in zeroed groups
  long long epoch;          // bumped by calls that change tables elsewhere
  long long max_model_len;
  char enable_caching;
  // Set once by _bind_core.
  PyObject* cache_object;
  CacheManager* cache;
  PyObject* cells_object;
  const QuietCells* cells;
  PyObject* zeroed;       // tuple of bools, one per group
  PyObject* blocks_type;  // BlocksOverIds
  PyObject* views;        // the block objects by id
  PyObject* block_pool;   // its enable_kv_cache_events and digest_size
  long long hash_block_size;
  char digest_known;  // block_pool.digest_size was seen set
};

// allocate_slots' parameters, in the engine's order.
enum Arg {
  kRequest,
  kNumNewTokens,
  kNumNewComputedTokens,
  kNewComputedBlocks,
  kNumLookaheadTokens,
  kNumExternalComputedTokens,
  kDelayCacheBlocks,
  kNumEncoderTokens,
  kFullSequenceMustFit,
  kNumArgs
};
constexpr std::array<const char*, kNumArgs> kArgNames = {
    "request",
    "num_new_tokens",
    "num_new_computed_tokens",
    "new_computed_blocks",
    "num_lookahead_tokens",
    "num_external_computed_tokens",
    "delay_cache_blocks",
    "num_encoder_tokens",
    "full_sequence_must_fit"};

// Interned names: the arguments', then the attributes read.
struct Names {
  std::array<PyObject*, kNumArgs> args{};
  PyObject* request_id = nullptr;
  PyObject* num_computed_tokens = nullptr;
  PyObject* num_tokens = nullptr;
  PyObject* block_hashes = nullptr;
  PyObject* enable_kv_cache_events = nullptr;
  PyObject* digest_size = nullptr;
  PyObject* allocate_slots = nullptr;  // the manager's Python path
};
Names names;

// The arguments by parameter (nullptr: not given). False for anything
// Python would raise about (too many, unknown or repeated names).
bool ParseArgs(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
               std::array<PyObject*, kNumArgs>& out) {
  if (nargs > kNumArgs) return false;
  std::copy(args, args + nargs, out.begin());
  const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* name = PyTuple_GET_ITEM(kwnames, k);
    std::size_t i = 0;
    while (i < kNumArgs && names.args[i] != name &&
           PyUnicode_Compare(names.args[i], name) != 0) {
      ++i;
    }
    if (i == kNumArgs || out[i] != nullptr) return false;
    out[i] = args[nargs + k];
  }
  return out[kRequest] != nullptr && out[kNumNewTokens] != nullptr;
}

// A plain int argument's value (`fallback` when not given), or nothing for
// anything else (a bool, a subclass, one beyond 64 bits).
std::optional<long long> PlainInt(PyObject* value, long long fallback = 0) {
  if (value == nullptr) return fallback;
  if (!PyLong_CheckExact(value)) return std::nullopt;
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return std::nullopt;
  }
  return v;
}

// A flag argument's value (false when not given), or nothing unless True,
// False or unset.
std::optional<bool> PlainFlag(PyObject* value) {
  if (value == nullptr || value == Py_False) return false;
  if (value == Py_True) return true;
  return std::nullopt;
}

// `owner.name` as a plain int, or nothing (the error cleared).
std::optional<long long> IntAttr(PyObject* owner, PyObject* name) {
  PyObject* value = PyObject_GetAttr(owner, name);
  if (value == nullptr) {
    PyErr_Clear();
    return std::nullopt;
  }
  const auto v = PlainInt(value);
  Py_DECREF(value);
  return v;
}

bool FitsU32(long long v) {
  return v >= 0 && v <= std::numeric_limits<std::uint32_t>::max();
}

// What the calls this path takes have in common: a running request's
// allocation of new tokens with nothing else to place.
struct Call {
  PyObject* request;
  Tracked* tracked;
  long long num_new_tokens;
  long long lookahead;
  bool no_commit;  // delay_cache_blocks or caching off
};

// Whether the call changes nothing (QuietCells::Record's ranges hold). Reads
// the request's computed tokens into `computed` when it gets that far.
bool IsQuiet(const Core& core, const Call& call,
             std::optional<long long>& computed) {
  // (epoch, lookahead, commit is None, computed lo, hi, main lo, hi, commit
  // lo, hi), as QuietCells::Record leaves it; anything else is no record.
  PyObject* record = call.tracked->quiet;
  if (IsNone(record) || !PyTuple_CheckExact(record) ||
      PyTuple_GET_SIZE(record) != 9) {
    return false;
  }
  std::array<long long, 9> r{};
  for (Py_ssize_t i = 0; i < 9; ++i) {
    PyObject* item = PyTuple_GET_ITEM(record, i);
    std::optional<long long> v = PlainInt(item);
    if (i == 2) {
      const auto flag = PlainFlag(item);
      v = flag ? std::optional<long long>(*flag) : std::nullopt;
    }
    if (!v) return false;
    r[static_cast<std::size_t>(i)] = *v;
  }
  if (r[0] != core.epoch || r[1] != call.lookahead ||
      (r[2] != 0) != call.no_commit) {
    return false;
  }
  computed = IntAttr(call.request, names.num_computed_tokens);
  if (!computed || !FitsU32(*computed)) return false;
  const long long total = std::min(*computed, core.max_model_len);
  const long long main = total + call.num_new_tokens;
  if (total < r[3] || total > r[4] || main < r[5] || main > r[6]) {
    return false;
  }
  if (call.no_commit) return true;
  const auto num_tokens = IntAttr(call.request, names.num_tokens);
  if (!num_tokens) return false;
  const long long cached = std::min(main, *num_tokens);
  return r[7] <= cached && cached <= r[8];
}

// Whether the block pool publishes events (then the manager's Python drains
// them) or has not learnt the keys' digest size (its Python does that).
bool PoolNeedsPython(Core& core) {
  PyObject* events =
      PyObject_GetAttr(core.block_pool, names.enable_kv_cache_events);
  const int on = events == nullptr ? -1 : PyObject_IsTrue(events);
  Py_XDECREF(events);
  if (on != 0) {
    PyErr_Clear();
    return true;
  }
  if (!core.digest_known) {
    PyObject* size = PyObject_GetAttr(core.block_pool, names.digest_size);
    if (size == nullptr) PyErr_Clear();
    core.digest_known = !IsNone(size);
    Py_XDECREF(size);
  }
  return !core.digest_known;
}

// The allocation of a call that is not quiet, or nothing when the manager's
// Python must make it. Throws what AllocateSlots throws.
std::optional<py::object> Allocate(Core& core, const Call& call,
                                   std::optional<long long> computed) {
  Tracked& t = *call.tracked;
  if (!core.enable_caching || PoolNeedsPython(core)) return std::nullopt;
  if (!computed) computed = IntAttr(call.request, names.num_computed_tokens);
  const auto num_tokens = IntAttr(call.request, names.num_tokens);
  if (!computed || !num_tokens || !FitsU32(*computed) ||
      !FitsU32(*num_tokens) || *num_tokens < t.num_tokens ||
      !PyList_CheckExact(core.new_block_ids)) {
    return std::nullopt;
  }
  const long long total_computed = std::min(*computed, core.max_model_len);
  std::optional<std::uint32_t> commit;
  if (!call.no_commit) {
    commit = static_cast<std::uint32_t>(
        std::min(total_computed + call.num_new_tokens, *num_tokens));
  }
  MirrorSync sync{
      .num_new_tokens = static_cast<std::uint32_t>(*num_tokens - t.num_tokens),
      .keys = py::none(),
      .keys_start = static_cast<std::size_t>(t.num_keys)};
  long long count = t.num_keys;
  py::object keys;
  if (sync.num_new_tokens > 0) {
    count = *num_tokens / core.hash_block_size;
    keys = py::reinterpret_steal<py::object>(
        PyObject_GetAttr(call.request, names.block_hashes));
    if (!keys || !PyList_CheckExact(keys.ptr()) ||
        PyList_GET_SIZE(keys.ptr()) < count || t.num_keys > count) {
      PyErr_Clear();
      return std::nullopt;
    }
    sync.keys = keys;
  }
  const AllocationRequest allocation{
      .num_computed_tokens = static_cast<std::uint32_t>(*computed),
      .num_new_tokens = static_cast<std::uint32_t>(call.num_new_tokens),
      .num_lookahead_tokens = static_cast<std::uint32_t>(call.lookahead)};
  const py::tuple zeroed = py::reinterpret_borrow<py::tuple>(core.zeroed);
  py::list new_block_ids = py::reinterpret_borrow<py::list>(core.new_block_ids);
  py::object placed;
  try {
    placed = AllocateSlots(*core.cache, *t.mirror_request, sync, allocation,
                           {.commit_tokens = commit,
                            .zeroed_groups = zeroed,
                            .new_block_ids = new_block_ids},
                           {.cells = *core.cells,
                            .epoch = core.epoch,
                            .total_computed = total_computed});
  } catch (...) {
    if (t.mirror_request->num_tokens() != t.num_tokens) {  // synced
      t.num_tokens = *num_tokens;
      t.num_keys = count;
    }
    throw;
  }
  t.num_tokens = *num_tokens;
  t.num_keys = count;
  if (placed.is_none()) return placed;
  PyObject* tables = PyTuple_GET_ITEM(placed.ptr(), 0);
  SetField(t.quiet, PyTuple_GET_ITEM(placed.ptr(), 1));
  t.holds = 1;
  SetField(t.hit, nullptr);
  SetField(t.hit_blocks, nullptr);
  if (PyTuple_GET_SIZE(tables) == 0) {
    return py::reinterpret_borrow<py::object>(core.empty_blocks);
  }
  std::array<PyObject*, 2> blocks_args = {tables, core.views};
  PyObject* blocks =
      PyObject_Vectorcall(core.blocks_type, blocks_args.data(), 2, nullptr);
  if (blocks == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(blocks);
}

// The call as this path takes it, or nothing.
std::optional<Call> TakeCall(const Core& core,
                             const std::array<PyObject*, kNumArgs>& a) {
  const auto num_new = PlainInt(a[kNumNewTokens]);
  const auto lookahead = PlainInt(a[kNumLookaheadTokens]);
  const auto delay = PlainFlag(a[kDelayCacheBlocks]);
  if (!num_new || *num_new <= 0 || !FitsU32(*num_new) || !lookahead ||
      !FitsU32(*lookahead) || !delay ||
      PlainInt(a[kNumNewComputedTokens]) != 0 ||
      PlainInt(a[kNumExternalComputedTokens]) != 0 ||
      PlainInt(a[kNumEncoderTokens]) != 0 ||
      PlainFlag(a[kFullSequenceMustFit]) != false ||
      !IsNone(a[kNewComputedBlocks]) || core.tracked == nullptr ||
      !PyDict_CheckExact(core.tracked) || core.cache == nullptr) {
    return std::nullopt;
  }
  PyObject* id = PyObject_GetAttr(a[kRequest], names.request_id);
  PyObject* entry =
      id == nullptr ? nullptr : PyDict_GetItemWithError(core.tracked, id);
  Py_XDECREF(id);
  PyErr_Clear();
  Tracked* t = AsTracked(entry);
  if (t == nullptr || t->request != a[kRequest] ||
      t->mirror_request == nullptr) {
    return std::nullopt;
  }
  return Call{.request = a[kRequest],
              .tracked = t,
              .num_new_tokens = *num_new,
              .lookahead = *lookahead,
              .no_commit = *delay || !core.enable_caching};
}

// The manager's Python path with the arguments as given.
PyObject* CallPython(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                     PyObject* kwnames) {
  const Py_ssize_t total =
      nargs + (kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames));
  std::vector<PyObject*> with_self(static_cast<std::size_t>(total) + 1);
  with_self[0] = self;
  std::copy(args, args + total, with_self.begin() + 1);
  return PyObject_VectorcallMethod(names.allocate_slots, with_self.data(),
                                   static_cast<std::size_t>(nargs) + 1,
                                   kwnames);
}

PyObject* AllocateSlotsMethod(PyObject* self, PyObject* const* args,
                              Py_ssize_t nargs, PyObject* kwnames) {
  Core& core = *reinterpret_cast<Core*>(self);
  std::array<PyObject*, kNumArgs> a{};
  try {
    const std::optional<Call> call =
        ParseArgs(args, nargs, kwnames, a) ? TakeCall(core, a) : std::nullopt;
    if (call) {
      // The entry stays alive while Python runs (a property's getter).
      const py::object keep = py::reinterpret_borrow<py::object>(
          reinterpret_cast<PyObject*>(call->tracked));
      std::optional<long long> computed;
      if (IsQuiet(core, *call, computed)) {
        return Py_NewRef(core.empty_blocks);
      }
      if (std::optional<py::object> done = Allocate(core, *call, computed)) {
        return done->release().ptr();
      }
    }
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  } catch (abi::__forced_unwind&) {
    throw;
  } catch (...) {
    return RaiseInPython();
  }
  return CallPython(self, args, nargs, kwnames);
}

// _bind_core(cache, cells, zeroed_groups, blocks_type, views, block_pool,
// hash_block_size): what the core reads and the manager sets once.
PyObject* BindCoreMethod(PyObject* self, PyObject* const* args,
                         Py_ssize_t nargs) {
  Core& core = *reinterpret_cast<Core*>(self);
  try {
    const FastArgs a("_bind_core", args, nargs, 7);
    CacheManager& cache = a.Get<CacheManager&>(0, "cache");
    const QuietCells& cells = a.Get<const QuietCells&>(1, "cells");
    const auto zeroed = a.Get<py::tuple>(2, "zeroed_groups");
    const auto hash_block_size = a.Get<std::uint32_t>(6, "hash_block_size");
    if (hash_block_size == 0) {
      throw UsageError("_bind_core(): hash_block_size must be at least 1");
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
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  } catch (...) {
    return RaiseInPython();
  }
  Py_RETURN_NONE;
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
  return 0;
}

int CoreClear(PyObject* self) {
  Core& core = *reinterpret_cast<Core*>(self);
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
  type->tp_free(self);
  Py_DECREF(type);
}

#define HKV_CORE_FIELD(python_name, field, type) \
  { python_name, type, offsetof(Core, field), 0, nullptr }
PyMemberDef core_members[] = {
    HKV_CORE_FIELD("_tracked", tracked, T_OBJECT_EX),
    HKV_CORE_FIELD("empty_kv_cache_blocks", empty_blocks, T_OBJECT_EX),
    HKV_CORE_FIELD("_new_block_ids", new_block_ids, T_OBJECT_EX),
    HKV_CORE_FIELD("_epoch", epoch, T_LONGLONG),
    HKV_CORE_FIELD("max_model_len", max_model_len, T_LONGLONG),
    HKV_CORE_FIELD("enable_caching", enable_caching, T_BOOL),
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
  for (std::size_t i = 0; i < kNumArgs; ++i) {
    names.args[i] = Intern(kArgNames[i]);
  }
  names.request_id = Intern("request_id");
  names.num_computed_tokens = Intern("num_computed_tokens");
  names.num_tokens = Intern("num_tokens");
  names.block_hashes = Intern("block_hashes");
  names.enable_kv_cache_events = Intern("enable_kv_cache_events");
  names.digest_size = Intern("digest_size");
  names.allocate_slots = Intern("_allocate_slots");
  py::object type =
      py::reinterpret_steal<py::object>(PyType_FromSpec(&core_spec));
  if (!type) throw py::error_already_set();
  m.attr("VllmManagerCore") = type;
}

}  // namespace hkv::python
