// Reading event batches back (DecodeEventBatch, hkv/event_publisher.h):
// msgpack parsed under limits, then every field checked by position (an
// event as an array) or by name (as a map: the reference engine since its
// PR #42892, read into the same positions).
#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <msgpack.hpp>

#include "hkv/event_publisher.h"

namespace hkv {
namespace {

// Thrown inside the reader, turned into kCorruption at its edge.
struct BadBatch {
  std::string what;
};

[[noreturn]] void Bad(std::string what) { throw BadBatch{std::move(what)}; }

using Object = msgpack::object;

std::span<const Object> ArrayOf(const Object& o, const char* what) {
  if (o.type != msgpack::type::ARRAY)
    Bad(std::string(what) + " is not an array");
  return {o.via.array.ptr, o.via.array.size};
}

std::uint64_t Unsigned(const Object& o, const char* what, std::uint64_t max) {
  if (o.type != msgpack::type::POSITIVE_INTEGER || o.via.u64 > max) {
    Bad(std::string(what) + " is not an integer in [0, " + std::to_string(max) +
        "]");
  }
  return o.via.u64;
}

std::uint32_t U32(const Object& o, const char* what) {
  return static_cast<std::uint32_t>(
      Unsigned(o, what, std::numeric_limits<std::uint32_t>::max()));
}

std::string Text(const Object& o, const char* what) {
  if (o.type != msgpack::type::STR) Bad(std::string(what) + " is not a string");
  return std::string(o.via.str.ptr, o.via.str.size);
}

// The fields after the tag, in the array layout's order (docs/events.md).
constexpr std::array<std::string_view, 17> kStoredFields = {
    "block_hashes",
    "parent_block_hash",
    "token_ids",
    "block_size",
    "lora_id",
    "medium",
    "lora_name",
    "extra_keys",
    "group_idx",
    "kv_cache_spec_kind",
    "kv_cache_spec_sliding_window",
    "locality",
    "ownership",
    "session_id",
    "skipped_parent_block_hash",
    "skipped_token_ids",
    "skipped_extra_keys"};
constexpr std::array<std::string_view, 5> kRemovedFields = {
    "block_hashes", "medium", "group_idx", "locality", "ownership"};

// A map-encoded event: its tag (under "type") and its fields at the array
// layout's positions, nil where the map has none (msgspec omits defaults).
// Names the layout lacks are skipped (a later schema's additions); a name
// given twice is refused.
struct MapEvent {
  std::string tag;
  std::vector<Object> fields;
};

MapEvent FromMap(const Object& o) {
  const std::span<const msgpack::object_kv> entries(o.via.map.ptr,
                                                    o.via.map.size);
  MapEvent out;
  const Object* tag = nullptr;
  std::vector<std::string_view> seen;
  for (const msgpack::object_kv& kv : entries) {
    if (kv.key.type != msgpack::type::STR) {
      Bad("an event's field name is not a string");
    }
    const std::string_view name(kv.key.via.str.ptr, kv.key.via.str.size);
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
      Bad("an event names field \"" + std::string(name.substr(0, 64)) +
          "\" twice");
    }
    seen.push_back(name);
    if (name == "type") tag = &kv.val;
  }
  if (tag == nullptr) Bad("an event map has no \"type\"");
  out.tag = Text(*tag, "an event's type");
  std::span<const std::string_view> names;
  if (out.tag == "BlockStored") names = kStoredFields;
  if (out.tag == "BlockRemoved") names = kRemovedFields;
  out.fields.resize(names.size());
  for (const msgpack::object_kv& kv : entries) {
    const std::string_view name(kv.key.via.str.ptr, kv.key.via.str.size);
    const auto at = std::find(names.begin(), names.end(), name);
    if (at != names.end())
      out.fields[static_cast<std::size_t>(at - names.begin())] = kv.val;
  }
  return out;
}

// The batch's three fields, from an array [ts, events, data_parallel_rank]
// (the rank may be left out) or, as msgspec encodes a struct without
// array_like (the upstream engine since its events became maps), a map of
// the same names (a rank left out or nil; other names skipped).
struct BatchFields {
  const Object* ts = nullptr;
  const Object* events = nullptr;
  const Object* rank = nullptr;
};

BatchFields FieldsOf(const Object& o) {
  BatchFields out;
  if (o.type != msgpack::type::MAP) {
    if (o.type != msgpack::type::ARRAY) {
      Bad("a batch is neither an array nor a map");
    }
    const std::span<const Object> batch = ArrayOf(o, "a batch");
    if (batch.size() < 2 || batch.size() > 3) {
      Bad("a batch is not [ts, events, data_parallel_rank]");
    }
    out.ts = &batch[0];
    out.events = &batch[1];
    if (batch.size() == 3) out.rank = &batch[2];
    return out;
  }
  for (const msgpack::object_kv& kv :
       std::span<const msgpack::object_kv>(o.via.map.ptr, o.via.map.size)) {
    if (kv.key.type != msgpack::type::STR) {
      Bad("a batch's field name is not a string");
    }
    const std::string_view name(kv.key.via.str.ptr, kv.key.via.str.size);
    const Object** field = name == "ts"                   ? &out.ts
                           : name == "events"             ? &out.events
                           : name == "data_parallel_rank" ? &out.rank
                                                          : nullptr;
    if (field == nullptr) continue;
    if (*field != nullptr) {
      Bad("a batch names field \"" + std::string(name) + "\" twice");
    }
    *field = &kv.val;
  }
  if (out.ts == nullptr) Bad("a batch map has no \"ts\"");
  if (out.events == nullptr) Bad("a batch map has no \"events\"");
  return out;
}

class Reader {
 public:
  Reader(std::size_t digest_bytes, HashEncoding hashes)
      : digest_bytes_(digest_bytes), hashes_(hashes) {}

