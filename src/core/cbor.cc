#include "core/cbor.h"

#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hkv::internal {

// UnsignedArray and the digests byte-swap to big-endian.
static_assert(std::endian::native == std::endian::little);

void CborWriter::Head(std::uint8_t major, std::uint64_t value) {
  const auto type = static_cast<std::uint8_t>(major << 5);
  auto put_be = [this](std::uint64_t v, int num_bytes) {
    for (int shift = 8 * (num_bytes - 1); shift >= 0; shift -= 8) {
      *out_++ = static_cast<std::uint8_t>(v >> shift);
    }
  };
  if (value < 24) {
    *out_++ = static_cast<std::uint8_t>(type | value);
  } else if (value <= 0xff) {
    *out_++ = type | 24;
    put_be(value, 1);
  } else if (value <= 0xffff) {
    *out_++ = type | 25;
    put_be(value, 2);
  } else if (value <= 0xffffffff) {
    *out_++ = type | 26;
    put_be(value, 4);
  } else {
    *out_++ = type | 27;
    put_be(value, 8);
  }
}

namespace {

// One value at a time: argument width class 0 (in the head), 1, 2 or 3 (4
// bytes). Random token ids defeat branch prediction, so everything is
// arithmetic. Writes up to 4 bytes past the encoding.
std::uint8_t* EncodeEach(std::span<const std::uint32_t> values,
                         std::uint8_t* p) {
  for (std::uint32_t v : values) {
    const std::uint32_t width_class = std::uint32_t{v >= 24} +
                                      std::uint32_t{v >= 256} +
                                      std::uint32_t{v >= 65536};
    const std::uint32_t width =
        width_class + (width_class & (width_class >> 1));
    const std::uint32_t in_head =
        0u - std::uint32_t{width_class == 0};  // all ones or 0
    p[0] = static_cast<std::uint8_t>((v & in_head) |
                                     ((23 + width_class) & ~in_head));
    const auto shifted =
        static_cast<std::uint32_t>(std::uint64_t{v} << (32 - 8 * width));
    const std::uint32_t big_endian = __builtin_bswap32(shifted);
    std::memcpy(p + 1, &big_endian, sizeof big_endian);
    p += 1 + width;
  }
  return p;
}

// Copies framing bytes whole (a fixed-size move, up to kMaxBytes written);
// returns the end of the `size` bytes that count.
inline std::uint8_t* PutFraming(
    const std::array<std::uint8_t, UnitFraming::kMaxBytes>& bytes,
    std::size_t size, std::uint8_t* p) {
  std::memcpy(p, bytes.data(), bytes.size());
  return p + size;
}

void FramedUnitsEach(std::span<const std::uint32_t> values, std::size_t unit,
                     const UnitFraming& framing, std::uint8_t* out,
                     std::span<std::size_t> ends) {
  std::uint8_t* p = out;
  for (std::size_t k = 0; k < ends.size(); ++k) {
    p = PutFraming(framing.before, framing.before_size, p);
    p = EncodeEach(values.subspan(k * unit, unit), p);
    p = PutFraming(framing.after, framing.after_size, p);
    ends[k] = static_cast<std::size_t>(p - out);
  }
}

#if defined(__x86_64__)
#define HKV_CBOR_VECTOR 1

// A vector of `low`, `high` repeated (as _mm512_set_epi64 orders them,
// the last argument is the lowest qword).
__attribute__((target("avx512f"))) __m512i Pairs(std::uint64_t low,
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

  // All of `values`: eight per Step, the scalar loop for the tail.
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vbmi2"),
                 always_inline)) std::uint8_t*
  Values(std::span<const std::uint32_t> values, std::uint8_t* p) const {
    std::size_t i = 0;
    for (; i + 8 <= values.size(); i += 8) p = Step(values.data() + i, p);
    return EncodeEach(values.subspan(i), p);
  }
};

// Eight values per step; the scalar loop does the tail.
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vbmi2"))) std::uint8_t*
EncodeEightAtATime(std::span<const std::uint32_t> values, std::uint8_t* p) {
  return EightAtATime().Values(values, p);
}

__attribute__((target("avx512f,avx512bw,avx512dq,avx512vbmi2"))) void
FramedUnitsEightAtATime(std::span<const std::uint32_t> values, std::size_t unit,
                        const UnitFraming& framing, std::uint8_t* out,
                        std::span<std::size_t> ends) {
  const EightAtATime eight;
  std::uint8_t* p = out;
  const std::uint32_t* next = values.data();
  for (std::size_t& end : ends) {
    p = PutFraming(framing.before, framing.before_size, p);
    p = eight.Values(std::span(next, unit), p);
    p = PutFraming(framing.after, framing.after_size, p);
    end = static_cast<std::size_t>(p - out);
    next += unit;
  }
}
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif

bool HasEightAtATime() {
  static const bool has = __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512vbmi2");
  return has;
}
#endif

}  // namespace

std::uint8_t* EncodeUnsignedValues(std::span<const std::uint32_t> values,
                                   std::uint8_t* out) {
#ifdef HKV_CBOR_VECTOR
  if (HasEightAtATime()) return EncodeEightAtATime(values, out);
#endif
  return EncodeEach(values, out);
}

void EncodeFramedUnits(std::span<const std::uint32_t> values, std::size_t unit,
                       const UnitFraming& framing, std::uint8_t* out,
                       std::span<std::size_t> ends) {
#ifdef HKV_CBOR_VECTOR
  if (HasEightAtATime()) {
    FramedUnitsEightAtATime(values, unit, framing, out, ends);
    return;
  }
#endif
  FramedUnitsEach(values, unit, framing, out, ends);
}

void CborWriter::UnsignedArray(std::span<const std::uint32_t> values) {
  ArrayHeader(values.size());
  out_ = EncodeUnsignedValues(values, out_);
}

void CborWriter::UnsignedArrayScalar(std::span<const std::uint32_t> values) {
  ArrayHeader(values.size());
  out_ = EncodeEach(values, out_);
}

void CborWriter::Bytes(std::span<const std::uint8_t> bytes) {
  Head(kByteString, bytes.size());
  std::memcpy(out_, bytes.data(), bytes.size());
  out_ += bytes.size();
}

void CborWriter::Text(std::string_view text) {
  Head(kTextString, text.size());
  std::memcpy(out_, text.data(), text.size());
  out_ += text.size();
}

void CborWriter::Signed(std::int64_t value) {
  if (value >= 0) {
    Head(kUnsigned, static_cast<std::uint64_t>(value));
  } else {
    // CBOR encodes -1 - n as major type 1 with argument n.
    Head(kNegative, static_cast<std::uint64_t>(-(value + 1)));
  }
}

}  // namespace hkv::internal
