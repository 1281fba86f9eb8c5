// Vocabulary types shared by every hkv header: strong ids, block hashes and
// the free-queue order.
//
// Thread-safety: plain value types.
//
// Example:
//   BlockId id{7};
//   if (id == kNullBlock) ...
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace hkv {

// A token id as the tokenizer produced it.
using TokenId = std::uint32_t;

// Physical KV-cache block id, 0 .. num_blocks-1. Id 0 is the null block: a
// permanent placeholder for "no page here" in a block table.
enum class BlockId : std::uint32_t {};
inline constexpr BlockId kNullBlock{0};

// Index of a cache group (a set of layers sharing one block table).
enum class GroupId : std::uint32_t {};

// The scheduler's request id.
enum class RequestId : std::uint64_t {};

// A chained prefix key: the digest of one hash unit and everything before it.
// Digests shorter than 32 bytes (XXH3-128) occupy the leading bytes; the rest
// stays zero.
struct BlockHash {
  std::array<std::uint8_t, 32> bytes{};

  friend bool operator==(const BlockHash&, const BlockHash&) = default;

  // Lowercase hex of the first `num_bytes` bytes.
  std::string Hex(std::size_t num_bytes = 32) const;
};

// A copy-on-write: copy `source` to `destination` before the step that reads
// `destination`.
struct BlockCopy {
  BlockId source;
  BlockId destination;
  GroupId group;

  friend bool operator==(const BlockCopy&, const BlockCopy&) = default;
};

// Memory moved between rebalancing pools (CacheConfig::pool_slot_bytes)
// since the engine last asked: the `parked` ids gave up their memory, the
// `unparked` ids take it, each list in ascending id order. An id parked and
// unparked again in between appears in neither.
struct PoolMoves {
  std::vector<BlockId> parked;
  std::vector<BlockId> unparked;

  bool empty() const { return parked.empty() && unparked.empty(); }
};

// Where a free puts the blocks whose reference count drops to 0 (spec §1.3).
// Keyed blocks always go to the back of the free queue, in the order freed,
// and stay findable until they are evicted from its front.
enum class FreeOrder {
  // Blocks without a key go to the front, keeping their order: they are
  // reused first (the reference fork's order).
  kPrependUncached,
  // Every block goes to the back (upstream vLLM and older fork commits), so
  // a differential run against such an engine matches block for block.
  kAppendAll,
};

constexpr std::uint32_t ToIndex(BlockId id) {
  return static_cast<std::uint32_t>(id);
}
constexpr std::uint32_t ToIndex(GroupId id) {
  return static_cast<std::uint32_t>(id);
}

}  // namespace hkv

template <>
struct std::hash<hkv::BlockHash> {
  // Digests are uniformly distributed already: their first 8 bytes suffice.
  std::size_t operator()(const hkv::BlockHash& h) const noexcept {
    std::uint64_t v;
    std::memcpy(&v, h.bytes.data(), sizeof v);
    return static_cast<std::size_t>(v);
  }
};
