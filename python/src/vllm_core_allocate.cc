// allocate_slots of hkv.vllm's manager core (vllm_core.h): a running
// request's call with no hit, connector or encoder tokens, plain ints and
// bools, caching on and events off runs here whole: the quiet check against
// its record (QuietCells), else the mirror's sync, the allocation and the
// commit (AllocateSlots, vllm_calls.h) and the KVCacheBlocks result. A
// request's first call is its admission (vllm_core_admit.cc).
#include "vllm_core_allocate.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "bindings.h"
#include "fast_call.h"
#include "vllm_calls.h"

namespace hkv::python {
namespace {

constexpr std::array<const char*, kNumAllocateArgs> kArgNames = {
    "request",
    "num_new_tokens",
    "num_new_computed_tokens",
    "new_computed_blocks",
    "num_lookahead_tokens",
    "num_external_computed_tokens",
    "delay_cache_blocks",
    "num_encoder_tokens",
    "full_sequence_must_fit"};

// Interned kArgNames.
std::array<PyObject*, kNumAllocateArgs> arg_names{};

// The arguments by parameter (nullptr: not given). False for anything
// Python would raise about (too many, unknown or repeated names).
bool ParseArgs(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
               AllocateArgs& out) {
  if (nargs > kNumAllocateArgs) return false;
  std::copy(args, args + nargs, out.begin());
  const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* name = PyTuple_GET_ITEM(kwnames, k);
    // A caller's literal names are interned: the same objects as ours.
    auto at = std::find(arg_names.begin(), arg_names.end(), name);
    if (at == arg_names.end()) {
      at = std::find_if(arg_names.begin(), arg_names.end(), [&](PyObject* n) {
        return PyUnicode_Compare(n, name) == 0;
      });
      PyErr_Clear();  // a name that is not a str compares as unequal
    }
    const auto i = static_cast<std::size_t>(at - arg_names.begin());
    if (i == kNumAllocateArgs || out[i] != nullptr) return false;
    out[i] = args[nargs + k];
  }
  return out[kRequest] != nullptr && out[kNumNewTokens] != nullptr;
}

// What a running request's call changes, by its record's cells.
enum class Change {
  kNothing,  // every count in its cell: the quiet path
  kRelease,  // only the computed count past its cell: a release, no more
  kMore,     // anything else: the full path
};

// The cached count (min(main, the request's tokens)) as far as `counts`
// know it: exact once the tokens were read, else min(main, the mirror's
// tokens), a bound under it (tokens only grow).
long long KnownCached(long long main, const Counts& counts, const Tracked& t) {
  return std::min(main, counts.num_tokens ? *counts.num_tokens : t.num_tokens);
}

// The call's change (QuietCells::Record's ranges). Reads the request's
// counts into `counts` as far as it gets.
Change Classify(const Core& core, const Call& call, Counts& counts) {
  const Tracked& t = *call.tracked;
  const QuietRecord& r = t.quiet;
  if (!t.has_quiet || r.epoch != core.epoch || r.lookahead != call.lookahead ||
      r.no_commit != call.no_commit) {
    return Change::kMore;
  }
  counts.computed = IntAttr(call.request, Names().num_computed_tokens);
  const std::optional<long long>& computed = counts.computed;
  if (!computed || !FitsU32(*computed)) return Change::kMore;
  const long long total = std::min(*computed, core.max_model_len);
  const long long main = total + call.num_new_tokens;
  // Computed counts move forward; a count back below the cell (drafts
  // rejected) takes the full path.
  if (total < r.computed_lo || main < r.main_lo || main > r.main_hi) {
    return Change::kMore;
  }
  const Change change =
      total <= r.computed_hi ? Change::kNothing : Change::kRelease;
  if (call.no_commit) return change;
  // When the bound already places the cached count in range, the token
  // count (an engine property, a third of this check's cost) is not read.
  if (r.commit_lo <= KnownCached(main, counts, t) && main <= r.commit_hi) {
    return change;
  }
  counts.num_tokens = IntAttr(call.request, Names().num_tokens);
  if (!counts.num_tokens) return Change::kMore;
  const long long cached = KnownCached(main, counts, t);
  return r.commit_lo <= cached && cached <= r.commit_hi ? change
                                                        : Change::kMore;
}

// A call whose counts leave only the computed count's cell (a recurrent
// state or a window's block falls behind): what the full path would do
// then, the release of the blocks the computed count skips, and the next
// record, without the mirror's sync, the allocation and the commit, which
// would change nothing (their counts' cells hold). Nothing when the
// manager's Python must make it (events on, caching off). Not inlined:
// inside allocate_slots it made every quiet call 20 ns slower.
[[gnu::noinline]] std::optional<py::object> Release(Core& core,
                                                    const Call& call,
                                                    const Counts& counts) {
  if (NeedsPython(core)) return std::nullopt;
  Tracked& t = *call.tracked;
  const Request& mirror = *t.mirror_request;
  const long long total = std::min(*counts.computed, core.max_model_len);
  const long long main = total + call.num_new_tokens;
  core.cache->RemoveSkippedBlocks(mirror.id(),
                                  static_cast<std::uint32_t>(*counts.computed));
  // Any count in the cached count's cell gives its record: what Classify
  // placed in it.
  std::optional<std::int64_t> cached;
  if (!call.no_commit) cached = KnownCached(main, counts, t);
  const std::optional<QuietRecord> record =
      core.cells->Record(core.epoch, total, call.num_new_tokens, call.lookahead,
                         cached, mirror.num_prompt_tokens());
  t.has_quiet = record.has_value();
  if (record) t.quiet = *record;
  return py::reinterpret_borrow<py::object>(core.empty_blocks);
}

}  // namespace

