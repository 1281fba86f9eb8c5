#include "hkv/keys.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "core/cbor.h"
#include "core/digest.h"
#include "core/plain_keys.h"

namespace hkv {
namespace {

std::string DefaultSeed(KeyFunction function) {
  if (function == KeyFunction::kSha256Cbor) return "0";
  std::random_device entropy;
  std::string seed;
  for (int i = 0; i < 4; ++i) seed += std::to_string(entropy());
  return seed;
}

BlockHash Digest(KeyFunction function, std::span<const std::uint8_t> bytes) {
  return function == KeyFunction::kSha256Cbor ? internal::Sha256(bytes)
                                              : internal::Xxh3_128(bytes);
}

// Upper bound of EncodeUnit's output, plus the spare bytes UnsignedArray
// needs.
std::size_t MaxUnitBytes(std::span<const TokenId> tokens,
                         std::span<const ExtraKey> extra) {
  constexpr std::size_t kHead = internal::CborWriter::kMaxHeadBytes;
  std::size_t size = 3 * kHead + 32 + 5 * tokens.size() +
                     internal::CborWriter::kArraySpareBytes + 1;
  for (const ExtraKey& key : extra) {
    // Array head, then tag, name, path or offset, digest: at most 4 items.
    size += 5 * kHead + ExtraKeyTag(key.kind).size() + key.name.size() +
            key.path.size() + key.digest.size();
  }
  return size;
}

// This thread's buffer for encoding one unit, at least `capacity` bytes.
// Grown, never shrunk: resizing zero-fills only when it grows.
std::uint8_t* UnitScratch(std::size_t capacity) {
  thread_local std::vector<std::uint8_t> buffer;
  if (buffer.size() < capacity) buffer.resize(capacity);
  return buffer.data();
}

// One tagged tuple (keys.h, ExtraKeyKind).
void EncodeExtraKey(const ExtraKey& key, internal::CborWriter& cbor) {
  const bool triple =
      key.kind == ExtraKeyKind::kLora || key.kind == ExtraKeyKind::kMultimodal;
  cbor.ArrayHeader(triple ? 3 : 2);
  cbor.Text(ExtraKeyTag(key.kind));
  switch (key.kind) {
    case ExtraKeyKind::kLora:
      cbor.Text(key.name);
      cbor.Text(key.path);
      break;
    case ExtraKeyKind::kMultimodal:
      cbor.Text(key.name);
      cbor.Signed(key.offset);
      break;
    case ExtraKeyKind::kCacheSalt:
      cbor.Text(key.name);
      break;
    case ExtraKeyKind::kPromptEmbeds:
      cbor.Bytes(key.digest);
      break;
  }
}

// Encodes [parent, [tokens], extra or null] into `out`; returns its size.
std::size_t EncodeUnit(const KeyScheme& scheme, const BlockHash& parent,
                       std::span<const TokenId> tokens,
                       std::span<const ExtraKey> extra, std::uint8_t* out) {
  internal::CborWriter cbor(out);
  cbor.ArrayHeader(3);
  cbor.Bytes(std::span(parent.bytes.data(), DigestSize(scheme.function)));
  cbor.UnsignedArray(tokens);
  if (extra.empty()) {
    cbor.Null();
    return cbor.size();
  }
  cbor.ArrayHeader(extra.size());
  for (const ExtraKey& key : extra) EncodeExtraKey(key, cbor);
  return cbor.size();
}

}  // namespace

std::string BlockHash::Hex(std::size_t num_bytes) const {
  std::string out;
  out.reserve(2 * num_bytes);
  for (std::size_t i = 0; i < num_bytes && i < bytes.size(); ++i) {
    char buf[3];
    std::snprintf(buf, sizeof buf, "%02x", bytes[i]);
    out += buf;
  }
  return out;
}

std::size_t DigestSize(KeyFunction function) {
  return function == KeyFunction::kSha256Cbor ? 32 : 16;
}

Result<KeyFunction> ParseKeyFunction(std::string_view name) {
  if (name == "sha256_cbor") return KeyFunction::kSha256Cbor;
  // The reference engine's name for the same digest over the same bytes.
  if (name == "xxh3_128_cbor" || name == "xxhash_cbor") {
    return KeyFunction::kXxh3_128Cbor;
  }
  if (name == "sha256" || name == "xxhash") {
    return Fail(ErrorCode::kInvalidArgument,
                "key function '" + std::string(name) +
                    "' is the reference engine's digest of a Python pickle, "
                    "which hkv does not reproduce: run the engines with "
                    "--prefix-caching-hash-algo sha256_cbor (or xxhash_cbor) "
                    "and give hkv the same");
  }
  return Fail(ErrorCode::kInvalidArgument,
              "unknown key function '" + std::string(name) +
                  "' (expected sha256_cbor, xxh3_128_cbor or its engine name "
                  "xxhash_cbor)");
}

std::string_view KeyFunctionName(KeyFunction function) {
  return function == KeyFunction::kSha256Cbor ? "sha256_cbor" : "xxh3_128_cbor";
}

Result<KeyScheme> MakeKeyScheme(const KeySchemeOptions& options) {
  if (options.hash_unit == 0) {
    return Fail(ErrorCode::kInvalidArgument,
                "hash unit must be at least 1 token");
  }
  return KeyScheme{.function = options.function,
                   .hash_unit = options.hash_unit,
                   .seed_key = SeedKey(
                       options.function,
                       options.seed.value_or(DefaultSeed(options.function)))};
}

BlockHash SeedKey(KeyFunction function, std::string_view seed) {
  std::vector<std::uint8_t> bytes(internal::CborWriter::kMaxHeadBytes +
                                  seed.size());
  internal::CborWriter cbor(bytes.data());
  cbor.Text(seed);
  bytes.resize(cbor.size());
  return Digest(function, bytes);
}

std::vector<std::uint8_t> UnitKeyInput(const KeyScheme& scheme,
                                       const BlockHash& parent,
                                       std::span<const TokenId> tokens,
                                       std::span<const ExtraKey> extra) {
  std::vector<std::uint8_t> bytes(MaxUnitBytes(tokens, extra));
  bytes.resize(EncodeUnit(scheme, parent, tokens, extra, bytes.data()));
  return bytes;
}

BlockHash HashUnit(const KeyScheme& scheme, const BlockHash& parent,
                   std::span<const TokenId> tokens,
                   std::span<const ExtraKey> extra) {
  std::uint8_t* const out = UnitScratch(MaxUnitBytes(tokens, extra));
  const std::size_t size = EncodeUnit(scheme, parent, tokens, extra, out);
  return Digest(scheme.function, std::span(out, size));
}

namespace internal {

void AppendPlainUnitKeys(const KeyScheme& scheme, BlockHash parent,
                         std::span<const TokenId> tokens,
                         std::vector<BlockHash>& keys) {
  const std::size_t unit = scheme.hash_unit;
  const std::size_t count = unit == 0 ? 0 : tokens.size() / unit;
  if (count == 0) return;
  // [parent, [tokens], null]: everything but the parent and the tokens is
  // the same in every unit. Units are encoded a batch at a time (the
  // tokens do not depend on the parents), then digested in a chain that
  // only writes each parent in.
  const std::size_t digest_size = DigestSize(scheme.function);
  UnitFraming framing;
  CborWriter before(framing.before.data());
  before.ArrayHeader(3);
  before.Bytes(std::span(parent.bytes.data(), digest_size));
  const std::size_t parent_at = before.size() - digest_size;
  before.ArrayHeader(unit);
  framing.before_size = before.size();
  CborWriter after(framing.after.data());
  after.Null();
  framing.after_size = after.size();

  if (keys.capacity() < keys.size() + count) {
    keys.reserve(std::max(keys.size() + count, 2 * keys.capacity()));
  }
  if (scheme.function == KeyFunction::kXxh3_128Cbor &&
      AppendXxh3UnitKeysAhead(framing, parent_at, unit, parent, tokens, keys)) {
    return;
  }

  // A batch's bytes stay in the first-level caches.
  const std::size_t batch = std::max<std::size_t>(1, 16384 / (5 * unit));
  const std::size_t unit_bytes = framing.before_size + 5 * unit + 1;
  std::uint8_t* const out =
      UnitScratch(batch * unit_bytes + std::max(CborWriter::kArraySpareBytes,
                                                UnitFraming::kMaxBytes));
  thread_local std::vector<std::size_t> ends;
  ends.resize(batch);

  for (std::size_t first = 0; first < count; first += batch) {
    const std::size_t n = std::min(batch, count - first);
    EncodeFramedUnits(tokens.subspan(first * unit, n * unit), unit, framing,
                      out, std::span(ends).first(n));
    std::size_t begin = 0;
    for (std::size_t k = 0; k < n; ++k) {
      // Fixed-size copies: inlined moves rather than a library call.
      if (digest_size == 32) {
        std::memcpy(out + begin + parent_at, parent.bytes.data(), 32);
      } else {
        std::memcpy(out + begin + parent_at, parent.bytes.data(), 16);
      }
      parent = Digest(scheme.function, std::span(out + begin, ends[k] - begin));
      keys.push_back(parent);
      begin = ends[k];
    }
  }
}

}  // namespace internal
}  // namespace hkv
