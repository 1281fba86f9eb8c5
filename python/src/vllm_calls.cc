// The calls hkv.vllm's KVCacheManager (python/hkv/vllm/manager.py) makes on
// every scheduler step, as vectorcalls (fast_call.h): the lookup of an
// engine request's keys and allocate_slots in one call. Lookup, Allocate
// and Commit run without the GIL, but a lookup's, which reads the engine's
// list of keys as it probes them.
#include "vllm_calls.h"

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bindings.h"
#include "fast_call.h"
#include "hkv/cache_manager.h"
#include "quiet_cells.h"
#include "vllm_hit.h"

namespace hkv::python {
namespace {

// The first `size` items of a list of bytes an engine holds (its request's
// block hashes), read as a lookup probes them. Borrowed: lives within the
// binding call that made it, which holds the GIL throughout.
class ListKeys : public KeySource {
 public:
  ListKeys(const py::handle& keys, std::size_t size, const char* what)
      : keys_(keys), size_(size), what_(what) {
    const std::size_t held = NumCallerKeys(keys, what);
    if (held < size) {
      throw UsageError(std::string(what) + " has " + std::to_string(held) +
                       " keys, fewer than the " + std::to_string(size) +
                       " asked for");
    }
  }
  std::size_t size() const override { return size_; }
  void Read(std::size_t first, std::span<BlockHash> out) const override {
    ConvertKeys(PySequence_Fast_ITEMS(keys_.ptr()), first, out, what_);
  }

