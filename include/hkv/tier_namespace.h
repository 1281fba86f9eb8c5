// The namespace of an engine's tier objects, derived from its cache
// configuration, so that two engines whose pages differ in any way can never
// read each other's objects (hkv/object_group.h checks the namespace digest
// in every object's name and header).
//
// Thread-safety: pure functions.
//
// Example:
//   TierNamespace ns = NamespaceOf(config, {.model = "qwen3-next-80b",
//                                           .dtype = "bfloat16",
//                                           .page_bytes = {524288, 2097152},
//                                           .tp_rank = 1, .tp_size = 4});
//   TierChain chain({.ns = ns}, std::move(stores));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hkv/cache_config.h"
#include "hkv/object_group.h"

namespace hkv {

// What an object's bytes depend on that the cache configuration does not
// say.
struct EngineIdentity {
  std::string model;  // the model (and revision) served
  std::string dtype;  // the KV cache's element type, e.g. "bfloat16"
  // Per cache group, one block's bytes on this rank; empty: unknown.
  std::vector<std::uint64_t> page_bytes = {};
  std::uint32_t tp_rank = 0;
  std::uint32_t tp_size = 1;
  std::uint32_t dcp_rank = 0;
  std::string salt_domain = {};  // a tenant's domain; "" for none
  // The keys' scheme when the caller keys requests itself (an engine's own
  // block hashes, e.g. "sha256_cbor"); "": the config's key function.
  std::string key_scheme = {};
};

// `model` and `salt_domain` from the identity; `geometry` spells every
// group of `config` (kind, block, window, chunk, output window, recurrent
// mode, speculative and checkpoint blocks, DCP layout), the hash unit, the
// key function (or the identity's key_scheme), the DCP width and rank, the
// TP rank and width, the dtype and the page bytes. Equal for two (config,
// identity) pairs exactly when those fields are equal. REQUIRES: nothing (any
// config spells).
TierNamespace NamespaceOf(const CacheConfig& config,
                          const EngineIdentity& identity);

}  // namespace hkv
