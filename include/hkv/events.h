// KV events: what entered and left the prefix cache, in the reference
// system's BlockStored / BlockRemoved / AllBlocksCleared schema, so that a
// router can mirror every engine's cache.
//
// Thread-safety: plain value types.
//
// Example:
//   for (const KvEvent& e : cache.TakeEvents())
//     if (auto* stored = std::get_if<BlockStored>(&e)) ...
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "hkv/keys.h"
#include "hkv/types.h"

namespace hkv {

// A multimodal item in an event's extra keys: its identifier and its start
// relative to the block's first token.
struct EventItemOffset {
  std::string identifier;
  std::int64_t offset = 0;

  friend bool operator==(const EventItemOffset&,
                         const EventItemOffset&) = default;
};

// One element of a block's extra keys in a KV event: untagged, as spec §6.1
// has them (unlike the tagged tuples the key digests, keys.h): the LoRA
// name or the cache salt as text, a multimodal item's identifier and
// offset, or a prompt-embeddings digest. A LoRA path is not reported.
using EventExtraKey = std::variant<std::string, EventItemOffset, EmbedsDigest>;

// The event form of a unit's extra keys, in the same order.
std::vector<EventExtraKey> EventExtraKeys(std::span<const ExtraKey> keys);

// A run of consecutive blocks of one request became reusable. For a partial
// entry the run is the single hash unit ending at the entry's boundary.
struct BlockStored {
  std::vector<BlockHash> block_hashes = {};
  std::optional<BlockHash> parent_block_hash = std::nullopt;  // none at 0
  // The run's tokens (none for a request keyed by its caller).
  std::vector<TokenId> token_ids = {};
  std::uint32_t block_size = 0;  // tokens per hash in block_hashes
  std::optional<std::uint32_t> lora_id = std::nullopt;
  std::optional<std::string> lora_name = std::nullopt;
  // One entry per hash: its block's extra keys, or none.
  std::vector<std::optional<std::vector<EventExtraKey>>> extra_keys = {};
  GroupId group{0};
  // The run's first block: the prefix before it is first_block x
  // block_size tokens long (for a caller matching the run to its request).
  std::uint32_t first_block = 0;
  // The group's kind ("full_attention", ...) and, for sliding-window
  // groups, the window; none for pool-level events.
  std::optional<std::string> spec_kind = std::nullopt;
  std::optional<std::uint32_t> sliding_window = std::nullopt;
  std::string medium = "GPU";
  // The request's tokens between the end of the last run this request
  // announced in this group and this event's first token, when some were
  // not announced (masked by sparse retention, or null slots): a router can
  // chain the run to its prefix from them. The unit key before the span
  // (none at 0) and one extra-key entry per hash unit of the span.
  std::optional<BlockHash> skipped_parent_block_hash = std::nullopt;
  std::vector<TokenId> skipped_token_ids = {};
  std::vector<std::optional<std::vector<EventExtraKey>>> skipped_extra_keys =
      {};
};

// Keys left the cache (eviction, replacement by a longer entry); one hash per
// removed key.
struct BlockRemoved {
  std::vector<BlockHash> block_hashes = {};
  GroupId group{0};
  std::string medium = "GPU";
};

// ResetPrefixCache succeeded.
struct AllBlocksCleared {
  friend bool operator==(const AllBlocksCleared&,
                         const AllBlocksCleared&) = default;
};

using KvEvent = std::variant<BlockStored, BlockRemoved, AllBlocksCleared>;

}  // namespace hkv
