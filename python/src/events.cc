// Bindings of hkv/events.h and the cache manager's counters: KV events,
// copy-on-write copies, prefix-cache stats. All plain values.
#include "hkv/events.h"

#include "bindings.h"
#include "hkv/cache_manager.h"

namespace hkv::python {
namespace {

// An event's extra keys as the reference's Python events carry them
// (spec §6.1): per block None or a list of str (LoRA name, cache salt),
// (identifier, offset) tuples and bytes (prompt-embeddings digests).
py::list EventKeys(
    const std::vector<std::optional<std::vector<EventExtraKey>>>& blocks) {
  py::list out;
  for (const auto& block : blocks) {
    if (!block) {
      out.append(py::none());
      continue;
    }
    py::list keys;
    for (const EventExtraKey& key : *block) {
      if (const auto* text = std::get_if<std::string>(&key)) {
        keys.append(py::str(*text));
      } else if (const auto* item = std::get_if<EventItemOffset>(&key)) {
        keys.append(py::make_tuple(item->identifier, item->offset));
      } else {
        keys.append(AsBytes(std::get<EmbedsDigest>(key)));
      }
    }
    out.append(std::move(keys));
  }
  return out;
}

void BindEventTypes(py::module_& m) {
  py::class_<BlockStored>(m, "BlockStored")
      .def_readonly("block_hashes", &BlockStored::block_hashes)
      .def_readonly("parent_block_hash", &BlockStored::parent_block_hash)
      .def_readonly("token_ids", &BlockStored::token_ids)
      .def_readonly("block_size", &BlockStored::block_size)
      .def_readonly("first_block", &BlockStored::first_block)
      .def_readonly("lora_id", &BlockStored::lora_id)
      .def_readonly("lora_name", &BlockStored::lora_name)
      .def_property_readonly(
          "extra_keys",
          [](const BlockStored& e) { return EventKeys(e.extra_keys); })
      .def_property_readonly(
          "skipped_extra_keys",
          [](const BlockStored& e) { return EventKeys(e.skipped_extra_keys); })
      .def_readonly("skipped_parent_block_hash",
                    &BlockStored::skipped_parent_block_hash)
      .def_readonly("skipped_token_ids", &BlockStored::skipped_token_ids)
      .def_readonly("group", &BlockStored::group)
      .def_readonly("spec_kind", &BlockStored::spec_kind)
      .def_readonly("sliding_window", &BlockStored::sliding_window)
      .def_readonly("medium", &BlockStored::medium)
      .def("__repr__", [](const BlockStored& e) {
        return "BlockStored(" + std::to_string(e.block_hashes.size()) +
               " hashes, group " + std::to_string(ToIndex(e.group)) + ")";
      });
  py::class_<BlockRemoved>(m, "BlockRemoved")
      .def_readonly("block_hashes", &BlockRemoved::block_hashes)
      .def_readonly("group", &BlockRemoved::group)
      .def_readonly("medium", &BlockRemoved::medium)
      .def("__repr__", [](const BlockRemoved& e) {
        return "BlockRemoved(" + std::to_string(e.block_hashes.size()) +
               " hashes, group " + std::to_string(ToIndex(e.group)) + ")";
      });
  py::class_<AllBlocksCleared>(m, "AllBlocksCleared")
      .def("__repr__", [](const AllBlocksCleared&) {
        return std::string("AllBlocksCleared()");
      });
}

void BindCopies(py::module_& m) {
  py::class_<BlockCopy>(m, "BlockCopy")
      .def(py::init<BlockId, BlockId, GroupId>(), py::arg("source"),
           py::arg("destination"), py::arg("group"))
      .def_readonly("source", &BlockCopy::source)
      .def_readonly("destination", &BlockCopy::destination)
      .def_readonly("group", &BlockCopy::group)
      .def(py::self == py::self)
      .def("__repr__", [](const BlockCopy& c) {
        return "BlockCopy(" + std::to_string(ToIndex(c.source)) + " -> " +
               std::to_string(ToIndex(c.destination)) + ", group " +
               std::to_string(ToIndex(c.group)) + ")";
      });
}

void BindMoves(py::module_& m) {
  py::class_<PoolMoves>(m, "PoolMoves")
      .def_readonly("parked", &PoolMoves::parked)
      .def_readonly("unparked", &PoolMoves::unparked)
      .def("__bool__", [](const PoolMoves& moves) { return !moves.empty(); })
      .def("__repr__", [](const PoolMoves& moves) {
        return "PoolMoves(" + std::to_string(moves.parked.size()) +
               " parked, " + std::to_string(moves.unparked.size()) +
               " unparked)";
      });
}

void BindStats(py::module_& m) {
  py::class_<MissCounters>(m, "MissCounters")
      .def_readonly("requests", &MissCounters::requests)
      .def_readonly("tokens", &MissCounters::tokens);
  py::class_<PrefixCacheStats>(m, "PrefixCacheStats")
      .def_readonly("requests", &PrefixCacheStats::requests)
      .def_readonly("queries", &PrefixCacheStats::queries)
      .def_readonly("hits", &PrefixCacheStats::hits)
      .def_readonly("reset", &PrefixCacheStats::reset)
      .def_readonly("speculative_rewind", &PrefixCacheStats::speculative_rewind)
      .def_readonly("no_checkpoint", &PrefixCacheStats::no_checkpoint)
      .def_readonly("window_not_covered", &PrefixCacheStats::window_not_covered)
      .def_readonly("evicted", &PrefixCacheStats::evicted);
  py::class_<PoolCounters>(m, "PoolCounters")
      .def_readonly("evicted_blocks", &PoolCounters::evicted_blocks)
      .def_readonly("parked_blocks", &PoolCounters::parked_blocks);
}

}  // namespace

void BindEvents(py::module_& m) {
  BindEventTypes(m);
  BindCopies(m);
  BindMoves(m);
  BindStats(m);
}

}  // namespace hkv::python
