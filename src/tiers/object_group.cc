#include "hkv/object_group.h"

#include <xxhash.h>

#include <cstring>

#include "check.h"
#include "core/digest.h"

namespace hkv {
namespace {

// Layout, little-endian: magic (8) | version u32 | num_parts u32 |
// namespace (16) | key (32) | end_tokens u32 | reserved u32 |
// parts: { group u32, reserved u32, size u64, xxh3-64 u64 } each |
// header xxh3-64 u64 | the parts' bytes in order.
constexpr char kMagic[8] = {'H', 'K', 'V', 'O', 'B', 'J', 'G', '\0'};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kFixedBytes = 8 + 4 + 4 + 16 + 32 + 4 + 4;
constexpr std::size_t kPartBytes = 4 + 4 + 8 + 8;
constexpr std::size_t kChecksumBytes = 8;
// Far above any real model's group count; bounds what a header may claim.
constexpr std::uint32_t kMaxParts = 4096;

template <typename T>
void Append(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

template <typename T>
T Read(std::string_view bytes, std::size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

std::uint64_t Checksum(std::string_view bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

struct Header {
  ObjectSummary summary;
  std::vector<std::uint64_t> sizes;
  std::vector<std::uint64_t> checksums;
  std::size_t payload_offset = 0;
};

// The header's fields, or the defect that makes it unreadable.
ObjectDefect ParseHeader(std::string_view bytes, const NamespaceDigest& ns,
                         Header& header) {
  if (bytes.size() < kFixedBytes + kChecksumBytes)
    return ObjectDefect::kWrongSize;
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0 ||
      Read<std::uint32_t>(bytes, 8) != kVersion)
    return ObjectDefect::kBadHeader;
  const std::uint32_t num_parts = Read<std::uint32_t>(bytes, 12);
  if (num_parts == 0 || num_parts > kMaxParts) return ObjectDefect::kBadHeader;
  const std::size_t header_bytes = kFixedBytes + num_parts * kPartBytes;
  if (bytes.size() < header_bytes + kChecksumBytes)
    return ObjectDefect::kWrongSize;
  if (Checksum(bytes.substr(0, header_bytes)) !=
      Read<std::uint64_t>(bytes, header_bytes))
    return ObjectDefect::kBadHeader;
  if (std::memcmp(bytes.data() + 16, ns.data(), ns.size()) != 0)
    return ObjectDefect::kWrongNamespace;
  ObjectSummary& summary = header.summary;
  std::memcpy(summary.key.bytes.data(), bytes.data() + 32, 32);
  summary.end_tokens = Read<std::uint32_t>(bytes, 64);
  std::uint64_t total = header_bytes + kChecksumBytes;
  for (std::uint32_t i = 0; i < num_parts; ++i) {
    const std::size_t at = kFixedBytes + i * kPartBytes;
    const std::uint32_t group = Read<std::uint32_t>(bytes, at);
    const std::uint64_t size = Read<std::uint64_t>(bytes, at + 8);
    if ((i > 0 && group <= ToIndex(summary.groups.back())) ||
        size > bytes.size())
      return size > bytes.size() ? ObjectDefect::kWrongSize
                                 : ObjectDefect::kBadHeader;
    summary.groups.push_back(GroupId{group});
    header.sizes.push_back(size);
    header.checksums.push_back(Read<std::uint64_t>(bytes, at + 16));
    total += size;
  }
  if (summary.end_tokens == 0) return ObjectDefect::kBadHeader;
  if (total != bytes.size()) return ObjectDefect::kWrongSize;
  summary.total_bytes = total;
  header.payload_offset = header_bytes + kChecksumBytes;
  return ObjectDefect::kNone;
}

}  // namespace

NamespaceDigest DigestNamespace(const TierNamespace& ns) {
  std::string text;
  for (const std::string* field : {&ns.model, &ns.geometry, &ns.salt_domain}) {
    Append(text, static_cast<std::uint64_t>(field->size()));
    text += *field;
  }
  const BlockHash digest = internal::Sha256(std::span<const std::uint8_t>(
      reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
  NamespaceDigest out;
  std::memcpy(out.data(), digest.bytes.data(), out.size());
  return out;
}

std::string ObjectNamePrefix(const NamespaceDigest& ns) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string name = "hkv-";
  for (const std::uint8_t byte : ns) {
    name += kHex[byte >> 4];
    name += kHex[byte & 15];
  }
  return name + "-";
}

std::string ObjectName(const NamespaceDigest& ns, const BlockHash& key) {
  return ObjectNamePrefix(ns) + key.Hex(32);
}

std::optional<BlockHash> KeyOfObjectName(const NamespaceDigest& ns,
                                         std::string_view name) {
  const std::string prefix = ObjectNamePrefix(ns);
  if (name.size() != prefix.size() + 64 || !name.starts_with(prefix))
    return std::nullopt;
  const auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  BlockHash key;
  for (std::size_t i = 0; i < 32; ++i) {
    const int high = nibble(name[prefix.size() + 2 * i]);
    const int low = nibble(name[prefix.size() + 2 * i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    key.bytes[i] = static_cast<std::uint8_t>(high * 16 + low);
  }
  return key;
}

std::string_view DefectName(ObjectDefect defect) {
  switch (defect) {
    case ObjectDefect::kNone:
      return "none";
    case ObjectDefect::kWrongSize:
      return "wrong size";
    case ObjectDefect::kBadHeader:
      return "bad header";
    case ObjectDefect::kWrongNamespace:
      return "wrong namespace";
    case ObjectDefect::kWrongKey:
      return "wrong key";
    case ObjectDefect::kBadChecksum:
      return "bad checksum";
  }
  return "unknown";
}

std::string EncodeObjectGroup(const ObjectGroup& group,
                              const NamespaceDigest& ns) {
  HKV_REQUIRE(!group.parts.empty() && group.parts.size() <= kMaxParts,
              "an object group has 1 to 4096 parts");
  HKV_REQUIRE(group.end_tokens > 0, "an object group's boundary is past 0");
  for (std::size_t i = 1; i < group.parts.size(); ++i) {
    HKV_REQUIRE(
        ToIndex(group.parts[i - 1].group) < ToIndex(group.parts[i].group),
        "an object group's parts are in increasing group order");
  }
  std::string out(kMagic, sizeof(kMagic));
  Append(out, kVersion);
  Append(out, static_cast<std::uint32_t>(group.parts.size()));
  out.append(reinterpret_cast<const char*>(ns.data()), ns.size());
  out.append(reinterpret_cast<const char*>(group.key.bytes.data()), 32);
  Append(out, group.end_tokens);
  Append(out, std::uint32_t{0});
  for (const ObjectPart& part : group.parts) {
    Append(out, static_cast<std::uint32_t>(ToIndex(part.group)));
    Append(out, std::uint32_t{0});
    Append(out, static_cast<std::uint64_t>(part.bytes.size()));
    Append(out, Checksum(part.bytes));
  }
  Append(out, Checksum(out));
  for (const ObjectPart& part : group.parts) out += part.bytes;
  return out;
}

DecodedObject DecodeObjectGroup(std::string_view bytes,
                                const NamespaceDigest& ns,
                                const BlockHash& key) {
  Header header;
  DecodedObject out;
  out.defect = ParseHeader(bytes, ns, header);
  if (out.defect != ObjectDefect::kNone) return out;
  if (header.summary.key != key) {
    out.defect = ObjectDefect::kWrongKey;
    return out;
  }
  std::size_t at = header.payload_offset;
  for (std::size_t i = 0; i < header.sizes.size(); ++i) {
    const std::string_view part = bytes.substr(at, header.sizes[i]);
    if (Checksum(part) != header.checksums[i]) {
      out.defect = ObjectDefect::kBadChecksum;
      out.group = {};
      return out;
    }
    out.group.parts.push_back(
        {.group = header.summary.groups[i], .bytes = std::string(part)});
    at += header.sizes[i];
  }
  out.group.key = key;
  out.group.end_tokens = header.summary.end_tokens;
  return out;
}

Result<ObjectSummary> SummarizeObject(std::string_view bytes,
                                      const NamespaceDigest& ns) {
  Header header;
  const ObjectDefect defect = ParseHeader(bytes, ns, header);
  if (defect != ObjectDefect::kNone) {
    return Fail(ErrorCode::kCorruption,
                "object refused: " + std::string(DefectName(defect)));
  }
  return std::move(header.summary);
}

}  // namespace hkv