  KvEvent Event(const Object& o) {
    if (o.type == msgpack::type::MAP) {
      const MapEvent e = FromMap(o);
      if (e.tag == "BlockStored") return Stored(e.fields);
      if (e.tag == "BlockRemoved") return Removed(e.fields);
      if (e.tag == "AllBlocksCleared") return AllBlocksCleared{};
      Bad("unknown event tag \"" + e.tag.substr(0, 64) + "\"");
    }
    const std::span<const Object> fields = ArrayOf(o, "an event");
    if (fields.empty()) Bad("an event has no tag");
    const std::string tag = Text(fields[0], "an event's tag");
    if (tag == "BlockStored") return Stored(fields.subspan(1));
    if (tag == "BlockRemoved") return Removed(fields.subspan(1));
    if (tag == "AllBlocksCleared") {
      if (fields.size() != 1) Bad("AllBlocksCleared has fields");
      return AllBlocksCleared{};
    }
    Bad("unknown event tag \"" + tag.substr(0, 64) + "\"");
  }

 private:
  BlockHash Hash(const Object& o) {
    BlockHash hash;
    if (hashes_ == HashEncoding::kBytes) {
      if (o.type != msgpack::type::BIN || o.via.bin.size != digest_bytes_) {
        Bad("a block hash is not " + std::to_string(digest_bytes_) + " bytes");
      }
      std::memcpy(hash.bytes.data(), o.via.bin.ptr, digest_bytes_);
      return hash;
    }
    std::uint64_t low =
        Unsigned(o, "a block hash", std::numeric_limits<std::uint64_t>::max());
    for (std::size_t i = digest_bytes_; i-- > digest_bytes_ - 8;) {
      hash.bytes[i] = static_cast<std::uint8_t>(low & 0xff);
      low >>= 8;
    }
    return hash;
  }

  std::optional<BlockHash> OptionalHash(const Object& o) {
    if (o.is_nil()) return std::nullopt;
    return Hash(o);
  }

  std::vector<BlockHash> Hashes(const Object& o) {
    std::vector<BlockHash> out;
    for (const Object& h : ArrayOf(o, "block_hashes")) out.push_back(Hash(h));
    return out;
  }

  static std::vector<TokenId> Tokens(const Object& o, const char* what) {
    std::vector<TokenId> out;
    for (const Object& t : ArrayOf(o, what)) out.push_back(U32(t, what));
    return out;
  }

  static EventExtraKey ExtraKey(const Object& o) {
    if (o.type == msgpack::type::STR) return Text(o, "an extra key");
    if (o.type == msgpack::type::BIN) {
      EmbedsDigest digest;
      if (o.via.bin.size != digest.size()) {
        Bad("a prompt-embeddings digest is not 32 bytes");
      }
      std::memcpy(digest.data(), o.via.bin.ptr, digest.size());
      return digest;
    }
    const std::span<const Object> pair = ArrayOf(o, "an extra key");
    if (pair.size() != 2) Bad("a multimodal extra key is not [id, offset]");
    EventItemOffset item{.identifier = Text(pair[0], "a multimodal id")};
    if (pair[1].type == msgpack::type::POSITIVE_INTEGER) {
      if (pair[1].via.u64 > static_cast<std::uint64_t>(
                                std::numeric_limits<std::int64_t>::max())) {
        Bad("a multimodal offset exceeds 2^63 - 1");
      }
      item.offset = static_cast<std::int64_t>(pair[1].via.u64);
    } else if (pair[1].type == msgpack::type::NEGATIVE_INTEGER) {
      item.offset = pair[1].via.i64;
    } else {
      Bad("a multimodal offset is not an integer");
    }
    return item;
  }

  // Nil: `count` empty entries.
  static std::vector<std::optional<std::vector<EventExtraKey>>> ExtraKeys(
      const Object& o, std::size_t count) {
    std::vector<std::optional<std::vector<EventExtraKey>>> out;
    if (o.is_nil()) {
      out.resize(count);
      return out;
    }
    for (const Object& entry : ArrayOf(o, "extra_keys")) {
      if (entry.is_nil()) {
        out.emplace_back();
        continue;
      }
      std::vector<EventExtraKey> keys;
      for (const Object& key : ArrayOf(entry, "an extra_keys entry")) {
        keys.push_back(ExtraKey(key));
      }
      out.emplace_back(std::move(keys));
    }
    return out;
  }

