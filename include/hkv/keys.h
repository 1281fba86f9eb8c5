// Chained prefix keys, compatible with the reference system's `sha256_cbor`
// and `xxhash_cbor` block hashing (spec §2).
//
// The key of hash unit k (tokens [k*u, (k+1)*u)) is
//   K_k = digest(CBOR([K_{k-1} as bytes, [tokens as uints], extra or null]))
// where K_{-1} is the seed key, the digest of the CBOR text string of the
// seed. `extra` is an array of tagged tuples (spec §2.4), in this order:
//   ["lora", name, path]              every unit of a request with an adapter
//   ["mm", identifier, offset - s]    per multimodal item overlapping [s, e)
//   ["cache_salt", salt]              the first unit only
//   ["prompt_embeds", sha256(rows)]   the unit's prompt-embedding rows
// The tags keep the kinds apart: a salt "x" and an adapter "x" never give
// the same key. A unit with none of them encodes null, so keys of plain
// requests do not depend on this list.
//
// Thread-safety: pure functions and value types.
//
// Example:
//   Result<KeyScheme> scheme = MakeKeyScheme({.hash_unit = 16});
//   KeyExtras extras = {.lora_name = "sql", .lora_path = "/adapters/sql"};
//   BlockHash k0 = HashUnit(*scheme, scheme->seed_key, tokens,
//                           UnitExtraKeys(extras, 0, 16));
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/result.h"
#include "hkv/types.h"

namespace hkv {

enum class KeyFunction {
  kSha256Cbor,    // SHA-256 over canonical CBOR (default; interoperable)
  kXxh3_128Cbor,  // XXH3-128 over the same bytes (faster, not cryptographic)
};

// Digest length in bytes: 32 for SHA-256, 16 for XXH3-128.
std::size_t DigestSize(KeyFunction function);

// Parses "sha256_cbor" / "xxh3_128_cbor" (also by the reference engine's
// name, "xxhash_cbor"). The engine's "sha256" and "xxhash" (digests of a
// pickle) are refused with how to run the engine instead.
Result<KeyFunction> ParseKeyFunction(std::string_view name);
std::string_view KeyFunctionName(KeyFunction function);

struct KeySchemeOptions {
  KeyFunction function = KeyFunction::kSha256Cbor;
  std::uint32_t hash_unit = 16;  // tokens per key
  // The seed of every chain (the reference system's PYTHONHASHSEED). Unset:
  // "0" for sha256_cbor; for xxh3_128_cbor a random one per scheme, since a
  // known seed of a non-cryptographic hash lets prompts with colliding keys
  // be crafted offline (spec §9 item 15). Set it to share xxh3 keys across
  // processes (a router mirroring several engines).
  std::optional<std::string> seed = std::nullopt;
};

// How a request's tokens become keys. Build with MakeKeyScheme.
struct KeyScheme {
  KeyFunction function = KeyFunction::kSha256Cbor;
  std::uint32_t hash_unit = 16;
  BlockHash seed_key;  // parent of every request's first unit

  friend bool operator==(const KeyScheme&, const KeyScheme&) = default;
};

// Returns the scheme, or kInvalidArgument when hash_unit is 0.
[[nodiscard]] Result<KeyScheme> MakeKeyScheme(const KeySchemeOptions& options);

// The kinds of extra key (spec §2.4), in the order a unit lists them.
enum class ExtraKeyKind : std::uint8_t {
  kLora,          // ["lora", name, path]
  kMultimodal,    // ["mm", name (the item's identifier), offset]
  kCacheSalt,     // ["cache_salt", name (the salt)]
  kPromptEmbeds,  // ["prompt_embeds", digest (a 32-byte byte string)]
};

// The tag a kind's tuple starts with: "lora", "mm", "cache_salt",
// "prompt_embeds".
std::string_view ExtraKeyTag(ExtraKeyKind kind);

// SHA-256 of a unit's prompt-embedding rows.
using EmbedsDigest = std::array<std::uint8_t, 32>;

// One element of a unit's extra keys: a tagged tuple, encoded as a CBOR
// array whose first item is ExtraKeyTag(kind), then the fields the kind
// uses (see ExtraKeyKind); the others stay at their defaults. Build one with
// the factories.
struct ExtraKey {
  ExtraKeyKind kind = ExtraKeyKind::kCacheSalt;
  std::string name = {};     // adapter name, item identifier or salt
  std::string path = {};     // kLora: the adapter's path
  std::int64_t offset = 0;   // kMultimodal: item start - unit start
  EmbedsDigest digest = {};  // kPromptEmbeds