std::optional<Call> PlainCall(const AllocateArgs& a) {
  const auto num_new = PlainInt(a[kNumNewTokens]);
  const auto lookahead = PlainInt(a[kNumLookaheadTokens]);
  const auto delay = PlainFlag(a[kDelayCacheBlocks]);
  const auto num_computed = PlainInt(a[kNumNewComputedTokens]);
  const auto whole = PlainFlag(a[kFullSequenceMustFit]);
  if (!num_new || *num_new <= 0 || !FitsU32(*num_new) || !lookahead ||
      !FitsU32(*lookahead) || !delay || !num_computed ||
      !FitsU32(*num_computed) || !whole ||
      PlainInt(a[kNumExternalComputedTokens]) != 0 ||
      PlainInt(a[kNumEncoderTokens]) != 0) {
    return std::nullopt;
  }
  return Call{.request = a[kRequest],
              .tracked = nullptr,
              .num_new_tokens = *num_new,
              .lookahead = *lookahead,
              .no_commit = *delay,
              .num_new_computed_tokens = *num_computed,
              .gate = *whole ? AdmissionGate::kWholeSequence
                             : AdmissionGate::kNextChunk};
}

bool NeedsPython(Core& core) {
  return !core.enable_caching || EventsOn(core) || !DigestKnown(core);
}

namespace {

// The request's counts and the tokens its mirror has not seen, or nothing
// when the manager's Python must sync them (caching off, events on, the
// digest size not learnt, counts that do not fit or shrank, keys short).
struct Sync {
  long long computed = 0;
  long long num_tokens = 0;
  long long num_keys = 0;  // the complete units once synced
  py::object keys;         // request.block_hashes, when tokens are new
  MirrorSync mirror;
};

// At most this many tokens placed, released or cached past the last
// allocation's record: a call known that small keeps the GIL
// (AfterPlacing::hold_gil).
constexpr long long kSmallCallTokens = 128;

// Whether the call's allocation and commit are known small: no hit, few new
// tokens, and computed and cached counts near those of the last allocation,
// which committed.
bool IsSmall(const Call& call, long long total_computed,
             std::optional<std::uint32_t> commit) {
  const Tracked& t = *call.tracked;
  const QuietRecord& r = t.quiet;
  return t.has_quiet && !r.no_commit && call.hit == nullptr &&
         call.num_new_tokens + call.lookahead <= kSmallCallTokens &&
         total_computed - r.computed_lo <= kSmallCallTokens &&
         (!commit || *commit - r.commit_lo <= kSmallCallTokens);
}

std::optional<Sync> TakeSync(Core& core, const Call& call, Counts counts) {
  const Tracked& t = *call.tracked;
  if (NeedsPython(core)) return std::nullopt;
  const std::optional<long long> computed =
      counts.computed ? counts.computed
                      : IntAttr(call.request, Names().num_computed_tokens);
  const std::optional<long long> num_tokens =
      counts.num_tokens ? counts.num_tokens
                        : IntAttr(call.request, Names().num_tokens);
  if (!computed || !num_tokens || !FitsU32(*computed) ||
      !FitsU32(*num_tokens) || *num_tokens < t.num_tokens ||
      !PyList_CheckExact(core.new_block_ids)) {
    return std::nullopt;
  }
  Sync sync{.computed = *computed,
            .num_tokens = *num_tokens,
            .num_keys = t.num_keys,
            .keys = {},
            .mirror = {.num_new_tokens = static_cast<std::uint32_t>(
                           *num_tokens - t.num_tokens),
                       .keys = py::none(),
                       .keys_start = static_cast<std::size_t>(t.num_keys)}};
  if (sync.mirror.num_new_tokens > 0) {
    sync.num_keys = *num_tokens / core.hash_block_size;
    sync.keys = py::reinterpret_steal<py::object>(
        PyObject_GetAttr(call.request, Names().block_hashes));
    if (!sync.keys || !PyList_CheckExact(sync.keys.ptr()) ||
        PyList_GET_SIZE(sync.keys.ptr()) < sync.num_keys ||
        t.num_keys > sync.num_keys) {
      PyErr_Clear();
      return std::nullopt;
    }
    sync.mirror.keys = sync.keys;
  }
  return sync;
}

// The result of an allocation that placed blocks, the entry updated.
py::object Result(Core& core, Tracked& t, const Placed& placed) {
  t.has_quiet = placed.quiet.has_value();
  if (placed.quiet) t.quiet = *placed.quiet;
  t.holds = 1;
  SetField(t.hit, nullptr);
  SetField(t.hit_blocks, nullptr);
  PyObject* tables = placed.tables.ptr();
  if (PyTuple_GET_SIZE(tables) == 0) {
    return py::reinterpret_borrow<py::object>(core.empty_blocks);
  }
  return MakeBlocks(core, tables);
}

}  // namespace

