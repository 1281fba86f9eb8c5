// The unit an offload tier stores: an object group, everything the cache
// holds for one prefix boundary, written and read all or nothing.
//
// For a boundary E tokens into a prompt, the group holds one part per cache
// group that keeps an entry ending at E: a full-attention or window page
// (the page's tokens up to E; a partial page at a prompt's tail) and a
// recurrent group's state after E tokens. It is keyed by the chained key
// of the prefix's first E tokens (the same key every group's entry there
// carries) within a namespace: the model, the page geometry and the salt
// domain, so objects of different models, geometries or tenants never
// answer for each other.
//
// The encoding carries a header (magic, version, namespace digest, key,
// boundary, each part's group, size and xxh3-64 checksum, and the header's
// own checksum) and then the parts' bytes. A decoder refuses, naming the
// defect, any object whose size, magic, namespace, key or checksums
// disagree: a torn or foreign object is a miss, never a wrong hit.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/keys.h"
#include "hkv/result.h"
#include "hkv/types.h"

namespace hkv {

// What an object's contents depend on besides its tokens.
struct TierNamespace {
  std::string model;        // e.g. "qwen3-next-80b"
  std::string geometry;     // the page geometry, e.g. "fa16+swa16+rec512"
  std::string salt_domain;  // a tenant's cache-salt domain; "" for none
};

using NamespaceDigest = std::array<std::uint8_t, 16>;
// SHA-256 of the three fields, length-prefixed, truncated to 16 bytes.
NamespaceDigest DigestNamespace(const TierNamespace& ns);

// The store name of a group's object: "hkv-" + 32 hex digits of the
// namespace digest + "-" + 64 hex digits of the key (101 characters).
std::string ObjectName(const NamespaceDigest& ns, const BlockHash& key);
// The names' common start for one namespace ("hkv-" + digest + "-").
std::string ObjectNamePrefix(const NamespaceDigest& ns);
// The key an object name of this namespace names; none for any other name.
std::optional<BlockHash> KeyOfObjectName(const NamespaceDigest& ns,
                                         std::string_view name);

struct ObjectPart {
  GroupId group{0};
  std::string bytes;
  friend bool operator==(const ObjectPart&, const ObjectPart&) = default;
};

struct ObjectGroup {
  BlockHash key = {};
  std::uint32_t end_tokens = 0;        // the boundary E
  std::vector<ObjectPart> parts = {};  // groups strictly increasing
  friend bool operator==(const ObjectGroup&, const ObjectGroup&) = default;
};

// The header fields alone: what a directory needs to know of an object.
struct ObjectSummary {
  BlockHash key = {};
  std::uint32_t end_tokens = 0;
  std::vector<GroupId> groups = {};
  std::uint64_t total_bytes = 0;  // the whole encoding
};

// Why an object was refused.
enum class ObjectDefect {
  kNone,
  kWrongSize,       // shorter or longer than its header says
  kBadHeader,       // magic, version, counts or header checksum
  kWrongNamespace,  // written for another model, geometry or salt domain
  kWrongKey,        // another boundary's object under this name
  kBadChecksum,     // a part's bytes changed
};
inline constexpr int kNumObjectDefects = 6;
std::string_view DefectName(ObjectDefect defect);

// The encoding. REQUIRES (else UsageError): parts' groups strictly
// increasing, at least one part, end_tokens > 0.
std::string EncodeObjectGroup(const ObjectGroup& group,
                              const NamespaceDigest& ns);

struct DecodedObject {
  ObjectDefect defect = ObjectDefect::kNone;
  ObjectGroup group = {};  // when defect is kNone
};

// Checks everything and returns the group, or the first defect found.
// `key` is the key the reader asked for.
DecodedObject DecodeObjectGroup(std::string_view bytes,
                                const NamespaceDigest& ns,
                                const BlockHash& key);

// The header's fields after checking the header (magic, checksum,
// namespace) and the total size, not the parts' checksums: a directory's
// cheap look at an object. kCorruption naming the defect otherwise.
[[nodiscard]] Result<ObjectSummary> SummarizeObject(std::string_view bytes,
                                                    const NamespaceDigest& ns);

}  // namespace hkv
