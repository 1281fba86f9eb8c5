// DecodeObjectGroup and SummarizeObject (hkv/object_group.h) on arbitrary
// bytes, and on a valid object with the input's bytes written over it:
// never crash, and accept only what re-encodes to the very same bytes (so
// a decoded group is exactly one that was encoded for this namespace and
// key: nothing altered is ever served).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "hkv/object_group.h"

namespace {

using hkv::fuzz::Require;

const hkv::NamespaceDigest kNs =
    hkv::DigestNamespace({.model = "fuzz", .geometry = "g", .salt_domain = ""});

hkv::BlockHash Key() {
  hkv::BlockHash key;
  key.bytes.fill(7);
  return key;
}

void Check(std::string_view bytes) {
  const hkv::DecodedObject decoded = hkv::DecodeObjectGroup(bytes, kNs, Key());
  const auto summary = hkv::SummarizeObject(bytes, kNs);
  if (decoded.defect == hkv::ObjectDefect::kNone) {
    Require(hkv::EncodeObjectGroup(decoded.group, kNs) == bytes,
            "an accepted object re-encodes to its bytes");
    Require(summary.has_value() && summary->total_bytes == bytes.size(),
            "an accepted object summarizes");
  } else {
    Require(decoded.group.parts.empty(), "a refused object yields no parts");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  Check(input);
  // The input as edits to a valid object: pairs of (offset, byte).
  std::string object = hkv::EncodeObjectGroup(
      {.key = Key(),
       .end_tokens = 512,
       .parts = {{.group = hkv::GroupId{0}, .bytes = "page"},
                 {.group = hkv::GroupId{3}, .bytes = "state bytes"}}},
      kNs);
  const std::string original = object;
  for (std::size_t i = 0; i + 1 < size; i += 2) {
    object[data[i] % object.size()] = static_cast<char>(data[i + 1]);
  }
  if (size % 2 == 1) object.resize(object.size() - data[size - 1] % 8);
  Check(object);
  if (object != original) {
    Require(hkv::DecodeObjectGroup(object, kNs, Key()).defect !=
                hkv::ObjectDefect::kNone,
            "an altered object is refused");
  }
  return 0;
}
