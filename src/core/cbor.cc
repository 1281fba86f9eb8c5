#include "core/cbor.h"

namespace hkv::internal {

void CborWriter::Head(std::uint8_t major, std::uint64_t value) {
  const auto type = static_cast<std::uint8_t>(major << 5);
  auto push_be = [this](std::uint64_t v, int num_bytes) {
    for (int shift = 8 * (num_bytes - 1); shift >= 0; shift -= 8) {
      out_.push_back(static_cast<std::uint8_t>(v >> shift));
    }
  };
  if (value < 24) {
    out_.push_back(static_cast<std::uint8_t>(type | value));
  } else if (value <= 0xff) {
    out_.push_back(type | 24);
    push_be(value, 1);
  } else if (value <= 0xffff) {
    out_.push_back(type | 25);
    push_be(value, 2);
  } else if (value <= 0xffffffff) {
    out_.push_back(type | 26);
    push_be(value, 4);
  } else {
    out_.push_back(type | 27);
    push_be(value, 8);
  }
}

void CborWriter::Bytes(std::span<const std::uint8_t> bytes) {
  Head(kByteString, bytes.size());
  out_.insert(out_.end(), bytes.begin(), bytes.end());
}

void CborWriter::Text(std::string_view text) {
  Head(kTextString, text.size());
  out_.insert(out_.end(), text.begin(), text.end());
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
