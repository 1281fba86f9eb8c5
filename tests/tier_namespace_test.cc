// The namespace from the configuration: equal configurations and identities
// give one namespace; any field that changes a page's bytes gives another.
#include "hkv/tier_namespace.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace hkv {
namespace {

CacheConfig Hybrid() {
  CacheConfig config;
  config.groups = {{.kind = GroupKind::kFullAttention, .block_size = 16},
                   {.kind = GroupKind::kSlidingWindow,
                    .block_size = 16,
                    .sliding_window = 128},
                   {.kind = GroupKind::kRecurrent, .block_size = 64}};
  config.num_blocks = 100;
  return config;
}

EngineIdentity Engine() {
  return {.model = "m",
          .dtype = "bfloat16",
          .page_bytes = {4096, 4096, 65536},
          .tp_rank = 1,
          .tp_size = 2};
}

NamespaceDigest DigestOf(const CacheConfig& config,
                         const EngineIdentity& identity) {
  return DigestNamespace(NamespaceOf(config, identity));
}

TEST(TierNamespaceTest, EqualInputsGiveOneNamespace) {
  EXPECT_EQ(DigestOf(Hybrid(), Engine()), DigestOf(Hybrid(), Engine()));
  // The pool's size changes no page: same namespace.
  CacheConfig bigger = Hybrid();
  bigger.num_blocks = 1000;
  EXPECT_EQ(DigestOf(bigger, Engine()), DigestOf(Hybrid(), Engine()));
}

TEST(TierNamespaceTest, EveryFieldThatShapesAPageChangesIt) {
  const NamespaceDigest base = DigestOf(Hybrid(), Engine());
  const std::vector<std::function<void(CacheConfig&, EngineIdentity&)>>
      changes = {
          [](CacheConfig& c, EngineIdentity&) { c.groups[0].block_size = 32; },
          [](CacheConfig& c, EngineIdentity&) {
            c.groups[1].sliding_window = 256;
          },
          [](CacheConfig& c, EngineIdentity&) {
            c.groups[2].recurrent_mode = RecurrentMode::kAll;
          },
          [](CacheConfig& c, EngineIdentity&) {
            c.groups[2].speculative_blocks = 2;
          },
          [](CacheConfig& c, EngineIdentity&) {
            c.groups[0].speculation = Speculation::kEagle;
          },
          [](CacheConfig& c, EngineIdentity&) { c.groups.pop_back(); },
          [](CacheConfig& c, EngineIdentity&) { c.keys.hash_unit = 8; },
          [](CacheConfig& c, EngineIdentity&) {
            c.keys.function = KeyFunction::kXxh3_128Cbor;
          },
          [](CacheConfig& c, EngineIdentity&) { c.dcp = 2; },
          [](CacheConfig&, EngineIdentity& e) { e.model = "m2"; },
          [](CacheConfig&, EngineIdentity& e) { e.dtype = "float16"; },
          [](CacheConfig&, EngineIdentity& e) { e.page_bytes[2] = 1; },
          [](CacheConfig&, EngineIdentity& e) { e.tp_rank = 0; },
          [](CacheConfig&, EngineIdentity& e) { e.tp_size = 4; },
          [](CacheConfig&, EngineIdentity& e) { e.dcp_rank = 1; },
          [](CacheConfig&, EngineIdentity& e) { e.salt_domain = "t"; },
          [](CacheConfig&, EngineIdentity& e) { e.key_scheme = "sha256"; },
      };
  std::vector<NamespaceDigest> seen = {base};
  for (std::size_t i = 0; i < changes.size(); ++i) {
    CacheConfig config = Hybrid();
    EngineIdentity identity = Engine();
    changes[i](config, identity);
    const NamespaceDigest digest = DigestOf(config, identity);
    for (const NamespaceDigest& other : seen)
      EXPECT_NE(digest, other) << "change " << i;
    seen.push_back(digest);
  }
}

}  // namespace
}  // namespace hkv
