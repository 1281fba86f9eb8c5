#include <algorithm>
#include <bit>
#include <cstring>

#include "core/cbor_vector.h"
#include "core/plain_keys.h"

// Inlined, as digest.cc builds it: the chain waits on each digest's result.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace hkv::internal {

#if defined(__x86_64__)
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
namespace {

// Units in the ring of encoded units, and how far the encoding runs ahead
// of the digest.
constexpr std::size_t kRing = 8;
constexpr std::size_t kAhead = 4;

// Encodes one unit's tokens, framed, at `slot`; returns its size.
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vbmi2"),
               always_inline)) inline std::size_t
EncodeUnitInto(const EightAtATime& eight, const UnitFraming& framing,
               const TokenId* unit_tokens, std::size_t unit,
               std::uint8_t* slot) {
  std::uint8_t* p = PutFraming(framing.before, framing.before_size, slot);
  for (std::size_t i = 0; i < unit; i += 8) p = eight.Step(unit_tokens + i, p);
  p = PutFraming(framing.after, framing.after_size, p);
  return static_cast<std::size_t>(p - slot);
}

__attribute__((
    target("avx512f,avx512bw,avx512dq,avx512vbmi2,avx512vbmi,avx512vl"))) void
ChainAhead(const UnitFraming& framing, std::size_t parent_at, std::size_t unit,
           const BlockHash& parent, std::span<const TokenId> tokens,
           std::vector<BlockHash>& keys) {
  const std::size_t count = tokens.size() / unit;
  const EightAtATime eight;
  // A slot holds a unit's bytes and what the step and framing copies may
  // write past them.
  const std::size_t stride =
      (framing.before_size + 5 * unit + framing.after_size +
       std::max(CborWriter::kArraySpareBytes, UnitFraming::kMaxBytes) + 63) &
      ~std::size_t{63};
  thread_local std::vector<std::uint8_t> ring;
  if (ring.size() < kRing * stride) ring.resize(kRing * stride);
  std::uint8_t* const slots = ring.data();
  std::array<std::size_t, kRing> sizes{};
  for (std::size_t k = 0; k < std::min(kAhead, count); ++k) {
    sizes[k] = EncodeUnitInto(eight, framing, tokens.data() + k * unit, unit,
                              slots + k * stride);
  }

  // The parent's two words, as the canonical digest stores them.
  std::uint64_t high = 0;
  std::uint64_t low = 0;
  std::memcpy(&high, parent.bytes.data(), 8);
  std::memcpy(&low, parent.bytes.data() + 8, 8);
  // Byte i of a unit's head: from the parent (index 32 + j for its byte j)
  // in [parent_at, parent_at + 16), else the head's own byte.
  alignas(32) std::array<std::uint8_t, 32> parent_bytes{};
  for (std::size_t i = 0; i < 32; ++i) {
    parent_bytes[i] = static_cast<std::uint8_t>(
        i >= parent_at && i < parent_at + 16 ? 32 + i - parent_at : i);
  }
  const __m256i parent_in =
      _mm256_load_si256(reinterpret_cast<const __m256i*>(parent_bytes.data()));
  // Keys are added a chunk at a time: the chunk zeroed while it is in the
  // first-level cache (a key's last 16 bytes stay zero), then written
  // through a pointer, so the chain's loop calls nothing.
  constexpr std::size_t kChunk = 64;
  for (std::size_t first = 0; first < count; first += kChunk) {
    const std::size_t end = std::min(count, first + kChunk);
    keys.resize(keys.size() + (end - first));
    BlockHash* key = keys.data() + keys.size() - (end - first);
    for (std::size_t k = first; k < end; ++k, ++key) {
      std::uint8_t* const slot = slots + (k % kRing) * stride;
      // The unit's first 32 bytes with the parent in, stored whole: the
      // digest's loads from them are then forwarded from one store (a load
      // across two stores waits for them to reach the cache).
      const __m256i head = _mm256_loadu_si256(reinterpret_cast<__m256i*>(slot));
      const __m256i with_parent = _mm256_permutex2var_epi8(
          head, parent_in,
          _mm256_castsi128_si256(_mm_set_epi64x(static_cast<long long>(low),
                                                static_cast<long long>(high))));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(slot), with_parent);
      const std::size_t size = sizes[k % kRing];
      // Every unit is a short input (see AppendXxh3UnitKeysAhead): the
      // digest's other paths are left out.
      if (size < 17 || size > 240) __builtin_unreachable();
      const XXH128_hash_t hash = XXH3_128bits(slot, size);
      high = __builtin_bswap64(hash.high64);
      low = __builtin_bswap64(hash.low64);
      std::memcpy(key->bytes.data(), &high, 8);
      std::memcpy(key->bytes.data() + 8, &low, 8);
      const std::size_t next = k + kAhead;
      if (next < count) {
        sizes[next % kRing] =
            EncodeUnitInto(eight, framing, tokens.data() + next * unit, unit,
                           slots + (next % kRing) * stride);
      }
    }
  }
}

}  // namespace
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

bool AppendXxh3UnitKeysAhead(const UnitFraming& framing, std::size_t parent_at,
                             std::size_t unit,
                             [[maybe_unused]] const BlockHash& parent,
                             [[maybe_unused]] std::span<const TokenId> tokens,
                             [[maybe_unused]] std::vector<BlockHash>& keys) {
  // Inputs past 240 bytes take XXH3's long path, which has parallel work of
  // its own: there the batched encoding (keys.cc) is faster.
  const std::size_t most_bytes =
      framing.before_size + 5 * unit + framing.after_size;
  if (unit == 0 || unit % 8 != 0 || most_bytes > 240 || parent_at + 16 > 32) {
    return false;
  }
#if defined(__x86_64__)
  static_assert(std::endian::native == std::endian::little);
  static const bool has_permute = __builtin_cpu_supports("avx512vbmi") &&
                                  __builtin_cpu_supports("avx512vl");
  if (!HasEightAtATime() || !has_permute) return false;
  ChainAhead(framing, parent_at, unit, parent, tokens, keys);
  return true;
#else
  return false;
#endif
}

}  // namespace hkv::internal
