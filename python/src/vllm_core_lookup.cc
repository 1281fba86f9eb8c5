// get_computed_blocks of hkv.vllm's manager core (vllm_core.h): a request's
// lookup before it is first allocated, keyed from the engine's block hashes
// as the lookup probes them, or, once its mirror is built (a first
// allocation refused), through the mirror synced to its tokens; its hit kept
// as a VllmHit (the lazy ids of the KVCacheBlocks returned). With caching
// off or for a request that skips reading the cache it is the empty blocks
// and no hit, as the manager's Python answers. Anything to raise about goes
// to the manager's Python.
#include <array>
#include <cstdint>
#include <optional>
#include <utility>

#include "bindings.h"
#include "fast_call.h"
#include "vllm_calls.h"
#include "vllm_core.h"
#include "vllm_hit.h"
#include "vllm_tracked.h"

namespace hkv::python {
namespace {

// The request's entry if this path takes its lookup: its tracked entry (a
// new one is made by Lookup), the token count and its keys.
struct Lookup {
  PyObject* request = nullptr;
  py::object id;       // request.request_id
  py::object tracked;  // None: none yet
  long long num_tokens = 0;
  long long num_keys = 0;
  py::object keys;  // request.block_hashes
};

// Whether the lookup reads the cache: not with caching off, nor for a
// request that skips reading it (prompt logprobs; then it is the empty
// blocks and no hit, and no entry is made). Nothing when the request's flag
// is not a plain bool (the manager's Python reads it).
std::optional<bool> ReadsCache(const Core& core, PyObject* request) {
  if (!core.enable_caching) return false;
  const py::object skip = Attr(request, Names().skip_reading_prefix_cache);
  const std::optional<bool> skips = skip ? PlainFlag(skip.ptr()) : std::nullopt;
  if (!skips) return std::nullopt;
  return !*skips;
}

// The lookup of a request that reads the cache. Reads the request's
// attributes first (an engine property runs Python), its tracked entry
// last, taking a reference at once.
std::optional<Lookup> TakeLookup(Core& core, PyObject* request) {
  if (!core.enable_caching || core.cache == nullptr ||
      !PyDict_CheckExact(core.tracked)) {
    return std::nullopt;
  }
  const CoreNames& names = Names();
  Lookup call;
  call.request = request;
  call.id = Attr(request, names.request_id);
  const auto num_tokens = IntAttr(request, names.num_tokens);
  call.keys = Attr(request, names.block_hashes);
  if (!call.id || !num_tokens || !FitsU32(*num_tokens) || !call.keys ||
      !PyList_CheckExact(call.keys.ptr())) {
    return std::nullopt;
  }
  call.num_tokens = *num_tokens;
  call.num_keys = *num_tokens / core.hash_block_size;
  if (PyList_GET_SIZE(call.keys.ptr()) < call.num_keys ||
      (call.num_keys > 0 && !DigestKnown(core))) {
    return std::nullopt;
  }
  PyObject* entry = PyDict_GetItemWithError(core.tracked, call.id.ptr());
  if (entry == nullptr) {
    if (!PyErr_Occurred()) return call;  // a request not seen yet
    PyErr_Clear();
    return std::nullopt;
  }
  call.tracked = py::reinterpret_borrow<py::object>(entry);
  const Tracked* t = AsTracked(entry);
  if (t == nullptr || t->request != request || t->holds) return std::nullopt;
  // A mirror built already (its first allocation was refused): tokens and
  // keys only grow.
  if (!IsNone(t->mirror) &&
      (t->mirror_request == nullptr || t->num_tokens > call.num_tokens ||
       t->num_keys > call.num_keys)) {
    return std::nullopt;
  }
  return call;
}

// The request's tracked entry, made and registered if it has none.
Tracked& Entry(Core& core, Lookup& call) {
  if (call.tracked) return *AsTracked(call.tracked.ptr());
  return NewTracked(core, call.request, call.id.ptr(), call.tracked);
}

// The lookup of a request whose mirror is built, its new tokens synced
// first; nothing when their keys do not convert (nothing changed then: the
// manager's Python raises).
std::optional<CacheHit> MirrorLookup(const CacheManager& cache, Tracked& t,
                                     const Lookup& call) {
  const auto mirror_ref = py::reinterpret_borrow<py::object>(t.mirror);
  Request& mirror = *t.mirror_request;
  if (call.num_tokens > t.num_tokens) {
    try {
      mirror.AppendKeyedTokens(
          static_cast<std::uint32_t>(call.num_tokens - t.num_tokens),
          CallerKeys(call.keys, static_cast<std::size_t>(t.num_keys),
                     "block_hashes"));
    } catch (const UsageError&) {
      return std::nullopt;
    }
    t.num_tokens = call.num_tokens;
    t.num_keys = call.num_keys;
  }
  return cache.Lookup(mirror);
}

// (KVCacheBlocks, num_tokens) of the lookup, or a null object when the
// manager's Python makes it.
py::object Run(Core& core, PyObject* self, Lookup& call) {
  const auto cache_ref = py::reinterpret_borrow<py::object>(core.cache_object);
  const CacheManager& cache = *core.cache;
  Tracked& t = Entry(core, call);  // a dict insert may run Python
  std::optional<CacheHit> found;
  if (IsNone(t.mirror)) {
    found =
        LookupEngineKeys(cache, RequestId{static_cast<std::uint64_t>(t.id)},
                         static_cast<std::uint32_t>(call.num_tokens), call.keys,
                         static_cast<std::size_t>(call.num_keys));
  } else {
    found = MirrorLookup(cache, t, call);
    if (!found) return {};
  }
  py::object hit = NewVllmHit(std::move(*found));
  const std::uint32_t num_hits = VllmHitOf(hit.ptr())->num_tokens;
  SetField(t.hit, hit.ptr());
  py::object num_hits_object = py::int_(num_hits);
  if (core.log_stats) {
    std::array<PyObject*, 3> args = {self, call.request, num_hits_object.ptr()};
    const auto done =
        py::reinterpret_steal<py::object>(PyObject_VectorcallMethod(
            Names().record_lookup, args.data(), 3, nullptr));
    if (!done) throw py::error_already_set();
  }
  py::object blocks = py::reinterpret_borrow<py::object>(core.empty_blocks);
  if (num_hits > 0) {  // a hit of no tokens has no blocks in any group
    blocks = MakeBlocks(core, hit.ptr());
  }
  SetField(t.hit_blocks, blocks.ptr());
  return py::make_tuple(blocks, num_hits_object);
}

}  // namespace

PyObject* GetComputedBlocksMethod(PyObject* self, PyObject* const* args,
                                  Py_ssize_t nargs, PyObject* kwnames) {
  Core& core = *reinterpret_cast<Core*>(self);
  PyObject* done = Guarded([&]() -> py::object {
    if (nargs != 1 || kwnames != nullptr) return {};
    const std::optional<bool> reads = ReadsCache(core, args[0]);
    if (!reads || (!*reads && core.empty_blocks == nullptr)) return {};
    if (!*reads) {
      return py::make_tuple(
          py::reinterpret_borrow<py::object>(core.empty_blocks), 0);
    }
    std::optional<Lookup> call = TakeLookup(core, args[0]);
    return call ? Run(core, self, *call) : py::object();
  });
  if (done != nullptr || PyErr_Occurred()) return done;
  return CallPython(self, Names().python_get_computed_blocks, args, nargs,
                    kwnames);
}

}  // namespace hkv::python
