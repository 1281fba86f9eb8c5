// A byte string of everything a cache core exposes about its state, for the
// operation-sequence fuzzer's "a refused call leaves state unchanged" check:
// equal digests before and after a call mean nothing observable changed.
//
// It covers the pool (per block: reference count, primary entry, every key;
// the free queue in order; key generation, key count, eviction counter,
// cached blocks per group) and the block tables of the requests the caller
// names (the core cannot list them). Not covered: queued copies, pending
// events and stats (reading them takes them) and the recurrent groups'
// same-step guard.
//
// Minimal on purpose: a shared state digest of the cache can replace it.
//
// Thread-compatible. Example:
//   const std::string before = StateDigest(core, ids);
//   ... a call that throws UsageError ...
//   if (StateDigest(core, ids) != before) std::abort();
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cache/cache_core.h"

namespace hkv::fuzz {

class DigestWriter {
 public:
  template <typename T>
  requires std::is_trivially_copyable_v<T> DigestWriter& operator<<(
      const T& value) {
    const auto* bytes = reinterpret_cast<const char*>(&value);
    out_.append(bytes, sizeof value);
    return *this;
  }
  void Reserve(std::size_t bytes) { out_.reserve(bytes); }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

inline void DigestPool(const internal::BlockPool& pool, DigestWriter& out) {
  out << pool.num_blocks() << pool.num_free_blocks() << pool.key_generation()
      << pool.num_keys() << pool.stats().evicted_blocks;
  for (std::uint32_t i = 0; i < pool.num_blocks(); ++i) {
    const BlockId id{i};
    const std::vector<internal::PrefixKey> keys = pool.KeysOf(id);
    out << pool.ref_count(id) << pool.primary_num_tokens(id) << keys.size();
    for (const internal::PrefixKey& key : keys) {
      out << key.hash.bytes << key.group;
    }
  }
  const std::vector<BlockId> free_queue = pool.FreeQueueSnapshot();
  out << free_queue.size();
  for (const BlockId id : free_queue) out << id;
}

// The digest of `core` and of the block tables of `requests` (those holding
// no blocks are recorded as such). O(num_blocks + keys + tables).
inline std::string StateDigest(const internal::CacheCore& core,
                               std::span<const RequestId> requests) {
  DigestWriter out;
  out.Reserve(std::size_t{core.pool().num_blocks()} * 48);
  DigestPool(core.pool(), out);
  const std::vector<std::uint64_t> cached = core.CachedBlocksPerGroup();
  out << cached.size();
  for (const std::uint64_t n : cached) out << n;
  for (const RequestId id : requests) {
    out << id << core.HoldsBlocks(id);
    if (!core.HoldsBlocks(id)) continue;
    for (std::uint32_t g = 0; g < core.num_groups(); ++g) {
      const std::span<const BlockId> table = core.block_table(id, GroupId{g});
      out << table.size();
      for (const BlockId block : table) out << block;
    }
  }
  return out.Take();
}

}  // namespace hkv::fuzz
