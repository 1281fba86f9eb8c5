// The allocation hkv.vllm's KVCacheManager makes for an engine request, in
// one call: shared by the module function vllm_allocate_slots
// (vllm_calls.cc) and the manager's core (vllm_core.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "bindings.h"
#include "hkv/cache_manager.h"
#include "quiet_cells.h"

namespace hkv::python {

// The tokens an engine's request gained since its mirror last saw them,
// with the keys of the units they complete (keys[keys_start:]).
struct MirrorSync {
  std::uint32_t num_new_tokens = 0;
  py::handle keys;
  std::size_t keys_start = 0;
};

// What the quiet record an allocation leaves needs (QuietCells::Record).
struct QuietArgs {
  const QuietCells& cells;
  std::int64_t epoch = 0;
  std::int64_t total_computed = 0;
};

// What an allocation does besides placing blocks: the commit up to
// `commit_tokens` (none: no commit), and the ids placed in the groups
// `zeroed_groups` (a tuple of bools, one per group) flags, appended to
// `new_block_ids`. `hold_gil` keeps the GIL while the cache allocates and
// commits, for a call whose work is known small (a few blocks: about a
// microsecond, of which a release and reacquire take a tenth; and a release
// hands the GIL to any thread waiting for it, for up to its switch interval).
struct AfterPlacing {
  std::optional<std::uint32_t> commit_tokens;
  const py::tuple& zeroed_groups;
  py::list& new_block_ids;
  bool hold_gil = false;
};

// The lookup for the request `id` will be, of num_tokens tokens, whose keys
// are keys[:num_keys] (an engine's list of bytes, one per complete hash
// unit), read only as far as the lookup probes them. UsageError for fewer
// keys or ones that do not convert.
CacheHit LookupEngineKeys(const CacheManager& cache, RequestId id,
                          std::uint32_t num_tokens, py::handle keys,
                          std::size_t num_keys);

// What an allocation placed: per group the table from where its slots
// start (NewBlocks::table_starts), an empty tuple when every group's is
// empty (most decode steps), and the record QuietCells::Record gives (none
// before the prompt is computed).
struct Placed {
  py::object tables;
  std::optional<QuietRecord> quiet;
};

// The reference engine's allocate_slots in one call for hkv.vllm: the
// mirror's sync, the allocation, then the commit. Nothing when free blocks
// are short. Keys that do not convert raise UsageError before anything
// changes.
std::optional<Placed> AllocateSlots(CacheManager& cache, Request& request,
                                    const MirrorSync& sync,
                                    const AllocationRequest& args,
                                    const AfterPlacing& after,
                                    const QuietArgs& quiet);

}  // namespace hkv::python