  static std::string Medium(const Object& o) {
    return o.is_nil() ? std::string() : Text(o, "medium");
  }

  static GroupId Group(const Object& o) {
    return o.is_nil() ? GroupId{0} : GroupId{U32(o, "group_idx")};
  }

  // After the tag: block_hashes .. lora_name required, up to 17 in all.
  KvEvent Stored(std::span<const Object> f) {
    if (f.size() < 7 || f.size() > 17) {
      Bad("BlockStored has " + std::to_string(f.size()) +
          " fields, not 7 to 17");
    }
    BlockStored e{.block_hashes = Hashes(f[0]),
                  .parent_block_hash = OptionalHash(f[1]),
                  .token_ids = Tokens(f[2], "token_ids"),
                  .block_size = U32(f[3], "block_size")};
    if (!f[4].is_nil()) e.lora_id = U32(f[4], "lora_id");
    e.medium = Medium(f[5]);
    if (!f[6].is_nil()) e.lora_name = Text(f[6], "lora_name");
    e.extra_keys =
        ExtraKeys(f.size() > 7 ? f[7] : Object(), e.block_hashes.size());
    if (e.extra_keys.size() != e.block_hashes.size()) {
      Bad("extra_keys has not one entry per block hash");
    }
    if (f.size() > 8) e.group = Group(f[8]);
    if (f.size() > 9 && !f[9].is_nil()) {
      e.spec_kind = Text(f[9], "kv_cache_spec_kind");
    }
    if (f.size() > 10 && !f[10].is_nil()) {
      e.sliding_window = U32(f[10], "kv_cache_spec_sliding_window");
    }
    // 11-13: locality, ownership, session_id, not kept.
    if (f.size() > 14) e.skipped_parent_block_hash = OptionalHash(f[14]);
    if (f.size() > 15 && !f[15].is_nil()) {
      e.skipped_token_ids = Tokens(f[15], "skipped_token_ids");
    }
    if (f.size() > 16 && !f[16].is_nil()) {
      e.skipped_extra_keys = ExtraKeys(f[16], 0);
    }
    return e;
  }

  KvEvent Removed(std::span<const Object> f) {
    if (f.size() < 2 || f.size() > 5) {
      Bad("BlockRemoved has " + std::to_string(f.size()) +
          " fields, not 2 to 5");
    }
    BlockRemoved e{.block_hashes = Hashes(f[0]), .medium = Medium(f[1])};
    if (f.size() > 2) e.group = Group(f[2]);
    return e;
  }

  std::size_t digest_bytes_;
  HashEncoding hashes_;
};

}  // namespace

Result<DecodedBatch> DecodeEventBatch(std::string_view bytes,
                                      KeyFunction key_function,
                                      HashEncoding hashes) {
  if (bytes.size() > kMaxEventBatchBytes) {
    return Fail(
        ErrorCode::kCorruption,
        "a batch of " + std::to_string(bytes.size()) + " bytes exceeds 16 MiB");
  }
  try {
    // Sizes bounded by the bytes themselves; nesting by the layout.
    const std::size_t most = bytes.size();
    std::size_t offset = 0;
    const msgpack::object_handle handle =
        msgpack::unpack(bytes.data(), bytes.size(), offset, nullptr, nullptr,
                        msgpack::unpack_limit(most, most, most, most, 0, 6));
    if (offset != bytes.size()) Bad("bytes follow the batch");
    const BatchFields batch = FieldsOf(handle.get());
    DecodedBatch out;
    const Object& ts = *batch.ts;
    if (ts.type == msgpack::type::FLOAT64 ||
        ts.type == msgpack::type::FLOAT32) {
      out.timestamp_s = ts.via.f64;
    } else if (ts.type == msgpack::type::POSITIVE_INTEGER) {
      out.timestamp_s = static_cast<double>(ts.via.u64);
    } else {
      Bad("ts is not a number");
    }
    Reader reader(DigestSize(key_function), hashes);
    for (const Object& e : ArrayOf(*batch.events, "events")) {
      out.events.push_back(reader.Event(e));
    }
    if (batch.rank != nullptr && !batch.rank->is_nil()) {
      out.data_parallel_rank = U32(*batch.rank, "data_parallel_rank");
    }
    return out;
  } catch (const BadBatch& e) {
    return Fail(ErrorCode::kCorruption, "bad KV event batch: " + e.what);
  } catch (const msgpack::insufficient_bytes&) {
    return Fail(ErrorCode::kCorruption, "bad KV event batch: truncated");
  } catch (const std::exception& e) {
    return Fail(ErrorCode::kCorruption,
                std::string("bad KV event batch: malformed msgpack (") +
                    e.what() + ")");
  }
}

}  // namespace hkv
