// What allocate_slots of hkv.vllm's manager core (vllm_core.h) shares
// between its two C paths: a running request's allocation
// (vllm_core_allocate.cc) and a request's first, its admission
// (vllm_core_admit.cc).
#pragma once

#include <Python.h>

#include <array>
#include <cstddef>
#include <optional>

#include "bindings.h"
#include "hkv/cache_hit.h"
#include "hkv/cache_manager.h"
#include "vllm_core.h"
#include "vllm_tracked.h"

namespace hkv::python {

// allocate_slots' parameters, in the engine's order.
enum AllocateArg {
  kRequest,
  kNumNewTokens,
  kNumNewComputedTokens,
  kNewComputedBlocks,
  kNumLookaheadTokens,
  kNumExternalComputedTokens,
  kDelayCacheBlocks,
  kNumEncoderTokens,
  kFullSequenceMustFit,
  kNumAllocateArgs
};
// The arguments by parameter (nullptr: not given).
using AllocateArgs = std::array<PyObject*, kNumAllocateArgs>;

// An allocation either path makes: a request's new tokens with nothing but
// its own lookup's hit to place (no connector nor encoder tokens).
struct Call {
  PyObject* request;
  Tracked* tracked;  // its mirror built and in step up to tracked->num_tokens
  long long num_new_tokens;
  long long lookahead;
  bool no_commit;                         // delay_cache_blocks or caching off
  long long num_new_computed_tokens = 0;  // the hit's
  const CacheHit* hit = nullptr;          // the request's lookup, whole
  AdmissionGate gate = AdmissionGate::kNextChunk;
};

// The request's token counts as read so far (an engine property each; the
// allocation reads what the caller did not).
struct Counts {
  std::optional<long long> computed;
  std::optional<long long> num_tokens;
};

// The call's arguments when every one is plain (ints that fit, bools), new
// tokens given and no connector or encoder tokens; nothing else. The entry
// is left to the path (tracked nullptr, hit none).
std::optional<Call> PlainCall(const AllocateArgs& args);

// Whether an allocation is the manager's Python's to make: prefix caching
// off, the block pool publishing events (its Python drains them) or not
// knowing the keys' digest size yet (its Python learns it).
bool NeedsPython(Core& core);

// The allocation of `call`: the mirror's sync, the allocation and the
// commit, the entry updated; None when free blocks are short; nothing when
// the manager's Python must make it (nothing changed then). Throws what
// AllocateSlots throws, the entry's counts kept in step with the mirror.
std::optional<py::object> Allocate(Core& core, const Call& call,
                                   const Counts& counts);

// A request's first allocation (no tracked entry, or the one its lookup
// made), its mirror built here, or nothing when the manager's Python must
// make it (nothing changed then): a hit other than the lookup's own blocks
// whole, connector or encoder tokens, caching off, events on, a LoRA id or
// keys that do not convert, arguments or counts that are not plain.
std::optional<py::object> Admit(Core& core, const AllocateArgs& args);

}  // namespace hkv::python
