#include "core/digest.h"

#include <openssl/evp.h>

#include <bit>
#include <cstring>
#include <memory>

#include "check.h"

// The header-only build inlines XXH3 for ~100-byte inputs, where call
// overhead is a large part of the cost.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace hkv::internal {
namespace {

// OpenSSL 3 resolves an algorithm by name on every one-shot call; fetching it
// once and reusing one context per thread costs a fraction of that.
class Sha256Context {
 public:
  Sha256Context()
      : md_(EVP_MD_fetch(nullptr, "SHA256", nullptr)), ctx_(EVP_MD_CTX_new()) {
    HKV_REQUIRE(md_ != nullptr && ctx_ != nullptr,
                "OpenSSL provides no SHA-256");
  }
  ~Sha256Context() {
    EVP_MD_CTX_free(ctx_);
    EVP_MD_free(md_);
  }
  Sha256Context(const Sha256Context&) = delete;
  Sha256Context& operator=(const Sha256Context&) = delete;

  void Digest(std::span<const std::uint8_t> data, std::uint8_t* out) {
    unsigned int size = 0;
    const bool ok = EVP_DigestInit_ex2(ctx_, md_, nullptr) == 1 &&
                    EVP_DigestUpdate(ctx_, data.data(), data.size()) == 1 &&
                    EVP_DigestFinal_ex(ctx_, out, &size) == 1;
    HKV_REQUIRE(ok && size == 32, "SHA-256 digest failed");
  }

 private:
  EVP_MD* md_;
  EVP_MD_CTX* ctx_;
};

}  // namespace

BlockHash Sha256(std::span<const std::uint8_t> data) {
  thread_local Sha256Context context;
  BlockHash out;
  context.Digest(data, out.bytes.data());
  return out;
}

BlockHash Xxh3_128(std::span<const std::uint8_t> data) {
  const XXH128_hash_t hash = XXH3_128bits(data.data(), data.size());
  // Canonical form: high then low 64 bits, each big-endian.
  static_assert(std::endian::native == std::endian::little);
  const std::uint64_t words[2] = {__builtin_bswap64(hash.high64),
                                  __builtin_bswap64(hash.low64)};
  BlockHash out;
  std::memcpy(out.bytes.data(), words, sizeof words);
  return out;
}

}  // namespace hkv::internal
