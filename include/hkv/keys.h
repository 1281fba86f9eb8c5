// Chained prefix keys, compatible with the reference system's `sha256_cbor`
// and `xxhash_cbor` block hashing.
//
// The key of hash unit k (tokens [k*u, (k+1)*u)) is
//   K_k = digest(CBOR([K_{k-1} as bytes, [tokens as uints], extra or null]))
// where K_{-1} is the seed key, the digest of the CBOR text string of the
// seed. Extra keys are, in this order: the LoRA adapter name (every unit), one
// [identifier, offset - unit start] pair per multimodal item overlapping the
// unit, and the cache salt (first unit only).
//
// Thread-safety: pure functions and value types.
//
// Example:
//   Result<KeyScheme> scheme = MakeKeyScheme({.hash_unit = 16});
//   BlockHash k0 = HashUnit(*scheme, scheme->seed_key, tokens, {});
#pragma once

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

// Parses "sha256_cbor" / "xxh3_128_cbor".
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

// One element of a unit's extra keys: a text string, or the pair
// [text, offset] when `offset` is set (multimodal items).
struct ExtraKey {
  std::string text = {};
  std::optional<std::int64_t> offset = std::nullopt;

  friend bool operator==(const ExtraKey&, const ExtraKey&) = default;
};

// A multimodal item occupying prompt positions [offset, offset + length).
struct MultimodalItem {
  std::string identifier;
  std::uint32_t offset = 0;
  std::uint32_t length = 0;
};

// What besides the tokens isolates a request's keys.
struct KeyExtras {
  std::string lora_name = {};                   // empty: no adapter
  std::vector<MultimodalItem> multimodal = {};  // sorted by offset
  std::string cache_salt = {};                  // empty: no salt
};

// Extra keys of the unit covering tokens [start, end).
std::vector<ExtraKey> UnitExtraKeys(const KeyExtras& extras,
                                    std::uint32_t start, std::uint32_t end);

// Digest of the CBOR text string `seed`.
BlockHash SeedKey(KeyFunction function, std::string_view seed);

// The key of one unit with the given parent key, tokens and extra keys
// (empty `extra` encodes as null).
BlockHash HashUnit(const KeyScheme& scheme, const BlockHash& parent,
                   std::span<const TokenId> tokens,
                   std::span<const ExtraKey> extra);

// The exact bytes HashUnit digests; for interoperability checks.
std::vector<std::uint8_t> UnitKeyInput(const KeyScheme& scheme,
                                       const BlockHash& parent,
                                       std::span<const TokenId> tokens,
                                       std::span<const ExtraKey> extra);

}  // namespace hkv
