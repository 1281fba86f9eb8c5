#include "hkv/tier_namespace.h"

#include <string>

#include "hkv/group_kind.h"
#include "hkv/keys.h"

namespace hkv {
namespace {

void Field(std::string& out, std::string_view name, std::uint64_t value) {
  out += name;
  out += std::to_string(value);
}

}  // namespace

TierNamespace NamespaceOf(const CacheConfig& config,
                          const EngineIdentity& identity) {
  std::string geometry;
  for (const GroupSpec& g : config.groups) {
    geometry += GroupKindName(g.kind);
    Field(geometry, ":b", g.block_size);
    Field(geometry, ":w", g.sliding_window);
    Field(geometry, ":c", g.chunk_size);
    Field(geometry, ":o", g.output_window);
    Field(geometry, ":m", static_cast<std::uint64_t>(g.recurrent_mode));
    Field(geometry, ":s", g.speculative_blocks);
    Field(geometry, ":k", g.checkpoint_blocks);
    Field(geometry, ":l", static_cast<std::uint64_t>(g.dcp_layout));
    Field(geometry, ":e", static_cast<std::uint64_t>(g.speculation));
    geometry += '+';
  }
  Field(geometry, "|unit", config.keys.hash_unit);
  geometry += '|';
  geometry += identity.key_scheme.empty()
                  ? std::string(KeyFunctionName(config.keys.function))
                  : "caller:" + identity.key_scheme;
  Field(geometry, "|dcp", config.dcp);
  Field(geometry, "@", identity.dcp_rank);
  Field(geometry, "|tp", identity.tp_size);
  Field(geometry, "@", identity.tp_rank);
  geometry += "|" + identity.dtype + "|pages";
  for (std::uint64_t bytes : identity.page_bytes) Field(geometry, ":", bytes);
  // The dtype and key scheme are free text: their lengths, so that "a|b"
  // never reads as two fields.
  Field(geometry, "|lengths", identity.dtype.size());
  Field(geometry, ":", identity.key_scheme.size());
  return {.model = identity.model,
          .geometry = geometry,
          .salt_domain = identity.salt_domain};
}

}  // namespace hkv
