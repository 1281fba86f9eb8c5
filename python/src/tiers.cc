// Bindings of the offload tiers: hkv/object_store.h (host, file and Redis
// stores), hkv/object_group.h (the object group) and hkv/tier_chain.h (the
// chain and its directory). A store made in Python is handed to a TierChain
// whole; after that the Python object is spent and refuses every call.
#include <memory>
#include <utility>

#include "bindings.h"
#include "hkv/object_group.h"
#include "hkv/object_store.h"
#include "hkv/tier_chain.h"
#include "hkv/tier_connector.h"
#include "hkv/tier_namespace.h"

namespace hkv::python {
namespace {

// A store owned by Python until a TierChain takes it.
class PyStore {
 public:
  explicit PyStore(std::unique_ptr<ObjectStore> store)
      : store_(std::move(store)) {}

  ObjectStore& get() const {
    if (!store_) {
      throw UsageError(
          "this store was handed to a TierChain; use the chain's counters()");
    }
    return *store_;
  }
  std::unique_ptr<ObjectStore> Take() {
    get();
    return std::move(store_);
  }

 private:
  std::unique_ptr<ObjectStore> store_;
};

const char* StatusName(StoreStatus status) {
  switch (status) {
    case StoreStatus::kOk:
      return "ok";
    case StoreStatus::kAbsent:
      return "absent";
    case StoreStatus::kError:
      return "error";
  }
  return "error";
}

py::dict StoreCountersDict(const StoreCounters& c) {
  py::dict d;
  d["objects_put"] = c.objects_put;
  d["bytes_put"] = c.bytes_put;
  d["objects_read"] = c.objects_read;
  d["bytes_read"] = c.bytes_read;
  d["errors"] = c.errors;
  d["evicted_objects"] = c.evicted_objects;
  d["evicted_bytes"] = c.evicted_bytes;
  d["reconnects"] = c.reconnects;
  return d;
}

py::dict TierCountersDict(const TierCounters& c) {
  py::dict d;
  d["groups_stored"] = c.groups_stored;
  d["groups_loaded"] = c.groups_loaded;
  d["bytes_loaded"] = c.bytes_loaded;
  d["absent"] = c.absent;
  d["store_errors"] = c.store_errors;
  py::dict defects;
  for (std::size_t i = 1; i < kNumObjectDefects; ++i) {
    const auto defect = static_cast<ObjectDefect>(i);
    defects[py::str(std::string(DefectName(defect)))] = c.defects[i];
  }
  d["defects"] = defects;
  d["store"] = StoreCountersDict(c.store);
  return d;
}

ObjectGroup MakeGroup(const BlockHash& key, std::uint32_t end_tokens,
                      const std::vector<std::pair<GroupId, py::bytes>>& parts) {
  ObjectGroup group{.key = key, .end_tokens = end_tokens};
  for (const auto& [g, bytes] : parts)
    group.parts.push_back({.group = g, .bytes = std::string(bytes)});
  return group;
}

void BindStores(py::module_& m) {
  py::class_<PyStore>(
      m, "ObjectStore",
      "Named byte strings in host memory, a directory or a Redis server "
      "(hkv/object_store.h). Made by host_store(), open_file_store() or "
      "redis_store(); handed whole to a TierChain.")
      .def_property_readonly(
          "kind", [](const PyStore& s) { return std::string(s.get().kind()); })
      .def(
          "put",
          [](PyStore& s, const std::string& name, const py::bytes& object) {
            const std::string bytes(object);
            py::gil_scoped_release release;
            return StatusName(s.get().Put(name, bytes));
          },
          py::arg("name"), py::arg("object"),
          "Publishes the object whole: 'ok' or 'error' (nothing changed)")
      .def(
          "get",
          [](PyStore& s, const std::string& name) -> py::object {
            ObjectRead read;
            {
              py::gil_scoped_release release;
              read = s.get().Get(name);
            }
            if (read.status == StoreStatus::kOk) return py::bytes(read.bytes);
            return py::str(StatusName(read.status));
          },
          py::arg("name"), "The object's bytes, or 'absent' or 'error'")
      .def(
          "erase",
          [](PyStore& s, const std::string& name) {
            py::gil_scoped_release release;
            return StatusName(s.get().Erase(name));
          },
          py::arg("name"))
      .def(
          "list",
          [](PyStore& s, const std::string& prefix, std::size_t limit) {
            py::gil_scoped_release release;
            return ValueOrThrow(s.get().List(prefix, limit));
          },
          py::arg("prefix") = "", py::arg("limit") = 1'000'000)
      .def("counters",
           [](const PyStore& s) {
             return StoreCountersDict(s.get().counters());
           })
      .def_property_readonly(
          "bytes_held", [](const PyStore& s) { return s.get().bytes_held(); });

  m.def(
      "host_store",
      [](std::uint64_t capacity_bytes) {
        return PyStore(MakeHostStore(capacity_bytes));
      },
      py::arg("capacity_bytes"),
      "Host memory bounded by capacity_bytes, least recently used evicted");
  m.def(
      "open_file_store",
      [](const std::string& directory, std::uint64_t capacity_bytes,
         bool fsync) {
        return PyStore(ValueOrThrow(OpenFileStore(
            {.directory = directory,
             .fsync = fsync ? FsyncPolicy::kObject : FsyncPolicy::kNone,
             .capacity_bytes = capacity_bytes})));
      },
      py::arg("directory"), py::arg("capacity_bytes") = std::uint64_t{1} << 40,
      py::arg("fsync") = false,
      "One file per object in directory (created if missing), oldest "
      "written removed past capacity_bytes; fsync=True makes an object "
      "survive a crash once put() answered 'ok'");
  m.def(
      "redis_store",
      [](const std::string& host, std::uint16_t port, double timeout_s,
         double reconnect_interval_s) {
        if (!(timeout_s > 0.0 && timeout_s <= 3600.0) ||
            !(reconnect_interval_s >= 0.0 && reconnect_interval_s <= 3600.0)) {
          throw UsageError(
              "redis_store(): timeout_s must be in (0, 3600] and "
              "reconnect_interval_s in [0, 3600]");
        }
        return PyStore(ValueOrThrow(MakeRedisStore(
            {.host = host,
             .port = port,
             .timeout = std::chrono::milliseconds(
                 static_cast<std::int64_t>(timeout_s * 1000)),
             .reconnect_interval = std::chrono::milliseconds(
                 static_cast<std::int64_t>(reconnect_interval_s * 1000))})));
      },
      py::arg("host") = "127.0.0.1", py::arg("port") = 6379,
      py::arg("timeout_s") = 0.2, py::arg("reconnect_interval_s") = 0.5,
      "A Redis server (connects lazily; a lost server answers 'error' and is "
      "reconnected to on a later call)");
}

void BindNamespace(py::module_& m) {
  m.def(
      "namespace_of",
      [](const CacheConfig& config, const std::string& model,
         const std::string& dtype, std::vector<std::uint64_t> page_bytes,
         std::uint32_t tp_rank, std::uint32_t tp_size, std::uint32_t dcp_rank,
         const std::string& salt_domain, const std::string& key_scheme) {
        const TierNamespace ns =
            NamespaceOf(config, {.model = model,
                                 .dtype = dtype,
                                 .page_bytes = std::move(page_bytes),
                                 .tp_rank = tp_rank,
                                 .tp_size = tp_size,
                                 .dcp_rank = dcp_rank,
                                 .salt_domain = salt_domain,
                                 .key_scheme = key_scheme});
        py::dict d;
        d["model"] = ns.model;
        d["geometry"] = ns.geometry;
        d["salt_domain"] = ns.salt_domain;
        return d;
      },
      py::arg("config"), py::arg("model"), py::arg("dtype") = "",
      py::arg("page_bytes") = std::vector<std::uint64_t>{},
      py::arg("tp_rank") = 0, py::arg("tp_size") = 1, py::arg("dcp_rank") = 0,
      py::arg("salt_domain") = "", py::arg("key_scheme") = "",
      "The namespace of a configuration's tier objects "
      "(hkv/tier_namespace.h), as TierChain's keywords");
}

void BindChain(py::module_& m) {
  py::class_<ObjectGroup>(
      m, "ObjectGroup",
      "Everything the cache holds for one prefix boundary, stored and read "
      "all or nothing: key (32 bytes), end_tokens, parts [(group, bytes)]")
      .def(py::init(&MakeGroup), py::arg("key"), py::arg("end_tokens"),
           py::arg("parts"))
      .def_readonly("key", &ObjectGroup::key)
      .def_readonly("end_tokens", &ObjectGroup::end_tokens)
      .def_property_readonly("parts", [](const ObjectGroup& g) {
        py::list parts;
        for (const ObjectPart& p : g.parts)
          parts.append(py::make_tuple(p.group, py::bytes(p.bytes)));
        return parts;
      });

  py::class_<TierChain>(
      m, "TierChain",
      "Offload tiers in chain order for one namespace (model, geometry, "
      "salt domain), with the directory of groups they hold "
      "(hkv/tier_chain.h). Takes the stores: they are spent afterwards.")
      .def(py::init([](const std::string& model, const std::string& geometry,
                       const std::string& salt_domain, py::list stores,
                       std::size_t max_directory_entries) {
             std::vector<PyStore*> wrappers;
             for (py::handle s : stores) {
               if (!py::isinstance<PyStore>(s)) {
                 throw UsageError(
                     "TierChain(): stores must be ObjectStores, got " +
                     ShortRepr(s));
               }
               wrappers.push_back(&s.cast<PyStore&>());
             }
             for (PyStore* w : wrappers) w->get();  // refuse before taking
             std::vector<std::unique_ptr<ObjectStore>> owned;
             for (PyStore* w : wrappers) owned.push_back(w->Take());
             return TierChain({.ns = {.model = model,
                                      .geometry = geometry,
                                      .salt_domain = salt_domain},
                               .max_directory_entries = max_directory_entries},
                              std::move(owned));
           }),
           py::arg("model"), py::arg("geometry"), py::arg("salt_domain") = "",
           py::arg("stores"), py::arg("max_directory_entries") = 1 << 20)
      .def_property_readonly("num_tiers", &TierChain::num_tiers)
      .def_property_readonly(
          "namespace_digest",
          [](const TierChain& c) { return AsBytes(c.namespace_digest()); })
      .def(
          "store",
          [](TierChain& c, const std::vector<ObjectGroup>& groups) {
            py::gil_scoped_release release;
            return c.Store(groups);
          },
          py::arg("groups"),
          "Writes through to every tier; returns how many some tier took")
      .def(
          "load",
          [](TierChain& c, const std::vector<BlockHash>& keys) {
            py::gil_scoped_release release;
            return c.Load(keys);
          },
          py::arg("keys"),
          "Each key's checked group from the first tier holding one, or None")
      .def("drop", &TierChain::Drop, py::arg("key"))
      .def(
          "refresh",
          [](TierChain& c) {
            py::gil_scoped_release release;
            return ValueOrThrow(c.Refresh());
          },
          "Relearns the directory from the tiers' lists; returns groups "
          "learned")
      .def(
          "find",
          [](const TierChain& c, const BlockHash& key) -> py::object {
            const KnownGroup* known = c.Find(key);
            if (known == nullptr) return py::none();
            return py::make_tuple(known->end_tokens, known->groups,
                                  known->bytes);
          },
          py::arg("key"), "(end_tokens, groups, bytes), or None when unknown")
      .def("known_keys", &TierChain::KnownKeys,
           "Every key the directory knows (after refresh(): what the tiers "
           "hold)")
      .def("counters", [](const TierChain& c) {
        py::list out;
        for (const TierCounters& t : c.counters())
          out.append(TierCountersDict(t));
        return out;
      });
}

py::dict ConnectorCountersDict(const ConnectorCounters& c) {
  py::dict d;
  d["lookups"] = c.lookups;
  d["extended_lookups"] = c.extended_lookups;
  d["external_tokens"] = c.external_tokens;
  d["loads_done"] = c.loads_done;
  d["loads_failed"] = c.loads_failed;
  d["wrong_size_parts"] = c.wrong_size_parts;
  d["groups_stored"] = c.groups_stored;
  return d;
}

void BindConnector(py::module_& m) {
  py::class_<TierHit>(m, "TierHit")
      .def_readonly("hit", &TierHit::hit)
      .def_readonly("num_external_tokens", &TierHit::num_external_tokens)
      .def_readonly("gpu_tokens", &TierHit::gpu_tokens);
  py::class_<TierConnector>(
      m, "TierConnector",
      "A CacheManager's lookup extended through a TierChain, the load of "
      "what it reached and the store of a request's cached entries "
      "(hkv/tier_connector.h). Holds the chain; the cache is each call's.")
      .def(py::init([](const CacheConfig& config, TierChain& chain,
                       std::vector<std::uint64_t> part_bytes) {
             return ValueOrThrow(TierConnector::Create(
                 config, chain, {.part_bytes = std::move(part_bytes)}));
           }),
           py::arg("config"), py::arg("chain"),
           py::arg("part_bytes") = std::vector<std::uint64_t>{},
           py::keep_alive<1, 3>())
      .def("lookup", &TierConnector::Lookup, py::arg("cache"),
           py::arg("request"),
           "The GPU hit and the tiers' extension (no I/O): allocate with "
           "hit=.hit and num_external_computed_tokens=.num_external_tokens")
      .def(
          "load",
          [](TierConnector& c, const CacheManager& cache,
             const Request& request, const TierHit& hit,
             const NewBlocks& placed) {
            TierLoad load;
            {
              py::gil_scoped_release release;
              load = c.Load(cache, request, hit, placed);
            }
            py::list parts;
            for (const PartLoad& p : load.parts) {
              parts.append(py::make_tuple(p.group, p.block, p.end_tokens,
                                          py::bytes(p.bytes)));
            }
            return py::make_tuple(
                load.state == LoadState::kDone ? "done" : "failed", parts,
                load.bytes_read);
          },
          py::arg("cache"), py::arg("request"), py::arg("hit"),
          py::arg("placed"),
          "('done' | 'failed', [(group, block, end_tokens, bytes)], "
          "bytes read): write each part into its block, or on 'failed' "
          "free the request and look it up again")
      .def(
          "store",
          [](TierConnector& c, const CacheManager& cache,
             const Request& request, const py::function& read) {
            return c.Store(cache, request, [&](GroupId g, BlockId b) {
              const py::object bytes = read(g, b);
              if (!py::isinstance<py::bytes>(bytes)) {
                throw UsageError(
                    "store(): read(group, block) must return "
                    "bytes, got " +
                    ShortRepr(bytes));
              }
              return bytes.cast<std::string>();
            });
          },
          py::arg("cache"), py::arg("request"), py::arg("read"),
          "Stores the request's cached entries the chain lacks; "
          "read(group, block) returns a block's bytes. Returns groups stored")
      .def("counters", [](const TierConnector& c) {
        return ConnectorCountersDict(c.counters());
      });
}

}  // namespace

void BindTiers(py::module_& m) {
  BindStores(m);
  BindChain(m);
  BindNamespace(m);
  BindConnector(m);
}

}  // namespace hkv::python
