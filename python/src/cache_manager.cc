// Bindings of hkv/cache_manager.h and hkv/group_list.h: group specs, the
// cache config, lookup results, allocations and the CacheManager itself.
// Lookup, Allocate, Commit and Free run without the GIL.
#include "hkv/cache_manager.h"

#include <algorithm>
#include <span>
#include <vector>

#include "bindings.h"
#include "hkv/group_list.h"

namespace hkv::python {
namespace {

void BindEnums(py::module_& m) {
  py::enum_<GroupKind>(m, "GroupKind")
      .value("FULL_ATTENTION", GroupKind::kFullAttention)
      .value("SLIDING_WINDOW", GroupKind::kSlidingWindow)
      .value("CHUNKED_LOCAL", GroupKind::kChunkedLocal)
      .value("RECURRENT", GroupKind::kRecurrent)
      .value("SCRATCH", GroupKind::kScratch);
  py::enum_<RecurrentMode>(m, "RecurrentMode")
      .value("ALIGN", RecurrentMode::kAlign)
      .value("ALL", RecurrentMode::kAll)
      .value("NONE", RecurrentMode::kNone);
  py::enum_<Speculation>(m, "Speculation")
      .value("NONE", Speculation::kNone)
      .value("EAGLE", Speculation::kEagle);
  py::enum_<DcpLayout>(m, "DcpLayout")
      .value("SHARDED", DcpLayout::kSharded)
      .value("REPLICATED", DcpLayout::kReplicated);
  py::enum_<PrefixCaching>(m, "PrefixCaching")
      .value("ENABLED", PrefixCaching::kEnabled)
      .value("DISABLED", PrefixCaching::kDisabled);
  py::enum_<FreeOrder>(m, "FreeOrder")
      .value("PREPEND_UNCACHED", FreeOrder::kPrependUncached)
      .value("APPEND_ALL", FreeOrder::kAppendAll);
  py::enum_<Behaviour>(m, "Behaviour")
      .value("SPEC", Behaviour::kSpec)
      .value("ENGINE", Behaviour::kEngine);
  py::enum_<Retention>(m, "Retention")
      .value("REFERENCE", Retention::kReference)
      .value("PLACEMENT", Retention::kPlacement);
  py::enum_<KvEventMode>(m, "KvEventMode")
      .value("DISABLED", KvEventMode::kDisabled)
      .value("ENABLED", KvEventMode::kEnabled);
  py::enum_<EvictionRecord>(m, "EvictionRecord")
      .value("KEPT", EvictionRecord::kKept)
      .value("OFF", EvictionRecord::kOff);
  py::enum_<MissCause>(m, "MissCause")
      .value("NONE", MissCause::kNone)
      .value("SPECULATIVE_REWIND", MissCause::kSpeculativeRewind)
      .value("NO_CHECKPOINT", MissCause::kNoCheckpoint)
      .value("WINDOW_NOT_COVERED", MissCause::kWindowNotCovered)
      .value("EVICTED", MissCause::kEvicted);
  py::enum_<AdmissionGate>(m, "AdmissionGate")
      .value("NEXT_CHUNK", AdmissionGate::kNextChunk)
      .value("WHOLE_SEQUENCE", AdmissionGate::kWholeSequence);
}

void BindGroupSpec(py::module_& m) {
  py::class_<GroupSpec>(m, "GroupSpec")
      .def(py::init<>())
      .def_readwrite("kind", &GroupSpec::kind)
      .def_readwrite("block_size", &GroupSpec::block_size)
      .def_readwrite("speculation", &GroupSpec::speculation)
      .def_readwrite("sliding_window", &GroupSpec::sliding_window)
      .def_readwrite("output_window", &GroupSpec::output_window)
      .def_readwrite("chunk_size", &GroupSpec::chunk_size)
      .def_readwrite("dcp_layout", &GroupSpec::dcp_layout)
      .def_readwrite("recurrent_mode", &GroupSpec::recurrent_mode)
      .def_readwrite("speculative_blocks", &GroupSpec::speculative_blocks)
      .def_readwrite("scratch_blocks", &GroupSpec::scratch_blocks)
      .def_readwrite("checkpoint_blocks", &GroupSpec::checkpoint_blocks);
  m.def("parse_group_list", [](std::string_view text) {
    return ValueOrThrow(ParseGroupList(text));
  });
  m.def("group_kind_name",
        [](GroupKind kind) { return std::string(GroupKindName(kind)); });
  m.def(
      "parse_group_kind",
      [](std::string_view name) { return ParseGroupKind(name); },
      py::arg("name"),
      "The GroupKind named `name` (\"full\", ...) or its alias "
      "(\"full_attention\", \"mamba\", ...); None for another name");
  m.def(
      "group_kind_names",
      [] {
        std::vector<std::string> names;
        for (const GroupKindNames& k : kGroupKinds) {
          names.emplace_back(k.name);
          names.emplace_back(k.alias);
        }
        return names;
      },
      "Every name and alias parse_group_kind accepts");
  m.def("is_prefix_cacheable", &IsPrefixCacheable);
  m.def("tokens_per_block", &TokensPerBlock, py::arg("group"), py::arg("dcp"));
}

void BindConfig(py::module_& m) {
  py::class_<CacheConfig>(m, "CacheConfig")
      .def(py::init<>())
      .def_readwrite("groups", &CacheConfig::groups)
      .def_readwrite("num_blocks", &CacheConfig::num_blocks)
      .def_readwrite("group_pool_blocks", &CacheConfig::group_pool_blocks)
      .def_readwrite("pool_slot_bytes", &CacheConfig::pool_slot_bytes)
      .def_readwrite("keys", &CacheConfig::keys)
      .def_readwrite("dcp", &CacheConfig::dcp)
      .def_readwrite("retention_interval", &CacheConfig::retention_interval)
      .def_readwrite("retention", &CacheConfig::retention)
      .def_readwrite("caching", &CacheConfig::caching)
      .def_readwrite("events", &CacheConfig::events)
      .def_readwrite("eviction_record", &CacheConfig::eviction_record)
      .def_readwrite("free_order", &CacheConfig::free_order)
      .def_readwrite("behaviour", &CacheConfig::behaviour)
      .def_readwrite("max_model_len", &CacheConfig::max_model_len)
      .def_readwrite("max_in_flight_tokens", &CacheConfig::max_in_flight_tokens)
      .def("validate",
           [](const CacheConfig& c) { ValueOrThrow(c.Validate()); });
}

void BindResults(py::module_& m) {
  py::class_<CacheHit>(m, "CacheHit")
      .def_readonly("num_tokens", &CacheHit::num_tokens)
      .def_readonly("blocks", &CacheHit::blocks)
      .def_readonly("chain_tokens", &CacheHit::chain_tokens)
      .def_readonly("miss_cause", &CacheHit::miss_cause)
      .def_readonly("limiting_group", &CacheHit::limiting_group)
      .def_readonly("shared_prefix_boundary", &CacheHit::shared_prefix_boundary)
      .def("num_blocks", [](const CacheHit& h, std::size_t group) {
        return h.blocks.at(group).size();
      });
  py::class_<StateExport>(m, "StateExport")
      .def_readonly("group", &StateExport::group)
      .def_readonly("block", &StateExport::block)
      .def_readonly("position", &StateExport::position)
      .def(py::self == py::self);
  py::class_<NewBlocks>(m, "NewBlocks")
      .def_readonly("blocks", &NewBlocks::blocks)
      .def_readonly("state_exports", &NewBlocks::state_exports)
      .def_readonly("table_starts", &NewBlocks::table_starts);
}

std::optional<NewBlocks> Allocate(CacheManager& cache, const Request& request,
                                  const AllocationRequest& args) {
  py::gil_scoped_release release;
  return cache.Allocate(request, args);
}

void BindAllocate(py::class_<CacheManager>& c) {
  c.def(
      "allocate",
      [](CacheManager& cache, const Request& request,
         std::uint32_t num_new_tokens, std::uint32_t num_computed_tokens,
         const CacheHit* hit, const py::kwargs& more) {
        AllocationRequest args{.num_computed_tokens = num_computed_tokens,
                               .num_new_tokens = num_new_tokens,
                               .hit = hit};
        for (const auto& [key, value] : more) {
          const std::string name = key.cast<std::string>();
          const std::string what = "allocate(): " + name;
          if (name == "num_external_computed_tokens") {
            args.num_external_computed_tokens =
                Convert<std::uint32_t>(value, what);
          } else if (name == "num_lookahead_tokens") {
            args.num_lookahead_tokens = Convert<std::uint32_t>(value, what);
          } else if (name == "num_in_flight_tokens") {
            args.num_in_flight_tokens = Convert<std::uint32_t>(value, what);
          } else if (name == "gate") {
            args.gate = Convert<AdmissionGate>(value, what);
          } else {
            throw py::type_error("allocate() got an unexpected keyword " +
                                 name);
          }
        }
        return Allocate(cache, request, args);
      },
      py::arg("request"), py::arg("num_new_tokens") = 0,
      py::arg("num_computed_tokens") = 0, py::arg("hit") = py::none());
}

void BindPrefill(py::class_<CacheManager>& c) {
  c.def(
      "split_prefill",
      [](const CacheManager& cache, const Request& request,
         std::uint32_t num_computed_tokens, std::uint32_t num_new_tokens,
         const py::kwargs& more) {
        PrefillChunk chunk{.num_computed_tokens = num_computed_tokens,
                           .num_new_tokens = num_new_tokens};
        for (const auto& [key, value] : more) {
          const std::string name = key.cast<std::string>();
          const auto v =
              Convert<std::uint32_t>(value, "split_prefill(): " + name);
          if (name == "max_num_scheduled_tokens") {
            chunk.max_num_scheduled_tokens = v;
          } else if (name == "long_prefill_threshold") {
            chunk.long_prefill_threshold = v;
          } else if (name == "shared_prefix_boundary") {
            chunk.shared_prefix_boundary = v;
          } else {
            throw py::type_error("split_prefill() got an unexpected keyword " +
                                 name);
          }
        }
        return cache.SplitPrefill(request, chunk);
      },
      py::arg("request"), py::arg("num_computed_tokens"),
      py::arg("num_new_tokens"));
  c.def("truncate_hit", &CacheManager::TruncateHit, py::arg("hit"),
        py::arg("num_tokens"));
}

// An engine's views of its blocks (CacheManager's inspection calls).
void BindInspection(py::class_<CacheManager>& c) {
  c.def("ref_count", &CacheManager::ref_count, py::arg("id"))
      .def("block_key", &CacheManager::BlockKey, py::arg("id"),
           "(group, key) a block is cached under, or None")
      .def("free_queue", &CacheManager::FreeQueue,
           "Free block ids, the next to be allocated first")
      .def("find_cached", &CacheManager::FindCached, py::arg("group"),
           py::arg("key"))
      .def_property_readonly("num_cached_entries",
                             &CacheManager::num_cached_entries)
      .def(
          "evict_blocks",
          [](CacheManager& cache, const std::vector<BlockId>& ids) {
            cache.EvictBlocks(ids);
          },
          py::arg("ids"))
      .def("num_common_prefix_blocks", &CacheManager::NumCommonPrefixBlocks,
           py::arg("id"), py::arg("group"))
      .def("remove_skipped_blocks", &CacheManager::RemoveSkippedBlocks,
           py::arg("id"), py::arg("num_computed_tokens"));
}

void BindManager(py::module_& m) {
  using Release = py::call_guard<py::gil_scoped_release>;
  py::class_<CacheManager> c(m, "CacheManager");
  c.def(py::init([](const CacheConfig& config) {
          return std::make_unique<CacheManager>(
              ValueOrThrow(CacheManager::Create(config)));
        }),
        py::arg("config"))
      .def_property_readonly("key_scheme", &CacheManager::key_scheme)
      .def_property_readonly("num_groups", &CacheManager::num_groups)
      .def("lookup", &CacheManager::Lookup, py::arg("request"), Release())
      .def("commit", &CacheManager::Commit, py::arg("request"),
           py::arg("num_computed_tokens"), Release())
      .def("free", &CacheManager::Free, py::arg("id"), Release())
      .def("take_copies", &CacheManager::TakeCopies)
      .def("take_pool_moves", &CacheManager::TakePoolMoves)
      .def("finish_step", &CacheManager::FinishStep)
      .def("reset_prefix_cache", &CacheManager::ResetPrefixCache)
      .def("take_events", &CacheManager::TakeEvents)
      .def("take_stats", &CacheManager::TakeStats)
      .def_property_readonly("counters", &CacheManager::counters)
      .def_property_readonly("usage", &CacheManager::usage)
      .def_property_readonly("num_free_blocks", &CacheManager::num_free_blocks)
      .def_property_readonly("num_block_ids", &CacheManager::num_block_ids)
      .def("cached_blocks_per_group", &CacheManager::CachedBlocksPerGroup)
      .def("cached_keys", &CacheManager::CachedKeys)
      .def(
          "block_table",
          [](const CacheManager& cache, RequestId id, GroupId group) {
            const auto t = cache.block_table(id, group);
            return std::vector<BlockId>(t.begin(), t.end());
          },
          py::arg("id"), py::arg("group") = GroupId{0})
      .def(
          "block_tables",
          [](const CacheManager& cache, RequestId id) {
            py::tuple tables(cache.num_groups());
            for (std::uint32_t g = 0; g < cache.num_groups(); ++g) {
              const auto t = cache.block_table(id, GroupId{g});
              tables[g] = py::cast(std::vector<BlockId>(t.begin(), t.end()));
            }
            return tables;
          },
          py::arg("id"), "The request's block table in every group.");
  BindInspection(c);
  BindAllocate(c);
  BindPrefill(c);
}

}  // namespace

void BindCacheManager(py::module_& m) {
  BindEnums(m);
  BindGroupSpec(m);
  BindConfig(m);
  BindResults(m);
  BindManager(m);
}

}  // namespace hkv::python
