// The README's example as a whole program: a prompt is looked up, given
// blocks, committed and freed; the same prompt again then hits its cached
// prefix (all of it but the last token, which must be computed).
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "hkv/cache_manager.h"
#include "hkv/version.h"

int main() {
  hkv::Result<hkv::CacheManager> cache = hkv::CacheManager::Create(
      {.groups = {{.block_size = 16}}, .num_blocks = 4096});
  if (!cache) {
    std::fprintf(stderr, "%s\n", cache.error().message.c_str());
    return 1;
  }
  const std::vector<hkv::TokenId> prompt_tokens(100, 7);
  for (std::uint64_t id : {1u, 2u}) {
    hkv::Request r({.id = hkv::RequestId{id}}, prompt_tokens,
                   cache->key_scheme());
    hkv::CacheHit hit = cache->Lookup(r);  // cached prefix
    if (auto blocks = cache->Allocate(
            r,
            {.num_new_tokens = r.num_tokens() - hit.num_tokens, .hit = &hit})) {
      cache->TakeCopies();  // then the model runs on the block table
      cache->Commit(r, r.num_tokens());  // now reusable
      cache->FinishStep();
    }
    std::printf("hkv %s: request %u found %u cached tokens\n",
                std::string(hkv::kVersion).c_str(), static_cast<unsigned>(id),
                hit.num_tokens);
    cache->Free(r.id());
  }
  return 0;
}