 private:
  py::handle keys_;
  std::size_t size_;
  const char* what_;
};

// Whether `placed` (a group's new blocks) are the ids of `slots` (its table
// from where the allocation's slots start), nulls left out of both: then the
// zeroing list can share the result's int objects.
bool SameIds(std::span<const BlockId> placed, std::span<const BlockId> slots) {
  std::size_t i = 0;
  for (BlockId id : slots) {
    if (id == kNullBlock) continue;
    while (i < placed.size() && placed[i] == kNullBlock) ++i;
    if (i == placed.size() || placed[i] != id) return false;
    ++i;
  }
  while (i < placed.size() && placed[i] == kNullBlock) ++i;
  return i == placed.size();
}

// The items of `ids` (a list made by IdList from `slots`) whose id is not
// the null block, the same objects: `ids` itself when none is null.
py::object NonNullItems(const py::handle& ids, std::span<const BlockId> slots) {
  const auto num_ids = std::count_if(
      slots.begin(), slots.end(), [](BlockId id) { return id != kNullBlock; });
  if (static_cast<std::size_t>(num_ids) == slots.size()) {
    return py::reinterpret_borrow<py::object>(ids);
  }
  py::list out(num_ids);
  Py_ssize_t at = 0;
  for (std::size_t j = 0; j < slots.size(); ++j) {
    if (slots[j] == kNullBlock) continue;
    PyObject* item = PyList_GET_ITEM(ids.ptr(), static_cast<Py_ssize_t>(j));
    PyList_SET_ITEM(out.ptr(), at++, Py_NewRef(item));
  }
  return out;
}

// Appends to after.new_block_ids the new blocks of the groups
// after.zeroed_groups flags, nulls left out; from `tables` (per group the
// ids of `slots`, or empty) where they are the same ids.
void AppendZeroed(const std::vector<std::vector<BlockId>>& blocks,
                  const std::vector<std::span<const BlockId>>& slots,
                  const py::tuple& tables, const AfterPlacing& after) {
  const std::size_t num_zeroed = after.zeroed_groups.size();
  for (std::size_t g = 0; g < num_zeroed && g < blocks.size(); ++g) {
    if (blocks[g].empty() ||
        !PyObject_IsTrue(PyTuple_GET_ITEM(after.zeroed_groups.ptr(),
                                          static_cast<Py_ssize_t>(g)))) {
      continue;
    }
    const bool shared = g < tables.size() && SameIds(blocks[g], slots[g]);
    const py::object zeroed_ids =
        shared ? NonNullItems(
                     PyTuple_GET_ITEM(tables.ptr(), static_cast<Py_ssize_t>(g)),
                     slots[g])
               : IdList(blocks[g], true);
    if (PyList_SetSlice(after.new_block_ids.ptr(), PY_SSIZE_T_MAX,
                        PY_SSIZE_T_MAX, zeroed_ids.ptr()) != 0) {
      throw py::error_already_set();
    }
  }
}

}  // namespace

CacheHit LookupEngineKeys(const CacheManager& cache, RequestId id,
                          std::uint32_t num_tokens, py::handle keys,
                          std::size_t num_keys) {
  const ListKeys source(keys, num_keys, "vllm_lookup_keys(): keys");
  return cache.LookupKeys(id, num_tokens, source);
}

std::optional<Placed> AllocateSlots(CacheManager& cache, Request& request,
                                    const MirrorSync& sync,
                                    const AllocationRequest& args,
                                    const AfterPlacing& after,
                                    const QuietArgs& quiet) {
  const std::optional<std::uint32_t>& commit_tokens = after.commit_tokens;
  if (sync.num_new_tokens > 0) {
    request.AppendKeyedTokens(
        sync.num_new_tokens,
        CallerKeys(sync.keys, sync.keys_start, "vllm_allocate_slots(): keys"));
  }
  std::optional<NewBlocks> placed;
  {
    std::optional<py::gil_scoped_release> release;
    if (!after.hold_gil) release.emplace();
    placed = cache.Allocate(request, args);
    if (placed && commit_tokens) cache.Commit(request, *commit_tokens);
  }
  if (!placed) return std::nullopt;
  const std::optional<QuietRecord> record = quiet.cells.Record(
      quiet.epoch, quiet.total_computed, args.num_new_tokens,
      args.num_lookahead_tokens,
      commit_tokens ? std::optional<std::int64_t>(*commit_tokens)
                    : std::nullopt,
      request.num_prompt_tokens());
  // Each group's ids from where this allocation's slots start.
  std::vector<std::span<const BlockId>> placed_ids(cache.num_groups());
  bool any = false;
  for (std::uint32_t g = 0; g < cache.num_groups(); ++g) {
    const std::span<const BlockId> table =
        cache.block_table(request.id(), GroupId{g});
    const std::size_t start = placed->table_starts[g];
    placed_ids[g] = table.subspan(std::min(start, table.size()));
    any |= !placed_ids[g].empty();
  }
  py::tuple tables;  // empty when every group's ids are
  if (any) {
    tables = py::tuple(placed_ids.size());
    for (std::size_t g = 0; g < placed_ids.size(); ++g) {
      tables[g] = IdList(placed_ids[g], false);
    }
  }
  AppendZeroed(placed->blocks, placed_ids, tables, after);
  return Placed{.tables = tables, .quiet = record};
}

namespace {

// vllm_lookup_keys(cache, id, num_tokens, keys, num_keys): (hit, its
// num_tokens), the lookup for the request `id` will be, of num_tokens
// tokens, whose keys are keys[:num_keys] (bytes, one per complete hash
// unit), read only as far as the lookup probes them; the count comes along
// because reading it from the hit costs a pybind11 call. Keeps the GIL: it
// reads the list as it probes.
py::object LookupKeysCall(const FastArgs& args) {
  const auto& cache = args.Get<const CacheManager&>(0, "cache");
  const auto id = args.Get<RequestId>(1, "id");
  const auto num_tokens = args.Get<std::uint32_t>(2, "num_tokens");
  const auto num_keys = args.Get<std::size_t>(4, "num_keys");
  CacheHit hit = LookupEngineKeys(cache, id, num_tokens, args[3], num_keys);
  const std::uint32_t num_hits = hit.num_tokens;
  return py::make_tuple(NewVllmHit(std::move(hit)), num_hits);
}

// The hit argument: a VllmHit or None.
const CacheHit* HitArg(py::handle value) {
  if (value.is_none()) return nullptr;
  if (const CacheHit* hit = VllmHitOf(value.ptr())) return hit;
  throw UsageError(
      "vllm_allocate_slots(): hit must be a VllmHit or None, "
      "got " +
      ShortRepr(value));
}

// vllm_allocate_slots(cache, request, num_new_tokens, num_computed_tokens,
// hit, num_lookahead_tokens, num_external_computed_tokens, whole_sequence,
// commit_tokens, zeroed_groups, new_block_ids, sync_tokens, keys,
// keys_start, cells, epoch, total_computed): AllocateSlots, the mirror's
// sync first (sync_tokens tokens, the keys keys[keys_start:] of the units
// they complete), then the allocation and the commit up to commit_tokens
// (None: none).
py::object AllocateSlotsCall(const FastArgs& args) {
  auto& cache = args.Get<CacheManager&>(0, "cache");
  auto& request = args.Get<Request&>(1, "request");
  const AllocationRequest allocation{
      .num_computed_tokens = args.Get<std::uint32_t>(3, "num_computed_tokens"),
      .num_external_computed_tokens =
          args.Get<std::uint32_t>(6, "num_external_computed_tokens"),
      .num_new_tokens = args.Get<std::uint32_t>(2, "num_new_tokens"),
      .num_lookahead_tokens =
          args.Get<std::uint32_t>(5, "num_lookahead_tokens"),
      .hit = HitArg(args[4]),
      .gate = args.Get<bool>(7, "whole_sequence")
                  ? AdmissionGate::kWholeSequence
                  : AdmissionGate::kNextChunk};
  auto new_block_ids = args.Get<py::list>(10, "new_block_ids");
  const auto zeroed_groups = args.Get<py::tuple>(9, "zeroed_groups");
  const std::optional<Placed> placed = AllocateSlots(
      cache, request,
      {.num_new_tokens = args.Get<std::uint32_t>(11, "sync_tokens"),
       .keys = args[12],
       .keys_start = args.Get<std::size_t>(13, "keys_start")},
      allocation,
      {.commit_tokens =
           args.Get<std::optional<std::uint32_t>>(8, "commit_tokens"),
       .zeroed_groups = zeroed_groups,
       .new_block_ids = new_block_ids},
      {.cells = args.Get<const QuietCells&>(14, "cells"),
       .epoch = args.Get<std::int64_t>(15, "epoch"),
       .total_computed = args.Get<std::int64_t>(16, "total_computed")});
  if (!placed) return py::none();
  return py::make_tuple(placed->tables, placed->quiet ? placed->quiet->AsTuple()
                                                      : py::object(py::none()));
}

constexpr char kLookupKeys[] = "vllm_lookup_keys";
constexpr char kAllocateSlots[] = "vllm_allocate_slots";

PyMethodDef lookup_keys_def = FastMethod<kLookupKeys, 5, &LookupKeysCall>(
    "vllm_lookup_keys(cache, id, num_tokens, keys, num_keys): (the VllmHit "
    "of the request id's lookup, of num_tokens tokens keyed keys[:num_keys] "
    "(read as probed), its num_tokens).");
PyMethodDef allocate_slots_def =
    FastMethod<kAllocateSlots, 17, &AllocateSlotsCall>(
        "vllm_allocate_slots(cache, request, num_new_tokens, "
        "num_computed_tokens, hit, num_lookahead_tokens, "
        "num_external_computed_tokens, whole_sequence, commit_tokens, "
        "zeroed_groups, new_block_ids, sync_tokens, keys, keys_start, cells, "
        "epoch, total_computed): hkv.vllm's allocate_slots. First appends "
        "sync_tokens tokens to the request with the keys keys[keys_start:] "
        "of the units they complete, then allocates, commits up to "
        "commit_tokens (None: no commit). None when free blocks are short; "
        "else (tables, quiet): per group the ids from where this "
        "allocation's slots start (an empty tuple when every group's are "
        "none), and cells.record(epoch, total_computed, ...) for the next "
        "call's fast path. The ids placed in the groups zeroed_groups (a "
        "tuple of bools) flags are appended to the list new_block_ids.");

}  // namespace

void BindVllmCalls(py::module_& m) {
  AddFastCall(m, lookup_keys_def);
  AddFastCall(m, allocate_slots_def);
}

}  // namespace hkv::python
