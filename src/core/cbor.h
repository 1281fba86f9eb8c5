// Minimal canonical CBOR (RFC 8949 §4.2.1 preferred serialization) writer:
// exactly the items chained keys need. Writes into a caller-provided buffer
// that must hold MaxHeadBytes per head plus the payloads (see keys.cc).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace hkv::internal {

// Writes `values` as CBOR unsigned integers, one after another (no array
// head), at `out`; returns the end. Eight values per vector step where the
// CPU has AVX-512 VBMI2, else one at a time, with no branch per value; may
// write CborWriter::kArraySpareBytes past the end.
std::uint8_t* EncodeUnsignedValues(std::span<const std::uint32_t> values,
                                   std::uint8_t* out);

// Bytes framing each unit in EncodeFramedUnits: before[0, before_size)
// and after[0, after_size). Whole arrays are copied (fixed-size moves).
struct UnitFraming {
  static constexpr std::size_t kMaxBytes = 64;
  std::array<std::uint8_t, kMaxBytes> before{};
  std::size_t before_size = 0;
  std::array<std::uint8_t, kMaxBytes> after{};
  std::size_t after_size = 0;
};

// Writes, for each k < ends.size(), `framing.before`, the values
// values[k * unit, (k + 1) * unit) as EncodeUnsignedValues does, then
// `framing.after`, unit after unit from `out`; ends[k] is where unit k's
// bytes end (from out). The vector path keeps its constants across units.
// REQUIRES: values.size() >= ends.size() * unit; `out` holds the bytes plus
// max(CborWriter::kArraySpareBytes, UnitFraming::kMaxBytes) spare bytes.
void EncodeFramedUnits(std::span<const std::uint32_t> values, std::size_t unit,
                       const UnitFraming& framing, std::uint8_t* out,
                       std::span<std::size_t> ends);

class CborWriter {
 public:
  // Longest encoding of one head (major type and argument).
  static constexpr std::size_t kMaxHeadBytes = 9;

  explicit CborWriter(std::uint8_t* out) : begin_(out), out_(out) {}

  std::size_t size() const { return static_cast<std::size_t>(out_ - begin_); }

  void ArrayHeader(std::uint64_t size) { Head(kArray, size); }
  void Bytes(std::span<const std::uint8_t> bytes);
  void Text(std::string_view text);
  void Unsigned(std::uint64_t value) { Head(kUnsigned, value); }
  void Signed(std::int64_t value);
  void Null() { *out_++ = 0xf6; }
  // Bytes an UnsignedArray may write past its encoding (whole vector
  // stores), which the buffer must hold.
  static constexpr std::size_t kArraySpareBytes = 64;

  // An array of unsigned integers: the same bytes as ArrayHeader + Unsigned
  // per value, through EncodeUnsignedValues. Needs kArraySpareBytes spare
  // bytes past the encoding.
  void UnsignedArray(std::span<const std::uint32_t> values);
  // The same bytes, one value at a time whatever the CPU (the reference the
  // vector path is tested against).
  void UnsignedArrayScalar(std::span<const std::uint32_t> values);

 private:
  static constexpr std::uint8_t kUnsigned = 0;
  static constexpr std::uint8_t kNegative = 1;
  static constexpr std::uint8_t kByteString = 2;
  static constexpr std::uint8_t kTextString = 3;
  static constexpr std::uint8_t kArray = 4;

  // Major type and argument in the shortest form.
  void Head(std::uint8_t major, std::uint64_t value);

  std::uint8_t* begin_;
  std::uint8_t* out_;
};

}  // namespace hkv::internal
