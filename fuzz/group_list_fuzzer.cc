// Fuzzes the group-list parser (ParseGroupList). Groups it accepts feed a
// cache configuration: its validation must answer, and a cache it accepts
// must serve a lookup and an allocation.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "hkv/cache_manager.h"
#include "hkv/group_list.h"

namespace {

// The gcd of the cacheable groups' blocks, as the CLI's default hash unit.
std::uint32_t HashUnit(const std::vector<hkv::GroupSpec>& groups) {
  std::uint32_t unit = 0;
  for (const hkv::GroupSpec& g : groups) {
    if (hkv::IsPrefixCacheable(g)) unit = std::gcd(unit, g.block_size);
  }
  return std::max(unit, std::uint32_t{1});
}

void Exercise(hkv::CacheManager& cache) {
  const std::vector<hkv::TokenId> prompt(64, hkv::TokenId{7});
  const hkv::Request r({.id = hkv::RequestId{1}}, prompt, cache.key_scheme());
  hkv::CacheHit hit = cache.Lookup(r);
  if (cache.Allocate(r, {.num_new_tokens = r.num_tokens() - hit.num_tokens,
                         .hit = &hit})) {
    cache.Commit(r, r.num_tokens());
    cache.Free(r.id());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const hkv::Result<std::vector<hkv::GroupSpec>> groups = hkv::ParseGroupList(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!groups) return 0;
  hkv::fuzz::Require(!groups->empty(), "a parsed group list has a group");
  for (const hkv::GroupSpec& g : *groups) (void)hkv::GroupKindName(g.kind);
  // Blocks the CLI would size by the group count; small, so that even large
  // block sizes stay cheap (tables grow with tokens, not block size).
  hkv::Result<hkv::CacheManager> cache = hkv::CacheManager::Create(
      {.groups = *groups,
       .num_blocks = 64,
       .keys = {.function = hkv::KeyFunction::kXxh3_128Cbor,
                .hash_unit = HashUnit(*groups),
                .seed = "0"}});
  if (cache) Exercise(*cache);
  return 0;
}
