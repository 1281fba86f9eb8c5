// hkv.vllm.KVCacheManager's core (_hkv.VllmManagerCore): the CPython type
// the manager's Python class derives from, so that the calls the engine's
// scheduler makes per request are C methods. allocate_slots
// (vllm_core_allocate.cc): a quiet decode call returns without running
// Python, and a running request's allocation without a hit runs its
// mirror's sync, the allocation and the commit here; a request's first, or
// its retry after a refusal (vllm_core_admit.cc), builds its mirror here
// and adopts its lookup's hit. get_computed_blocks (vllm_core_lookup.cc):
// a request's lookup before it holds blocks, keyed from the engine's block
// hashes. get_num_common_prefix_blocks (vllm_core_common_prefix.cc): every
// group's count in one call. Every call these paths do not take as it is (a
// hit cut short, connector tokens, events on, caching off, arguments that
// are not plain ints and bools, anything to raise about) goes to the
// manager's Python (`_allocate_slots`, `_get_computed_blocks`,
// `_get_num_common_prefix_blocks`) with the arguments as given. The type
// itself is in vllm_manager.cc.
#pragma once

#include <Python.h>

#include <cstdint>
#include <limits>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "bindings.h"
#include "hkv/cache_manager.h"
#include "quiet_cells.h"
#include "vllm_tracked.h"

namespace hkv::python {

// The entries of requests whose running calls have found them, by the
// engine request's address, each holding a reference to its entry (which
// holds one to its request, whose address therefore stays its own). Every
// way an entry leaves _tracked drops it here too (_untrack, setting
// _tracked), so a running request's call finds its entry without reading
// the request's id or the dict.
using RunningEntries = absl::flat_hash_map<PyObject*, Tracked*>;

struct Core {
  PyObject_HEAD
      // Attributes the manager's Python sets and reads.
      PyObject* tracked;    // dict: engine request id -> VllmTracked
  PyObject* empty_blocks;   // the shared empty KVCacheBlocks
  PyObject* new_block_ids;  // list: ids placed in zeroed groups
  long long epoch;          // bumped by calls that change tables elsewhere
  long long next_id;        // the next tracked request's mirror id
  long long max_model_len;
  char enable_caching;
  char log_stats;
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
  char digest_known;        // block_pool.digest_size was seen set
  RunningEntries* running;  // made at the first insert
};

// Interned names of the attributes and methods the core reads and calls.
struct CoreNames {
  PyObject* request_id = nullptr;
  PyObject* num_computed_tokens = nullptr;
  PyObject* num_tokens = nullptr;
  PyObject* num_prompt_tokens = nullptr;
  PyObject* lora_request = nullptr;
  PyObject* lora_int_id = nullptr;
  PyObject* block_hashes = nullptr;
  PyObject* skip_reading_prefix_cache = nullptr;
  PyObject* enable_kv_cache_events = nullptr;
  PyObject* digest_size = nullptr;
  PyObject* python_allocate_slots = nullptr;
  PyObject* python_get_computed_blocks = nullptr;
  PyObject* python_get_num_common_prefix_blocks = nullptr;
  PyObject* record_lookup = nullptr;
  PyObject* blocks_ids = nullptr;  // BlocksOverIds' fields
  PyObject* blocks_views = nullptr;
  PyObject* blocks_built = nullptr;
  PyObject* pending_events = nullptr;
  PyObject* python_take_events = nullptr;
};
// Defined in vllm_manager.cc, set at the module's import.
extern CoreNames core_names;
inline const CoreNames& Names() { return core_names; }

// The helpers below run several times in every allocate_slots call, and
// are always inlined: an optional returned from a call is stored to the
// stack and read back in words, which stalls on its flag byte.

// A plain int's value (`fallback` for nullptr, an argument not given), or
// nothing for anything else (a bool, a subclass, one beyond 64 bits).
[[gnu::always_inline]] inline std::optional<long long> PlainInt(
    PyObject* value, long long fallback = 0) {
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
// A flag's value (false for nullptr), or nothing unless True or False.
[[gnu::always_inline]] inline std::optional<bool> PlainFlag(PyObject* value) {
  if (value == nullptr || value == Py_False) return false;
  if (value == Py_True) return true;
  return std::nullopt;
}
// `owner.name`, or a null object (any error cleared).
inline py::object Attr(PyObject* owner, PyObject* name) {
  auto value = py::reinterpret_steal<py::object>(PyObject_GetAttr(owner, name));
  if (!value) PyErr_Clear();
  return value;
}
// `owner.name` as a plain int, or nothing (any error cleared).
[[gnu::always_inline]] inline std::optional<long long> IntAttr(PyObject* owner,
                                                               PyObject* name) {
  const py::object value = Attr(owner, name);
  if (!value) return std::nullopt;
  return PlainInt(value.ptr());
}
inline bool FitsU32(long long v) {
  return v >= 0 && v <= std::numeric_limits<std::uint32_t>::max();
}
// Whether the block pool publishes events (an error reading it counts as
// on, and is cleared).
bool EventsOn(const Core& core);
// Whether the block pool has learnt the engine's digest size (the manager's
// Python learns it from the first keys it reads).
bool DigestKnown(Core& core);
// A BlocksOverIds over `ids` (per-group id lists, or a callable returning
// them) and the manager's block views. (Made through the class: setting its
// fields from C without its __init__ was slower.)
py::object MakeBlocks(const Core& core, PyObject* ids);
// A new tracked entry for `request` with the next mirror id (taken before
// the insert), registered in core.tracked under `id` (a dict insert may run
// Python: an id's __hash__); `holder` takes a reference to it.
Tracked& NewTracked(Core& core, PyObject* request, PyObject* id,
                    py::object& holder);
// The entry tracking `request` (its request that very object), or nullptr:
// from core.running, else from core.tracked under the request's id, then
// added to core.running.
Tracked* RunningEntry(Core& core, PyObject* request);
// The manager's Python method `name` with the arguments as given.
PyObject* CallPython(PyObject* self, PyObject* name, PyObject* const* args,
                     Py_ssize_t nargs, PyObject* kwnames);

// The C methods (METH_FASTCALL | METH_KEYWORDS).
PyObject* AllocateSlotsMethod(PyObject* self, PyObject* const* args,
                              Py_ssize_t nargs, PyObject* kwnames);
PyObject* GetComputedBlocksMethod(PyObject* self, PyObject* const* args,
                                  Py_ssize_t nargs, PyObject* kwnames);
PyObject* GetNumCommonPrefixBlocksMethod(PyObject* self, PyObject* const* args,
                                         Py_ssize_t nargs, PyObject* kwnames);
// (METH_NOARGS, vllm_core_step.cc.)
PyObject* NewStepStartsMethod(PyObject* self, PyObject* unused);
PyObject* TakeNewBlockIdsMethod(PyObject* self, PyObject* unused);
PyObject* TakeEventsMethod(PyObject* self, PyObject* unused);
// Interns allocate_slots' parameter names (once, at the module's import).
void InternAllocateArgs();

}  // namespace hkv::python
