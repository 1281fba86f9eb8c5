// The msgpack encoding of event batches (hkv/event_publisher.h).
#include <cstring>
#include <msgpack.hpp>
#include <variant>

#include "hkv/event_publisher.h"

namespace hkv {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

class BatchWriter {
 public:
  BatchWriter(Packer& out, std::size_t digest_bytes, HashEncoding hashes)
      : out_(out), digest_bytes_(digest_bytes), hashes_(hashes) {}

  void Event(const KvEvent& event) {
    std::visit([this](const auto& e) { Write(e); }, event);
  }

 private:
  void Text(std::string_view text) {
    out_.pack_str(static_cast<std::uint32_t>(text.size()));
    out_.pack_str_body(text.data(), static_cast<std::uint32_t>(text.size()));
  }

  void Bytes(const std::uint8_t* data, std::size_t size) {
    out_.pack_bin(static_cast<std::uint32_t>(size));
    out_.pack_bin_body(reinterpret_cast<const char*>(data),
                       static_cast<std::uint32_t>(size));
  }

  void Hash(const BlockHash& hash) {
    if (hashes_ == HashEncoding::kBytes) {
      Bytes(hash.bytes.data(), digest_bytes_);
      return;
    }
    // The low 64 bits of the big-endian value: its last 8 bytes.
    std::uint64_t low = 0;
    for (std::size_t i = digest_bytes_ - 8; i < digest_bytes_; ++i) {
      low = (low << 8) | hash.bytes[i];
    }
    out_.pack_uint64(low);
  }

  void OptionalHash(const std::optional<BlockHash>& hash) {
    if (hash) {
      Hash(*hash);
    } else {
      out_.pack_nil();
    }
  }

  void Hashes(const std::vector<BlockHash>& hashes) {
    out_.pack_array(static_cast<std::uint32_t>(hashes.size()));
    for (const BlockHash& h : hashes) Hash(h);
  }

  void Tokens(const std::vector<TokenId>& tokens) {
    out_.pack_array(static_cast<std::uint32_t>(tokens.size()));
    for (TokenId t : tokens) out_.pack_uint32(t);
  }

  void ExtraKey(const EventExtraKey& key) {
    if (const auto* text = std::get_if<std::string>(&key)) {
      Text(*text);
    } else if (const auto* item = std::get_if<EventItemOffset>(&key)) {
      out_.pack_array(2);
      Text(item->identifier);
      out_.pack_int64(item->offset);
    } else {
      const EmbedsDigest& digest = std::get<EmbedsDigest>(key);
      Bytes(digest.data(), digest.size());
    }
  }

  // nil when no block has extra keys, else one entry per block.
  void ExtraKeys(
      const std::vector<std::optional<std::vector<EventExtraKey>>>& keys) {
    const bool any = std::any_of(keys.begin(), keys.end(),
                                 [](const auto& k) { return k.has_value(); });
    if (!any) {
      out_.pack_nil();
      return;
    }
    out_.pack_array(static_cast<std::uint32_t>(keys.size()));
    for (const auto& entry : keys) {
      if (!entry) {
        out_.pack_nil();
        continue;
      }
      out_.pack_array(static_cast<std::uint32_t>(entry->size()));
      for (const EventExtraKey& key : *entry) ExtraKey(key);
    }
  }

  void Write(const BlockStored& e) {
    const bool skipped = !e.skipped_token_ids.empty();
    const bool window = e.sliding_window.has_value();
    const bool kind = window || e.spec_kind.has_value();
    // Tag and seven required fields, then extra_keys and group_idx (always
    // known), then as far as the last field set.
    const std::uint32_t fields = skipped ? 18 : window ? 12 : kind ? 11 : 10;
    out_.pack_array(fields);
    Text("BlockStored");
    Hashes(e.block_hashes);
    OptionalHash(e.parent_block_hash);
    Tokens(e.token_ids);
    out_.pack_uint32(e.block_size);
    if (e.lora_id) {
      out_.pack_uint32(*e.lora_id);
    } else {
      out_.pack_nil();
    }
    Text(e.medium);
    if (e.lora_name) {
      Text(*e.lora_name);
    } else {
      out_.pack_nil();
    }
    ExtraKeys(e.extra_keys);
    out_.pack_uint32(ToIndex(e.group));
    if (fields == 10) return;
    if (e.spec_kind) {
      Text(*e.spec_kind);
    } else {
      out_.pack_nil();
    }
    if (fields == 11) return;
    if (window) {
      out_.pack_uint32(*e.sliding_window);
    } else {
      out_.pack_nil();
    }
    if (fields == 12) return;
    out_.pack_nil();  // locality
    out_.pack_nil();  // ownership
    out_.pack_nil();  // session_id
    OptionalHash(e.skipped_parent_block_hash);
    Tokens(e.skipped_token_ids);
    ExtraKeys(e.skipped_extra_keys);
  }

  void Write(const BlockRemoved& e) {
    out_.pack_array(4);
    Text("BlockRemoved");
    Hashes(e.block_hashes);
    Text(e.medium);
    out_.pack_uint32(ToIndex(e.group));
  }

  void Write(const AllBlocksCleared&) {
    out_.pack_array(1);
    Text("AllBlocksCleared");
  }

  Packer& out_;
  std::size_t digest_bytes_;
  HashEncoding hashes_;
};

}  // namespace

std::string EncodeEventBatch(std::span<const KvEvent> events,
                             double timestamp_s,
                             std::uint32_t data_parallel_rank,
                             KeyFunction key_function, HashEncoding hashes) {
  msgpack::sbuffer buffer;
  Packer out(buffer);
  out.pack_array(3);
  // Always a float64 (0xcb and 8 bytes, big-endian), as the reference's
  // encoder writes it: the packer would write a whole number as an integer.
  std::uint64_t bits = 0;
  std::memcpy(&bits, &timestamp_s, sizeof bits);
  char ts[9] = {static_cast<char>(0xcb)};
  for (int i = 8; i >= 1; --i) {
    ts[i] = static_cast<char>(bits & 0xff);
    bits >>= 8;
  }
  buffer.write(ts, sizeof ts);
  out.pack_array(static_cast<std::uint32_t>(events.size()));
  BatchWriter writer(out, DigestSize(key_function), hashes);
  for (const KvEvent& event : events) writer.Event(event);
  out.pack_uint32(data_parallel_rank);
  return std::string(buffer.data(), buffer.size());
}

}  // namespace hkv
