#include "core/digest.h"

#include <openssl/sha.h>
#include <xxhash.h>

#include <cstring>

namespace hkv::internal {

BlockHash Sha256(std::span<const std::uint8_t> data) {
  BlockHash out;
  // The one-shot function skips EVP's per-call provider lookup, which costs
  // more than hashing one ~100-byte unit.
  SHA256(data.data(), data.size(), out.bytes.data());
  return out;
}

BlockHash Xxh3_128(std::span<const std::uint8_t> data) {
  const XXH128_hash_t hash = XXH3_128bits(data.data(), data.size());
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, hash);
  BlockHash out;
  std::memcpy(out.bytes.data(), canonical.digest, sizeof canonical.digest);
  return out;
}

}  // namespace hkv::internal