  static ExtraKey Lora(std::string name, std::string path);
  static ExtraKey Multimodal(std::string identifier, std::int64_t offset);
  static ExtraKey CacheSalt(std::string salt);
  static ExtraKey PromptEmbeds(const EmbedsDigest& digest);

  friend bool operator==(const ExtraKey&, const ExtraKey&) = default;
};

// A multimodal item occupying prompt positions [offset, offset + length).
struct MultimodalItem {
  std::string identifier;
  std::uint32_t offset = 0;
  std::uint32_t length = 0;
};

// A request's prompt embeddings as the engine holds them: one row of
// `bytes_per_token` bytes per prompt token, rows in token order, each row
// the tensor's raw bytes in its own dtype and byte order (for a torch
// tensor, `t.contiguous().view(torch.uint8).numpy().tobytes()`). The unit
// [s, e) digests the bytes of rows [s, e) that exist (none past the prompt:
// the digest of no bytes), as the reference hashes `prompt_embeds[s:e]`.
// A Request keeps its copy (the embeddings' size), and keys and KV events
// digest a unit's rows each time they need them.
struct PromptEmbeds {
  std::vector<std::uint8_t> bytes = {};  // num_rows * bytes_per_token
  std::uint32_t bytes_per_token = 0;     // 0: the request has none

  friend bool operator==(const PromptEmbeds&, const PromptEmbeds&) = default;
};

// What besides the tokens isolates a request's keys.
struct KeyExtras {
  std::string lora_name = {};                   // empty: no adapter
  std::string lora_path = {};                   // the adapter's path
  std::vector<MultimodalItem> multimodal = {};  // sorted by offset
  std::string cache_salt = {};                  // empty: no salt
  PromptEmbeds prompt_embeds = {};

  // Whether no extra key applies to any unit (the keys are plain).
  bool empty() const;
  // Returns kInvalidArgument, naming the field, when the multimodal items
  // are not sorted by offset or end past 2^32 - 1, when a LoRA path has no
  // name, or when the prompt-embedding bytes are not whole rows.
  [[nodiscard]] Result<void> Validate() const;
};

// Extra keys of the unit covering tokens [start, end), in spec §2.4's order.
// O(items + bytes of the unit's embedding rows).
// REQUIRES: extras.Validate() succeeds (unchecked here).
std::vector<ExtraKey> UnitExtraKeys(const KeyExtras& extras,
                                    std::uint32_t start, std::uint32_t end);

// Digest of the CBOR text string `seed`.
BlockHash SeedKey(KeyFunction function, std::string_view seed);

// The key of one unit with the given parent key, tokens and extra keys
// (empty `extra` encodes as null). O(tokens + extra bytes).
BlockHash HashUnit(const KeyScheme& scheme, const BlockHash& parent,
                   std::span<const TokenId> tokens,
                   std::span<const ExtraKey> extra);

// The exact bytes HashUnit digests; for interoperability checks.
std::vector<std::uint8_t> UnitKeyInput(const KeyScheme& scheme,
                                       const BlockHash& parent,
                                       std::span<const TokenId> tokens,
                                       std::span<const ExtraKey> extra);

}  // namespace hkv