std::optional<py::object> Allocate(Core& core, const Call& call,
                                   const Counts& counts) {
  const std::optional<Sync> sync = TakeSync(core, call, counts);
  if (!sync) return std::nullopt;
  Tracked& t = *call.tracked;
  const long long total_computed = std::min(
      sync->computed + call.num_new_computed_tokens, core.max_model_len);
  std::optional<std::uint32_t> commit;
  if (!call.no_commit) {
    commit = static_cast<std::uint32_t>(
        std::min(total_computed + call.num_new_tokens, sync->num_tokens));
  }
  const AllocationRequest allocation{
      .num_computed_tokens = static_cast<std::uint32_t>(sync->computed),
      .num_new_tokens = static_cast<std::uint32_t>(call.num_new_tokens),
      .num_lookahead_tokens = static_cast<std::uint32_t>(call.lookahead),
      .hit = call.hit,
      .gate = call.gate};
  // What the reads above may have run (an engine property) cannot free
  // what the call uses: references held, the mirror checked again.
  const auto zeroed = py::reinterpret_borrow<py::tuple>(core.zeroed);
  auto new_block_ids = py::reinterpret_borrow<py::list>(core.new_block_ids);
  const auto cache_ref = py::reinterpret_borrow<py::object>(core.cache_object);
  const auto mirror_ref = py::reinterpret_borrow<py::object>(t.mirror);
  Request* mirror = t.mirror_request;
  if (mirror == nullptr || !PyList_CheckExact(new_block_ids.ptr())) {
    return std::nullopt;
  }
  std::optional<Placed> placed;
  try {
    placed = AllocateSlots(*core.cache, *mirror, sync->mirror, allocation,
                           {.commit_tokens = commit,
                            .zeroed_groups = zeroed,
                            .new_block_ids = new_block_ids,
                            .hold_gil = IsSmall(call, total_computed, commit)},
                           {.cells = *core.cells,
                            .epoch = core.epoch,
                            .total_computed = total_computed});
  } catch (...) {
    if (mirror->num_tokens() != t.num_tokens) {  // synced
      t.num_tokens = sync->num_tokens;
      t.num_keys = sync->num_keys;
    }
    throw;
  }
  t.num_tokens = sync->num_tokens;
  t.num_keys = sync->num_keys;
  if (!placed) return py::none();
  return Result(core, t, *placed);
}

namespace {

// A running request's call as this path takes it (no hit, nothing to fit
// whole), or nothing.
std::optional<Call> TakeCall(Core& core, const AllocateArgs& a) {
  std::optional<Call> call = PlainCall(a);
  if (!call || call->num_new_computed_tokens != 0 ||
      call->gate != AdmissionGate::kNextChunk ||
      !IsNone(a[kNewComputedBlocks]) || core.tracked == nullptr ||
      !PyDict_CheckExact(core.tracked) || core.cache == nullptr) {
    return std::nullopt;
  }
  Tracked* t = RunningEntry(core, a[kRequest]);
  if (t == nullptr || t->mirror_request == nullptr) return std::nullopt;
  call->tracked = t;
  call->no_commit = call->no_commit || !core.enable_caching;
  return call;
}

}  // namespace

void InternAllocateArgs() {
  for (std::size_t i = 0; i < kNumAllocateArgs; ++i) {
    arg_names[i] = PyUnicode_InternFromString(kArgNames[i]);
    if (arg_names[i] == nullptr) throw py::error_already_set();
  }
}

PyObject* AllocateSlotsMethod(PyObject* self, PyObject* const* args,
                              Py_ssize_t nargs, PyObject* kwnames) {
  Core& core = *reinterpret_cast<Core*>(self);
  PyObject* done = Guarded([&]() -> py::object {
    AllocateArgs a{};
    if (!ParseArgs(args, nargs, kwnames, a)) return {};
    const std::optional<Call> call = TakeCall(core, a);
    if (!call) return Admit(core, a).value_or(py::object());
    // The entry stays alive while Python runs (a property's getter).
    const py::object keep = py::reinterpret_borrow<py::object>(
        reinterpret_cast<PyObject*>(call->tracked));
    Counts counts;
    const Change change = Classify(core, *call, counts);
    if (change == Change::kNothing) {
      return py::reinterpret_borrow<py::object>(core.empty_blocks);
    }
    if (change == Change::kRelease) {
      if (auto released = Release(core, *call, counts)) return *released;
    }
    return Allocate(core, *call, counts).value_or(py::object());
  });
  if (done != nullptr || PyErr_Occurred()) return done;
  return CallPython(self, Names().python_allocate_slots, args, nargs, kwnames);
}

}  // namespace hkv::python
