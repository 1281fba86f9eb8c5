#include "core/cbor.h"

#include <bit>
#include <cstring>

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

void CborWriter::UnsignedArray(std::span<const std::uint32_t> values) {
  ArrayHeader(values.size());
  std::uint8_t* p = out_;
  for (std::uint32_t v : values) {
    // Argument width class 0 (in the head), 1, 2 or 3 (4 bytes). Random
    // token ids defeat branch prediction, so everything below is arithmetic.
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
  out_ = p;
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
