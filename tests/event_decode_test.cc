// Reading KV event batches back (DecodeEventBatch): every batch the
// encoder writes decodes to the events it was given (a RapidCheck
// property), and hostile bytes get a named kCorruption, never a crash.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <msgpack.hpp>

#include "hkv/event_publisher.h"

namespace hkv {
namespace {

BlockHash GenHash(std::size_t digest_bytes, HashEncoding hashes) {
  BlockHash h;
  // Low64 keeps the digest's last 8 bytes only.
  const std::size_t first =
      hashes == HashEncoding::kBytes ? 0 : digest_bytes - 8;
  for (std::size_t i = first; i < digest_bytes; ++i) {
    h.bytes[i] = *rc::gen::arbitrary<std::uint8_t>();
  }
  return h;
}

std::vector<EventExtraKey> GenExtraKeys() {
  std::vector<EventExtraKey> keys;
  const int n = *rc::gen::inRange(0, 3);
  for (int i = 0; i < n; ++i) {
    switch (*rc::gen::inRange(0, 3)) {
      case 0:
        keys.emplace_back(*rc::gen::arbitrary<std::string>());
        break;
      case 1:
        keys.emplace_back(EventItemOffset{*rc::gen::arbitrary<std::string>(),
                                          *rc::gen::arbitrary<std::int64_t>()});
        break;
      default:
        keys.emplace_back(*rc::gen::arbitrary<EmbedsDigest>());
        break;
    }
  }
  return keys;
}

KvEvent GenEvent(std::size_t digest_bytes, HashEncoding hashes) {
  const auto hash = [&] { return GenHash(digest_bytes, hashes); };
  const auto optional_hash = [&]() -> std::optional<BlockHash> {
    if (*rc::gen::arbitrary<bool>()) return std::nullopt;
    return hash();
  };
  switch (*rc::gen::inRange(0, 3)) {
    case 0: {
      BlockStored e;
      const int n = *rc::gen::inRange(0, 4);
      for (int i = 0; i < n; ++i) {
        e.block_hashes.push_back(hash());
        e.extra_keys.emplace_back();
        if (*rc::gen::arbitrary<bool>()) e.extra_keys.back() = GenExtraKeys();
      }
      e.parent_block_hash = optional_hash();
      e.token_ids = *rc::gen::arbitrary<std::vector<TokenId>>();
      e.block_size = *rc::gen::arbitrary<std::uint32_t>();
      if (*rc::gen::arbitrary<bool>()) {
        e.lora_id = *rc::gen::arbitrary<std::uint32_t>();
      }
      if (*rc::gen::arbitrary<bool>()) {
        e.lora_name = *rc::gen::arbitrary<std::string>();
      }
      e.group = GroupId{*rc::gen::arbitrary<std::uint32_t>()};
      if (*rc::gen::arbitrary<bool>()) e.spec_kind = "sliding_window";
      if (*rc::gen::arbitrary<bool>()) {
        e.sliding_window = *rc::gen::arbitrary<std::uint32_t>();
      }
      e.medium = *rc::gen::element<std::string>("GPU", "CPU");
      e.skipped_token_ids = *rc::gen::arbitrary<std::vector<TokenId>>();
      if (!e.skipped_token_ids.empty()) {
        e.skipped_parent_block_hash = optional_hash();
        // Written only when some entry has keys: nil reads back as none.
        if (*rc::gen::arbitrary<bool>()) {
          e.skipped_extra_keys = {std::nullopt, GenExtraKeys()};
        }
      }
      return e;
    }
    case 1: {
      BlockRemoved e;
      const int n = *rc::gen::inRange(0, 4);
      for (int i = 0; i < n; ++i) e.block_hashes.push_back(hash());
      e.group = GroupId{*rc::gen::arbitrary<std::uint32_t>()};
      return e;
    }
    default:
      return AllBlocksCleared{};
  }
}

bool SameEvent(const KvEvent& a, const KvEvent& b) {
  if (a.index() != b.index()) return false;
  if (const auto* x = std::get_if<BlockStored>(&a)) {
    const auto& y = std::get<BlockStored>(b);
    return x->block_hashes == y.block_hashes &&
           x->parent_block_hash == y.parent_block_hash &&
           x->token_ids == y.token_ids && x->block_size == y.block_size &&
           x->lora_id == y.lora_id && x->lora_name == y.lora_name &&
           x->extra_keys == y.extra_keys && x->group == y.group &&
           x->spec_kind == y.spec_kind &&
           x->sliding_window == y.sliding_window && x->medium == y.medium &&
           x->skipped_parent_block_hash == y.skipped_parent_block_hash &&
           x->skipped_token_ids == y.skipped_token_ids &&
           x->skipped_extra_keys == y.skipped_extra_keys;
  }
  if (const auto* x = std::get_if<BlockRemoved>(&a)) {
    const auto& y = std::get<BlockRemoved>(b);
    return x->block_hashes == y.block_hashes && x->group == y.group &&
           x->medium == y.medium;
  }
  return true;
}

RC_GTEST_PROP(EventDecodeTest, EveryEncodedBatchDecodesToItsEvents, ()) {
  const KeyFunction function =
      *rc::gen::element(KeyFunction::kSha256Cbor, KeyFunction::kXxh3_128Cbor);
  const HashEncoding hashes =
      *rc::gen::element(HashEncoding::kBytes, HashEncoding::kLow64);
  std::vector<KvEvent> events;
  const int n = *rc::gen::inRange(0, 5);
  for (int i = 0; i < n; ++i) {
    events.push_back(GenEvent(DigestSize(function), hashes));
  }
  const double ts = *rc::gen::arbitrary<double>();
  const std::uint32_t rank = *rc::gen::arbitrary<std::uint32_t>();
  const std::string bytes =
      EncodeEventBatch(events, ts, rank, function, hashes);
  Result<DecodedBatch> decoded = DecodeEventBatch(bytes, function, hashes);
  RC_ASSERT(decoded.has_value());
  RC_ASSERT(decoded->data_parallel_rank == rank);
  RC_ASSERT((decoded->timestamp_s == ts ||
             (std::isnan(ts) && std::isnan(decoded->timestamp_s))));
  RC_ASSERT(decoded->events.size() == events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    RC_ASSERT(SameEvent(decoded->events[i], events[i]));
  }
  // Every cut of the batch is refused, never misread.
  const std::size_t cut = *rc::gen::inRange<std::size_t>(0, bytes.size());
  RC_ASSERT(!DecodeEventBatch(bytes.substr(0, cut), function, hashes));
}

// The batch with every event as the reference engine writes it since its
// PR #42892: a map of field names, the tag under "type", nil fields left
// out (msgspec's omit_defaults), the names in a shuffled order, and a name
// of a later schema added.
std::string AsMaps(const std::string& array_batch) {
  static const std::vector<std::string> stored = {
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
  static const std::vector<std::string> removed = {
      "block_hashes", "medium", "group_idx", "locality", "ownership"};
  const msgpack::object_handle handle =
      msgpack::unpack(array_batch.data(), array_batch.size());
  const msgpack::object& batch = handle.get();
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> out(buffer);
  // The batch itself a map too (the upstream engine's, since its
  // EventBatch lost array_like), with a name of a later schema, or not.
  const bool batch_map = *rc::gen::arbitrary<bool>();
  if (batch_map) {
    out.pack_map(batch.via.array.size + 1);
    out.pack(std::string("later_field"));
    out.pack_array(0);
    out.pack(std::string("ts"));
  } else {
    out.pack_array(batch.via.array.size);
  }
  out.pack(batch.via.array.ptr[0]);
  if (batch_map) out.pack(std::string("events"));
  const msgpack::object& events = batch.via.array.ptr[1];
  out.pack_array(events.via.array.size);
  for (std::uint32_t i = 0; i < events.via.array.size; ++i) {
    const msgpack::object& e = events.via.array.ptr[i];
    const std::string tag = e.via.array.ptr[0].as<std::string>();
    const std::vector<std::string>& names =
        tag == "BlockStored" ? stored : removed;
    std::vector<std::pair<std::string, const msgpack::object*>> fields;
    for (std::uint32_t f = 1; f < e.via.array.size; ++f) {
      if (!e.via.array.ptr[f].is_nil()) {
        fields.emplace_back(names[f - 1], &e.via.array.ptr[f]);
      }
    }
    fields.emplace_back("future_field", nullptr);  // a later schema's
    const auto order = *rc::gen::unique<std::vector<std::size_t>>(
        fields.size() + 1, rc::gen::inRange<std::size_t>(0, fields.size() + 1));
    out.pack_map(static_cast<std::uint32_t>(fields.size() + 1));
    for (std::size_t k : order) {
      if (k == fields.size()) {
        out.pack(std::string("type"));
        out.pack(tag);
      } else if (fields[k].second == nullptr) {
        out.pack(fields[k].first);
        out.pack(std::string("a field of a later schema"));
      } else {
        out.pack(fields[k].first);
        out.pack(*fields[k].second);
      }
    }
  }
  for (std::uint32_t i = 2; i < batch.via.array.size; ++i) {
    if (batch_map) out.pack(std::string("data_parallel_rank"));
    out.pack(batch.via.array.ptr[i]);
  }
  return {buffer.data(), buffer.size()};
}

RC_GTEST_PROP(EventDecodeTest, MapEncodedEventsDecodeAsTheirArrays, ()) {
  const KeyFunction function =
      *rc::gen::element(KeyFunction::kSha256Cbor, KeyFunction::kXxh3_128Cbor);
  const HashEncoding hashes =
      *rc::gen::element(HashEncoding::kBytes, HashEncoding::kLow64);
  std::vector<KvEvent> events;
  const int n = *rc::gen::inRange(0, 5);
  for (int i = 0; i < n; ++i) {
    events.push_back(GenEvent(DigestSize(function), hashes));
  }
  const std::string bytes =
      AsMaps(EncodeEventBatch(events, 1.5, 3, function, hashes));
  Result<DecodedBatch> decoded = DecodeEventBatch(bytes, function, hashes);
  RC_ASSERT(decoded.has_value());
  RC_ASSERT(decoded->events.size() == events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    RC_ASSERT(SameEvent(decoded->events[i], events[i]));
  }
  const std::size_t cut = *rc::gen::inRange<std::size_t>(0, bytes.size());
  RC_ASSERT(!DecodeEventBatch(bytes.substr(0, cut), function, hashes));
}

std::string Packed(
    const std::function<void(msgpack::packer<msgpack::sbuffer>&)>& write) {
  msgpack::sbuffer buffer;
  msgpack::packer<msgpack::sbuffer> out(buffer);
  write(out);
  return {buffer.data(), buffer.size()};
}

std::string Message(const std::string& bytes) {
  Result<DecodedBatch> decoded =
      DecodeEventBatch(bytes, KeyFunction::kSha256Cbor, HashEncoding::kBytes);
  EXPECT_FALSE(decoded.has_value());
  if (decoded) return "";
  EXPECT_EQ(decoded.error().code, ErrorCode::kCorruption);
  return decoded.error().message;
}

TEST(EventDecodeTest, BadBatchesAreNamed) {
  using P = msgpack::packer<msgpack::sbuffer>;
  EXPECT_EQ(Message(""), "bad KV event batch: truncated");
  EXPECT_EQ(Message(Packed([](P& p) { p.pack_uint32(7); })),
            "bad KV event batch: a batch is neither an array nor a map");
  EXPECT_EQ(Message(Packed([](P& p) {
              p.pack_array(3);
              p.pack_double(0);
              p.pack_array(1);
              p.pack_array(1);
              p.pack(std::string("BlockMoved"));
              p.pack_uint32(0);
            })),
            "bad KV event batch: unknown event tag \"BlockMoved\"");
  EXPECT_EQ(Message(Packed([](P& p) {
              p.pack_array(3);
              p.pack_double(0);
              p.pack_array(1);
              p.pack_array(3);
              p.pack(std::string("BlockRemoved"));
              p.pack_array(1);
              p.pack_bin(3);
              p.pack_bin_body("abc", 3);
              p.pack(std::string("GPU"));
              p.pack_uint32(0);
            })),
            "bad KV event batch: a block hash is not 32 bytes");
  EXPECT_EQ(Message(Packed([](P& p) {
              p.pack_array(2);
              p.pack(std::string("ts"));
              p.pack_array(0);
            })),
            "bad KV event batch: ts is not a number");
  EXPECT_EQ(Message(EncodeEventBatch({}, 0, 0, KeyFunction::kSha256Cbor,
                                     HashEncoding::kBytes) +
                    "x"),
            "bad KV event batch: bytes follow the batch");
  // A map-encoded batch: no "events", a name twice, a name not a string.
  EXPECT_EQ(Message(Packed([](P& p) {
              p.pack_map(1);
              p.pack(std::string("ts"));
              p.pack_double(0);
            })),
            "bad KV event batch: a batch map has no \"events\"");
  EXPECT_EQ(Message(Packed([](P& p) {
              p.pack_map(2);
              p.pack(std::string("ts"));
              p.pack_double(0);
              p.pack(std::string("ts"));
              p.pack_double(0);
            })),
            "bad KV event batch: a batch names field \"ts\" twice");
  EXPECT_EQ(Message(Packed([](P& p) {
              p.pack_map(1);
              p.pack_uint32(1);
              p.pack_uint32(2);
            })),
            "bad KV event batch: a batch's field name is not a string");
  // Map-encoded events: no "type", a name twice, a name not a string.
  const auto map_event = [](const std::function<void(P&)>& body) {
    return Message(Packed([&](P& p) {
      p.pack_array(3);
      p.pack_double(0);
      p.pack_array(1);
      body(p);
      p.pack_uint32(0);
    }));
  };
  EXPECT_EQ(map_event([](P& p) {
              p.pack_map(1);
              p.pack(std::string("block_hashes"));
              p.pack_array(0);
            }),
            "bad KV event batch: an event map has no \"type\"");
  EXPECT_EQ(map_event([](P& p) {
              p.pack_map(2);
              p.pack(std::string("type"));
              p.pack(std::string("AllBlocksCleared"));
              p.pack(std::string("type"));
              p.pack(std::string("AllBlocksCleared"));
            }),
            "bad KV event batch: an event names field \"type\" twice");
  EXPECT_EQ(map_event([](P& p) {
              p.pack_map(1);
              p.pack_uint32(7);
              p.pack_uint32(7);
            }),
            "bad KV event batch: an event's field name is not a string");
  EXPECT_EQ(map_event([](P& p) {
              p.pack_map(1);
              p.pack(std::string("type"));
              p.pack(std::string("BlockStored"));
            }),
            "bad KV event batch: block_hashes is not an array");
  // An array of 2^32 - 1 items in 5 bytes: refused before any allocation.
  EXPECT_EQ(Message(std::string("\xdd\xff\xff\xff\xff", 5)),
            "bad KV event batch: malformed msgpack (array size overflow)");
}

}  // namespace
}  // namespace hkv
