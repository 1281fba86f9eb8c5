// A request's first allocate_slots through hkv.vllm's manager core
// (vllm_core_allocate.h), its admission, without the manager's Python: its
// tracked entry made (or the one its lookup made taken), its mirror built
// from the engine's block hashes (the prompt's keys; its outputs' come in
// as the allocation's sync) unless an earlier admission refused for free
// blocks built it, the lookup's hit adopted whole, then the allocation and
// the commit as a running request's. What _track, _hit and _allocate_slots
// do, for the calls the engine's scheduler makes.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "bindings.h"
#include "hkv/request.h"
#include "vllm_core_allocate.h"
#include "vllm_hit.h"

namespace hkv::python {
namespace {

// The engine request's fields its mirror is built from.
struct Fields {
  long long computed = 0;
  long long num_tokens = 0;
  long long num_prompt_tokens = 0;
  py::object keys;  // block_hashes: a list, a key per complete unit at least
  CacheRead cache_read = CacheRead::kAllowed;
  std::optional<std::uint32_t> lora_id;
};

// The fields, or nothing when one is missing or not plain: an int that does
// not fit, a prompt longer than the request, keys short, a LoRA id that is
// not a plain int.
std::optional<Fields> ReadFields(const Core& core, PyObject* request) {
  const CoreNames& names = Names();
  const auto computed = IntAttr(request, names.num_computed_tokens);
  const auto num_tokens = IntAttr(request, names.num_tokens);
  const auto prompt = IntAttr(request, names.num_prompt_tokens);
  if (!computed || !num_tokens || !prompt || !FitsU32(*computed) ||
      !FitsU32(*num_tokens) || !FitsU32(*prompt) || *prompt > *num_tokens) {
    return std::nullopt;
  }
  Fields fields{.computed = *computed,
                .num_tokens = *num_tokens,
                .num_prompt_tokens = *prompt,
                .keys = Attr(request, names.block_hashes),
                .cache_read = CacheRead::kAllowed,
                .lora_id = std::nullopt};
  const py::object skip = Attr(request, names.skip_reading_prefix_cache);
  const py::object lora = Attr(request, names.lora_request);
  const std::optional<bool> skips = PlainFlag(skip.ptr());
  if (!fields.keys || !skip || !lora || !skips ||
      !PyList_CheckExact(fields.keys.ptr()) ||
      PyList_GET_SIZE(fields.keys.ptr()) < *num_tokens / core.hash_block_size) {
    return std::nullopt;
  }
  fields.cache_read = *skips ? CacheRead::kSkipped : CacheRead::kAllowed;
  if (!lora.is_none()) {
    const auto id = IntAttr(lora.ptr(), names.lora_int_id);
    if (!id || !FitsU32(*id)) return std::nullopt;
    fields.lora_id = static_cast<std::uint32_t>(*id);
  }
  return fields;
}

// The hit the call adopts: nullptr for none, the request's lookup when
// `blocks` are that lookup's own blocks and `num_tokens` its whole count;
// nothing for any other (the manager's Python cuts or compares it).
std::optional<const CacheHit*> TakeHit(const Core& core, const Tracked* t,
                                       PyObject* blocks, long long num_tokens) {
  if (num_tokens == 0 && (IsNone(blocks) || blocks == core.empty_blocks)) {
    return nullptr;
  }
  if (t == nullptr || num_tokens <= 0 || blocks == nullptr ||
      blocks != t->hit_blocks) {
    return std::nullopt;
  }
  const CacheHit* hit = VllmHitOf(t->hit);
  if (hit == nullptr || hit->num_tokens != num_tokens) return std::nullopt;
  return hit;
}

// The mirror of the request `id` keyed by the engine's prompt keys, or
// nothing when they do not convert or are short (Python run since they were
// read may have changed the list; the manager's Python raises then).
std::optional<py::object> BuildMirror(const Core& core, const Fields& fields,
                                      long long id) {
  const auto unit = static_cast<std::size_t>(core.hash_block_size);
  std::vector<BlockHash> keys(
      static_cast<std::size_t>(fields.num_prompt_tokens) / unit);
  if (static_cast<std::size_t>(PyList_GET_SIZE(fields.keys.ptr())) <
      keys.size()) {
    return std::nullopt;
  }
  try {
    ConvertKeys(PySequence_Fast_ITEMS(fields.keys.ptr()), 0, keys,
                "block_hashes");
    return py::cast(Request::KeyedByCaller(
        {.id = RequestId{static_cast<std::uint64_t>(id)},
         .cache_read = fields.cache_read,
         .lora_id = fields.lora_id},
        static_cast<std::uint32_t>(fields.num_prompt_tokens), std::move(keys),
        core.cache->key_scheme()));
  } catch (const UsageError&) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<py::object> Admit(Core& core, const AllocateArgs& args) {
  std::optional<Call> call = PlainCall(args);
  if (!call || core.cache == nullptr || !PyDict_CheckExact(core.tracked) ||
      !PyList_CheckExact(core.new_block_ids) || NeedsPython(core)) {
    return std::nullopt;
  }
  PyObject* request = call->request;
  const std::optional<Fields> fields = ReadFields(core, request);
  const py::object id = Attr(request, Names().request_id);
  if (!fields || !id) return std::nullopt;
  // The entry last (the reads above may run Python), a reference taken at
  // once.
  PyObject* entry = PyDict_GetItemWithError(core.tracked, id.ptr());
  if (entry == nullptr && PyErr_Occurred()) {
    PyErr_Clear();
    return std::nullopt;
  }
  py::object holder = py::reinterpret_borrow<py::object>(entry);
  Tracked* t = AsTracked(entry);
  if (entry != nullptr &&
      (t == nullptr || t->request != request || t->holds ||
       (!IsNone(t->mirror) && t->mirror_request == nullptr))) {
    return std::nullopt;
  }
  const std::optional<const CacheHit*> hit =
      TakeHit(core, t, args[kNewComputedBlocks], call->num_new_computed_tokens);
  if (!hit) return std::nullopt;
  const py::object hit_ref =
      py::reinterpret_borrow<py::object>(t == nullptr ? Py_None : t->hit);
  call->hit = *hit;
  const Counts counts{.computed = fields->computed,
                      .num_tokens = fields->num_tokens};
  if (t != nullptr && !IsNone(t->mirror)) {  // a retry after a refusal
    call->tracked = t;
    return Allocate(core, *call, counts);
  }
  const long long mirror_id = t == nullptr ? core.next_id : t->id;
  const std::optional<py::object> mirror =
      BuildMirror(core, *fields, mirror_id);
  // Making the mirror may have run Python (a collection) that took the id.
  if (!mirror || (t == nullptr && core.next_id != mirror_id)) {
    return std::nullopt;
  }
  // Nothing has changed so far; from here the call is this path's.
  Tracked& tracked =
      t != nullptr ? *t : NewTracked(core, request, id.ptr(), holder);
  SetField(tracked.mirror, mirror->ptr());
  tracked.mirror_request = mirror->cast<Request*>();
  tracked.num_tokens = fields->num_prompt_tokens;
  tracked.num_keys = fields->num_prompt_tokens / core.hash_block_size;
  call->tracked = &tracked;
  return Allocate(core, *call, counts);
}

}  // namespace hkv::python
