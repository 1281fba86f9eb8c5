// The scheduler-facing KV-cache manager: prefix lookup, all-or-nothing block
// allocation, commit of reusable prefixes, free, copy-on-write list, stats.
//
// It manages block ids and metadata, never tensors. A step of an engine's
// scheduler drives it as:
//   hit = Lookup(r)                       // new or preempted requests only
//   Allocate(r, {.num_new_tokens = n, .hit = &hit})   // std::nullopt: no room
//   engine runs TakeCopies(), then the model
//   Commit(r, computed)                   // at the chunk's end: reusable now
//   FinishStep()                          // releases copied blocks' pins
//   Free(r.id())                          // when the request finishes
//
// Thread-compatible: one scheduler thread; callers serialize all calls.
// A refused call (UsageError) leaves state unchanged. A failed allocation
// (std::nullopt) changes nothing but releasing, as the allocation would have,
// the blocks that fell out of the request's windows.
//
// Example:
//   Result<CacheManager> cache = CacheManager::Create(
//       {.groups = {{.block_size = 16}}, .num_blocks = 1024});
//   Request r({.id = RequestId{1}}, prompt, cache->key_scheme());
//   CacheHit hit = cache->Lookup(r);
//   if (auto blocks = cache->Allocate(r, {.num_new_tokens =
//           r.num_tokens() - hit.num_tokens, .hit = &hit})) { ... }
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "hkv/allocation.h"
#include "hkv/cache_config.h"
#include "hkv/cache_hit.h"
#include "hkv/cache_stats.h"
#include "hkv/events.h"
#include "hkv/key_source.h"
#include "hkv/keys.h"
#include "hkv/request.h"
#include "hkv/result.h"
#include "hkv/types.h"

namespace hkv {

// A prefix-cache entry along a request's prefix: a block's contents up to
// `end_tokens` tokens of the request (a page, a partial page at the
// prompt's tail, a recurrent state after that many tokens), registered
// under the request's key of its first end_tokens tokens in `group`.
struct CachedEntry {
  GroupId group{0};
  BlockId block{0};
  std::uint32_t end_tokens = 0;
  friend bool operator==(const CachedEntry&, const CachedEntry&) = default;
};

class CacheManager {
 public:
  // Fails with the config's validation error.
  [[nodiscard]] static Result<CacheManager> Create(const CacheConfig& config);
  CacheManager(CacheManager&&) noexcept;
  CacheManager& operator=(CacheManager&&) noexcept;
  ~CacheManager();

  // The scheme requests must be keyed with.
  const KeyScheme& key_scheme() const;
  std::uint32_t num_groups() const;

  // The longest prefix of `request` every group can resume from, at most
  // num_tokens - 1 (the last token is always recomputed). Pure.
  // O(hit blocks) expected.
  CacheHit Lookup(const Request& request) const;

  // Lookup for a request its caller keys, before it is built: `id` is the
  // id it will have (the hit adopts into that request only), `num_tokens`
  // its tokens, `keys` one per complete hash unit, read only as far as the
  // lookup probes them (a warm 128k-token prompt: a few hundred of 8,192).
  // The same hit Lookup gives the request built with these keys. REQUIRES
  // (else UsageError, nothing read): keys.size() == num_tokens / hash unit;
  // num_tokens at most kMaxTokensPerRequest. What keys.Read throws passes
  // through. Pure.
  CacheHit LookupKeys(RequestId id, std::uint32_t num_tokens,
                      const KeySource& keys,
                      CacheRead cache_read = CacheRead::kAllowed) const;

  // Adopts `args.hit` (first allocation only) and takes blocks so the
  // request's tables cover num_computed + hit + new + lookahead tokens
  // (capped at max_model_len), all groups or none. Returns std::nullopt when
  // free blocks are short.
  // REQUIRES (else UsageError, nothing changed): request keyed with
  // key_scheme(); new tokens, external tokens or a hit; num_computed +
  // hit + external + new tokens at most max_model_len, lookahead tokens at
  // most max_model_len; num_computed_tokens at most what the request's
  // blocks cover (0 for a request holding none); in-flight tokens at most
  // the computed ones; a hit only for a request holding no blocks, with
  // num_computed_tokens 0, made by this cache's Lookup (or TruncateHit) for
  // this request (same id, and the tokens it was looked up for still its
  // prefix), one block list per group covering it, and still cached: a hit
  // whose blocks lost keys since the lookup must equal a fresh lookup;
  // external tokens only after a hit ending on a scheduler block
  // (TruncateHit: a copied sub-block tail and a connector's load must not
  // both write one block, spec §9 item 20). O(new blocks + hit blocks).
  std::optional<NewBlocks> Allocate(const Request& request,
                                    const AllocationRequest& args);

  // `hit` cut to its first `num_tokens` tokens, for a connector that loads
  // the rest: each group keeps the blocks covering them (a recurrent group
  // then has no state at num_tokens: the connector supplies it). REQUIRES:
  // a hit this cache's Lookup made, num_tokens <= hit.num_tokens, a
  // multiple of the scheduler block. Pure.
  CacheHit TruncateHit(const CacheHit& hit, std::uint32_t num_tokens) const;

  // How many of chunk.num_new_tokens to schedule so that aligned recurrent
  // groups keep usable states: chunks end on block boundaries, at the
  // prompt's checkpoint and at a shared-prefix junction (spec §7.3). Models
  // without such groups get chunk.num_new_tokens back. REQUIRES:
  // chunk.num_computed_tokens at most the request's tokens, and with
  // chunk.num_new_tokens below 2^32. Pure.
  std::uint32_t SplitPrefill(const Request& request,
                             const PrefillChunk& chunk) const;

