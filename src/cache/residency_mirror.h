// What one engine's prefix cache holds, rebuilt from its KV events, and the
// lookup the engine itself would make against it: the same group managers
// and coordinator as the cache core (shared code), over a block pool whose
// blocks each hold one mirrored key. An engine may hold one key in several
// blocks (two requests computed the same prefix) and announces and removes
// each, so every stored key takes a block of its own: the least recently
// stored one's when none is free (LRU past the capacity). A removal frees
// one block holding the key, to the front of the free queue; the key stays
// while another holds it.
//
// Forgetting a key (LRU, a clear) can only shorten a lookup's answer, never
// lengthen it past what the engine holds, provided every removal the
// engine published was applied.
//
// Memory follows the keys held: the tables start at kInitialKeys blocks
// (kilobytes) and are rebuilt twice as large, keys re-stored oldest first,
// when a store would otherwise evict below the capacity (amortized O(1) a
// store; the one store that rebuilds is O(keys held)); a clear shrinks
// them back.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cache/cache_geometry.h"
#include "cache/coordinator.h"
#include "core/block_pool.h"
#include "hkv/cache_config.h"
#include "hkv/cache_hit.h"

namespace hkv::internal {

class ResidencyMirror {
 public:
  // REQUIRES (else UsageError): config.Validate() succeeds; 1 <= capacity
  // <= kMaxPoolBlocks - 1. The config's pools and block count are not used.
  ResidencyMirror(const CacheConfig& config, std::uint32_t capacity);
  ResidencyMirror(const ResidencyMirror&) = delete;
  ResidencyMirror& operator=(const ResidencyMirror&) = delete;

  static constexpr std::uint32_t kInitialKeys = 1024;

  std::uint32_t num_groups() const {
    return static_cast<std::uint32_t>(keys_per_group_.size());
  }
  // Registers one more copy of the key. REQUIRES: the group exists.
  void Store(const PrefixKey& key);
  // Forgets one copy of the key; returns whether one was held.
  bool Remove(const PrefixKey& key);
  void Clear();

  // The engine's lookup for a request with these unit keys, at most
  // `max_length` tokens: num_tokens is the hybrid-correct hit, chain_tokens
  // full attention's chain.
  CacheHit FindLongestHit(std::span<const BlockHash> keys,
                          std::uint32_t max_length) const {
    return tables_->coordinator.FindLongestHit(keys, max_length);
  }

  std::size_t num_keys() const { return tables_->pool.num_keys(); }
  // Keys the tables hold before they grow (at most the capacity).
  std::uint32_t table_keys() const { return table_keys_; }
  // Keys held per group, copies counted.
  const std::vector<std::uint64_t>& keys_per_group() const {
    return keys_per_group_;
  }
  // Keys forgotten to make room (LRU).
  std::uint64_t evicted_keys() const {
    return evicted_before_ + tables_->pool.stats().evicted_blocks;
  }
  std::size_t MemoryBytes() const { return tables_->pool.MemoryBytes(); }

 private:
  // A pool of `keys` blocks (one key each, plus the null block) and the
  // group managers and coordinator over it.
  struct Tables {
    Tables(const CacheConfig& config, const CacheGeometry& geometry,
           std::uint32_t keys);
    BlockPool pool;
    std::vector<std::unique_ptr<GroupManager>> managers;
    Coordinator coordinator;
  };
  // Takes a block for the key: a free one, else the least recently
  // stored key's.
  static void Put(Tables& tables, const PrefixKey& key);
  // The tables rebuilt for min(2 x, capacity) keys, every key re-stored
  // oldest first.
  void Grow();

  CacheConfig config_;
  CacheGeometry geometry_;
  std::uint32_t capacity_;
  std::uint32_t table_keys_;
  std::unique_ptr<Tables> tables_;
  std::uint64_t evicted_before_ = 0;  // by tables since replaced
  std::vector<std::uint64_t> keys_per_group_;
};

}  // namespace hkv::internal
