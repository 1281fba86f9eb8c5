// Minimal canonical CBOR (RFC 8949 §4.2.1 preferred serialization) writer:
// exactly the items chained keys need. Appends to a caller-owned buffer.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace hkv::internal {

class CborWriter {
 public:
  explicit CborWriter(std::vector<std::uint8_t>& out) : out_(out) {}

  void ArrayHeader(std::uint64_t size) { Head(kArray, size); }
  void Bytes(std::span<const std::uint8_t> bytes);
  void Text(std::string_view text);
  void Unsigned(std::uint64_t value) { Head(kUnsigned, value); }
  void Signed(std::int64_t value);
  void Null() { out_.push_back(0xf6); }

 private:
  static constexpr std::uint8_t kUnsigned = 0;
  static constexpr std::uint8_t kNegative = 1;
  static constexpr std::uint8_t kByteString = 2;
  static constexpr std::uint8_t kTextString = 3;
  static constexpr std::uint8_t kArray = 4;

  // Major type and argument in the shortest form.
  void Head(std::uint8_t major, std::uint64_t value);

  std::vector<std::uint8_t>& out_;
};

}  // namespace hkv::internal
