// The pieces of the CBOR encoder (cbor.cc) that code encoding whole units
// itself shares: the framing copy and, on x86-64, the AVX-512 eight-values
// step. Callers of the step check HasEightAtATime() first, in functions built
// for the same targets.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/cbor.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hkv::internal {

// Copies framing bytes whole (a fixed-size move, up to kMaxBytes written);
// returns the end of the `size` bytes that count.
inline std::uint8_t* PutFraming(
    const std::array<std::uint8_t, UnitFraming::kMaxBytes>& bytes,
    std::size_t size, std::uint8_t* p) {
  std::memcpy(p, bytes.data(), bytes.size());
  return p + size;
}

#if defined(__x86_64__)
// Whether this CPU runs EightAtATime (AVX-512 F, BW, DQ and VBMI2).
bool HasEightAtATime();

// A vector of `low`, `high` repeated (as _mm512_set_epi64 orders them,
// the last argument is the lowest qword).
__attribute__((target("avx512f"))) inline __m512i Pairs(std::uint64_t low,
                                                        std::uint64_t high) {
  const auto lo = static_cast<long long>(low);
  const auto hi = static_cast<long long>(high);
  return _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo);
}

// GCC 12's AVX-512 intrinsics start from undefined vectors it then reports.
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// The constants of the eight-values step.
struct EightAtATime {
  __m512i one, k23, k32, k24, k256, k64k;
  // Per 16-byte lane: byte 0 of each qword zero (the head goes there),
  // bytes 1-4 the low 32 bits reversed (big-endian), the rest zero.
  __m512i to_big_endian;
  // Each qword's byte 0 copied to all its bytes.
  __m512i spread_low_byte;
  __m512i byte_in_lane;

  __attribute__((target("avx512f"), always_inline)) EightAtATime()
      : one(_mm512_set1_epi64(1)),
        k23(_mm512_set1_epi64(23)),
        k32(_mm512_set1_epi64(32)),
        k24(_mm512_set1_epi64(24)),
        k256(_mm512_set1_epi64(256)),
        k64k(_mm512_set1_epi64(65536)),
        to_big_endian(Pairs(0x8080800001020380, 0x80808008090A0B80)),
        spread_low_byte(Pairs(0, 0x0808080808080808)),
        byte_in_lane(Pairs(0x0706050403020100, 0x0706050403020100)) {}

  // Eight values: each encoded into its own 8-byte lane (head byte, then the
  // argument big-endian), then the lanes' valid bytes packed with one byte
  // compress and stored whole (up to 64 bytes past the encoding).
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vbmi2"),
                 always_inline)) std::uint8_t*
  Step(const std::uint32_t* values, std::uint8_t* p) const {
    const __m512i v = _mm512_cvtepu32_epi64(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(values)));
    const __mmask8 ge24 = _mm512_cmpge_epu64_mask(v, k24);
    const __mmask8 ge256 = _mm512_cmpge_epu64_mask(v, k256);
    const __mmask8 ge64k = _mm512_cmpge_epu64_mask(v, k64k);
    __m512i width_class = _mm512_maskz_mov_epi64(ge24, one);
    width_class = _mm512_mask_add_epi64(width_class, ge256, width_class, one);
    width_class = _mm512_mask_add_epi64(width_class, ge64k, width_class, one);
    // Classes 0-3 take 0, 1, 2 and 4 argument bytes.
    const __m512i width =
        _mm512_mask_add_epi64(width_class, ge64k, width_class, one);
    const __m512i shifted = _mm512_sllv_epi64(
        v, _mm512_sub_epi64(k32, _mm512_slli_epi64(width, 3)));
    const __m512i argument = _mm512_shuffle_epi8(shifted, to_big_endian);
    const __m512i head =
        _mm512_mask_add_epi64(v, ge24, width_class, k23);  // else v itself
    const __m512i lanes = _mm512_or_si512(argument, head);
    const __m512i length =
        _mm512_shuffle_epi8(_mm512_add_epi64(width, one), spread_low_byte);
    const __mmask64 valid = _mm512_cmplt_epu8_mask(byte_in_lane, length);
    _mm512_storeu_si512(p, _mm512_maskz_compress_epi8(valid, lanes));
    return p + __builtin_popcountll(valid);
  }
};
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

}  // namespace hkv::internal
