#include "core/cbor.h"

#include <bit>
#include <cstring>

#include "core/cbor_vector.h"

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

#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// All of `values`: eight per Step, the scalar loop for the tail.
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vbmi2"),
               always_inline)) inline std::uint8_t*
EightValues(const EightAtATime& eight, std::span<const std::uint32_t> values,
            std::uint8_t* p) {
  std::size_t i = 0;
  for (; i + 8 <= values.size(); i += 8) p = eight.Step(values.data() + i, p);
  return EncodeEach(values.subspan(i), p);
}

// Eight values per step; the scalar loop does the tail.
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vbmi2"))) std::uint8_t*
EncodeEightAtATime(std::span<const std::uint32_t> values, std::uint8_t* p) {
  return EightValues(EightAtATime(), values, p);
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
    p = EightValues(eight, std::span(next, unit), p);
    p = PutFraming(framing.after, framing.after_size, p);
    end = static_cast<std::size_t>(p - out);
    next += unit;
  }
}
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif

}  // namespace

#ifdef HKV_CBOR_VECTOR
bool HasEightAtATime() {
  static const bool has = __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512vbmi2");
  return has;
}
#endif

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