  // Registers the reusable prefixes of the first `num_computed_tokens`
  // tokens (capped at the request's token count): full blocks (window blocks
  // and states as the retention keeps them), the prompt's partial tail when
  // hash units are finer than blocks, and recurrent checkpoints. Call it at
  // the end of each computed chunk: a recurrent group's state exists only
  // there. Committing the count committed last again registers nothing.
  // REQUIRES: request keyed with key_scheme(), holding blocks covering the
  // tokens; the (capped) count not below the request's last commit, nor
  // below the hit it adopted: a state or tail written past it is not the
  // one there. Under Behaviour::kEngine such a count registers nothing, as
  // the engine's cache_blocks does after its scheduler rolls a request
  // back past blocks that failed to load.
  void Commit(const Request& request, std::uint32_t num_computed_tokens);

  // Releases the request's blocks, last first; cached ones stay findable
  // until evicted. REQUIRES: the request holds blocks.
  void Free(RequestId id);

  // Copies queued by allocations since the last call; the engine runs them
  // before the step. Their endpoints stay pinned until FinishStep().
  std::vector<BlockCopy> TakeCopies();

  // Rebalancing pools: the memory moved since the last call. Before the
  // step's forward pass the engine unmaps the parked ids' slots and maps
  // the unparked ones' (docs/beyond.md). Empty unless pools rebalance.
  PoolMoves TakePoolMoves();

  // The step that ran the taken copies is done: unpin their endpoints. What
  // was registered before this call counts as computed from now on.
  void FinishStep();

  // Drops every cached prefix. Returns false and changes nothing while any
  // request holds blocks.
  bool ResetPrefixCache();

  // Events recorded since the last call, oldest first; BlockStored events
  // carry their group's kind.
  std::vector<KvEvent> TakeEvents();

  // Returns and clears the counters.
  PrefixCacheStats TakeStats();
  // Counters since construction.
  PoolCounters counters() const;
  // Fraction of usable blocks in use: 1 - free / usable, the usable ones
  // being num_blocks - 1 unless pools rebalance.
  double usage() const;
  // Block ids run from 0 below this: num_blocks, or more when pools
  // rebalance (each group's range sized for the whole arena).
  std::uint32_t num_block_ids() const;
  // Blocks on the free queue (cached ones included).
  std::uint32_t num_free_blocks() const;
  // Blocks currently holding at least one key, per group (index = group
  // id). O(num_blocks).
  std::vector<std::uint64_t> CachedBlocksPerGroup() const;
  // Every key in the prefix cache with its group, once per block holding
  // it, in block order: what a mirror fed by this cache's KV events holds.
  // O(num_blocks + keys).
  std::vector<std::pair<GroupId, BlockHash>> CachedKeys() const;
  // For an offload connector (hkv/tier_connector.h): whether some block
  // holds `key` in `group`. O(1) expected.
  bool HoldsEntry(GroupId group, const BlockHash& key) const;
  // The entries the cache holds along the request's prefix, by group, then
  // position: for each of its hash-unit boundaries and each group, a block
  // holding the request's key there (its own or another request's), what
  // an offload tier stores for the request. Valid until the next mutating
  // call. REQUIRES: the request keyed with key_scheme().
  // O(tokens / hash unit x groups).
  std::vector<CachedEntry> CachedEntries(const Request& request) const;
  // An engine's views of its blocks (the reference engine's block pool shows
  // these to its connectors, metrics and tests). REQUIRES: ids below
  // num_block_ids(), groups below num_groups() (else UsageError).
  // The references on a block: block tables holding it, pending copies.
  std::uint32_t ref_count(BlockId id) const;
  // The group and key a block is cached under (its first key), if any.
  std::optional<std::pair<GroupId, BlockHash>> BlockKey(BlockId id) const;
  // The free queue, the next block to be allocated first. O(free blocks).
  std::vector<BlockId> FreeQueue() const;
  // The first-inserted block cached under `key` in `group`. O(1) expected.
  std::optional<BlockId> FindCached(GroupId group, const BlockHash& key) const;
  // (key, block) registrations in the prefix index, all groups together.
  std::size_t num_cached_entries() const;
  // Drops every key of each block (one BlockRemoved event per key), as the
  // reference's evict_blocks does for blocks a connector failed to load;
  // the blocks stay where they are. Checked before any is evicted.
  void EvictBlocks(std::span<const BlockId> ids);
  // The leading blocks of the request's table in `group` that every request
  // holding blocks holds (for cascade attention); 0 for groups that do not
  // read the whole prefix. REQUIRES: the request holds blocks.
  std::uint32_t NumCommonPrefixBlocks(RequestId id, GroupId group) const;
  // Releases the blocks of the request's tables that no step reads once
  // `num_computed_tokens` are computed (out of a window, states superseded),
  // as an allocation does first; the reference engine's scheduler calls it
  // before it hands a finished transfer's table to a connector. A no-op for
  // a request holding no blocks.
  void RemoveSkippedBlocks(RequestId id, std::uint32_t num_computed_tokens);

  // The request's block table in `group`, valid until the next mutating
  // call. REQUIRES: the request holds blocks.
  std::span<const BlockId> block_table(RequestId id, GroupId group) const;

 private:
  struct Impl;
  explicit CacheManager(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hkv
