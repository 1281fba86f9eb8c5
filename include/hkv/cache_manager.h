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
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "hkv/events.h"
#include "hkv/group_kind.h"
#include "hkv/keys.h"
#include "hkv/limits.h"
#include "hkv/request.h"
#include "hkv/result.h"
#include "hkv/types.h"

namespace hkv {

// Which recurrent states the kernel leaves behind: in kAlign only at the end
// of each scheduled chunk (the scheduler aligns chunks so that reusable
// states exist); in kAll at every block boundary. kNone caches no state: the
// group never limits a hit, and a request holds its current state (plus
// speculative blocks) only.
enum class RecurrentMode { kAlign, kAll, kNone };

// Whether the group's layers feed a draft model (EAGLE/MTP) that must
// recompute the last hash unit of a hit.
enum class Speculation { kNone, kEagle };

// How a group's pages spread over decode-context-parallel ranks: sharded
// pages hold block_size tokens on each of `dcp` ranks, so one block covers
// block_size x dcp tokens; replicated pages are whole on every rank.
enum class DcpLayout { kSharded, kReplicated };

struct GroupSpec {
  GroupKind kind = GroupKind::kFullAttention;
  std::uint32_t block_size = 16;  // tokens per page on one rank
  Speculation speculation = Speculation::kNone;
  std::uint32_t sliding_window = 0;  // W, for kSlidingWindow
  // kFullAttention, 0: none. Decode reads the whole prompt but only the
  // last `output_window` tokens after it (R-SWA): output blocks that fall
  // out of it are released. Lookups are those of full attention.
  std::uint32_t output_window = 0;
  std::uint32_t chunk_size = 0;                // C, for kChunkedLocal
  DcpLayout dcp_layout = DcpLayout::kSharded;  // recurrent: never sharded
  RecurrentMode recurrent_mode = RecurrentMode::kAlign;  // kRecurrent
  // State blocks for speculative tokens, kept after the current state.
  std::uint32_t speculative_blocks = 0;  // kRecurrent
  std::uint32_t scratch_blocks = 0;      // kScratch: blocks per request
  // kRecurrent kAlign, 0 or 1: 1 when the kernel can also leave the state
  // at the prompt's checkpoint from inside the prompt's last chunk (an
  // extra block; NewBlocks::state_exports says where). Chunks then need not
  // stop there.
  std::uint32_t checkpoint_blocks = 0;
};

// Whether a group's blocks can serve prefix hits (all but scratch groups and
// recurrent kNone).
bool IsPrefixCacheable(const GroupSpec& group);

// Tokens one block of `group` covers: block_size times the DCP width for
// sharded attention groups; recurrent states are never sharded.
std::uint64_t TokensPerBlock(const GroupSpec& group, std::uint32_t dcp);

// What bounds the blocks one request holds at once: its length, and the
// tokens scheduled but not yet processed (a step's new tokens included).
struct RequestBounds {
  std::uint64_t max_model_len = 0;
  std::uint64_t max_in_flight_tokens = 0;
  std::uint32_t dcp = 1;
};

// The most blocks one request holds at once in `group` (spec §5.1, "max
// memory per request"): full attention covers the whole length; a window
// covers W - 1 + in-flight tokens plus one block it straddles; a chunked
// group its chunk plus in-flight tokens; an aligned recurrent group its
// state, the previous one, and the speculative blocks; a scratch group its
// pages. Pool sizing and whole-sequence admission both use it, so they
// cannot drift apart (spec §9 item 13). In-flight tokens count at most the
// length. REQUIRES: the group's block holds at least one token (else
// UsageError).
std::uint64_t MaxBlocksPerRequest(const GroupSpec& group,
                                  const RequestBounds& bounds);

enum class PrefixCaching { kEnabled, kDisabled };
enum class KvEventMode { kDisabled, kEnabled };

// Limits (hkv/limits.h), refused by Validate: num_blocks, speculative and
// scratch blocks at most kMaxPoolBlocks; max_model_len, max_in_flight_tokens,
// the hash unit, the retention interval, every group's block (DCP-scaled),
// window, output window and chunk, and the scheduler block (the blocks'
// lcm) at most kMaxTokensPerRequest.
struct CacheConfig {
  std::vector<GroupSpec> groups = {};
  std::uint32_t num_blocks = 0;  // including the null block (id 0)
  // Hash unit: must divide every group's block (after DCP scaling).
  KeySchemeOptions keys = {};
  std::uint32_t dcp = 1;  // decode-context-parallel width
  // Which window blocks and recurrent states stay keyed after a request.
  // Unset: all of them (dense). 0: only where a resend of the prompt lands.
  // R > 0 (a multiple of the scheduler block): also one per R tokens.
  std::optional<std::uint32_t> retention_interval = std::nullopt;
  PrefixCaching caching = PrefixCaching::kEnabled;
  KvEventMode events = KvEventMode::kDisabled;
  // Where freed blocks without a key go (spec §1.3): the front of the free
  // queue (default), or, with kAppendAll, the back like every other block.
  FreeOrder free_order = FreeOrder::kPrependUncached;
  // Tokens one request holds at most.
  std::uint32_t max_model_len = kMaxTokensPerRequest;
  // Tokens scheduled but not yet processed, at most (the step's chunk
  // included); unset: max_model_len. Bounds window groups' blocks for
  // whole-sequence admission (MaxBlocksPerRequest).
  std::optional<std::uint32_t> max_in_flight_tokens = std::nullopt;

  // kInvalidArgument naming the offending field and its value.
  [[nodiscard]] Result<void> Validate() const;
};

// Why a hit is shorter than the longest prefix full attention holds.
enum class MissCause {
  kNone,               // it is not shorter
  kSpeculativeRewind,  // a draft model recomputes the last unit or block
  kNoCheckpoint,       // a recurrent group kept no state at a usable boundary
  kWindowNotCovered,   // a sliding-window or chunked group lacks window blocks
  // The limiting group had the data there once, and it was evicted by reuse.
  // Approximate: a bounded record forgets evictions older than about
  // num_blocks evictions (99 % of those num_blocks ago are remembered, half
  // of those 2 num_blocks ago), and takes a key for an evicted one with
  // probability at most 4e-9 (docs/design.md, BlockPool).
  kEvicted,
};

// What a lookup result was computed for: the cache (an id unique in the
// process; 0 for a hit no lookup made), the request, and the request's key
// of the prefix the lookup found (its first num_tokens tokens).
struct HitOrigin {
  std::uint64_t cache = 0;
  RequestId request{0};
  std::uint32_t num_tokens = 0;
  BlockHash key = {};  // zero when num_tokens is 0
};

// A lookup result: the hit in tokens and, per group, the cached blocks that
// cover it (index-aligned with the block table; the null block marks
// positions the group does not need). Valid until the next mutating call.
// Only the cache that made it adopts or truncates it, for its request.
struct CacheHit {
  std::uint32_t num_tokens = 0;
  std::vector<std::vector<BlockId>> blocks = {};  // [group][block index]
  // The cache's key generation at lookup; Allocate re-checks a hit whose
  // blocks may have lost their keys since.
  std::uint64_t key_generation = 0;
  // The longest prefix full attention holds (at most num_tokens - 1), and,
  // when the hit is shorter, which group limited it and why.
  std::uint32_t chain_tokens = 0;
  MissCause miss_cause = MissCause::kNone;
  GroupId limiting_group{0};
  // Where some group's cached prefix ends when it is longer than the hit (a
  // group that keeps few states limited it): a chunk stopping there lets
  // the shorter group cache its state for the next request. 0 otherwise.
  std::uint32_t shared_prefix_boundary = 0;
  // Set by Lookup, kept by TruncateHit; checked by Allocate.
  HitOrigin origin = {};
};

// What an allocation must find room for before it takes anything.
enum class AdmissionGate { kNextChunk, kWholeSequence };

struct AllocationRequest {
  // Tokens this request already computed before this call, excluding `hit`;
  // 0 when `hit` is set (a hit is adopted on the first allocation only).
  std::uint32_t num_computed_tokens = 0;
  // Tokens after those that a connector (an offload tier, a remote
  // cache) loads into the request's blocks before the step: computed, not
  // hits. The blocks to hold them are allocated here.
  std::uint32_t num_external_computed_tokens = 0;
  // Tokens to compute in this step (drafts included).
  std::uint32_t num_new_tokens = 0;
  // Extra slots for speculative tokens, beyond num_new_tokens.
  std::uint32_t num_lookahead_tokens = 0;
  // Of num_computed_tokens, those scheduled in steps whose results are not
  // back yet (async scheduling): blocks they read are not released.
  std::uint32_t num_in_flight_tokens = 0;
  // The request's lookup result to adopt; only on its first allocation.
  // Nullable. One of no tokens adopts nothing (its miss cause is counted).
  const CacheHit* hit = nullptr;
  // kWholeSequence: refuse unless the request's whole current sequence fits
  // now, window groups counted at MaxBlocksPerRequest (an admission that
  // must not stall mid-prefill).
  AdmissionGate gate = AdmissionGate::kNextChunk;
};

// A prefill chunk the scheduler's budget allows, for SplitPrefill.
struct PrefillChunk {
  std::uint32_t num_computed_tokens = 0;  // computed so far, hit included
  std::uint32_t num_new_tokens = 0;       // what the budget allows next
  std::uint32_t max_num_scheduled_tokens = 8192;
  std::uint32_t long_prefill_threshold = 0;  // 0: none
  std::uint32_t shared_prefix_boundary = 0;  // from the request's lookup
};

// A state the recurrent kernel must leave from inside the step's chunk: the
// state after `position` tokens, written into `block` (a block of the
// request's table, placed by the same allocation).
struct StateExport {
  GroupId group{0};
  BlockId block{0};
  std::uint32_t position = 0;
  friend bool operator==(const StateExport&, const StateExport&) = default;
};

// Blocks placed in the request's tables by one allocation, per group, and
// the states the step must export.
struct NewBlocks {
  std::vector<std::vector<BlockId>> blocks = {};  // [group]
  std::vector<StateExport> state_exports = {};
};

// Admitted requests whose hit one cause kept below the full-attention
// chain, and the tokens it cost them.
struct MissCounters {
  std::uint64_t requests = 0;
  std::uint64_t tokens = 0;
};

// Prefix-cache counters, recorded at admission (a request's first successful
// allocation after a lookup).
struct PrefixCacheStats {
  std::uint64_t requests = 0;
  std::uint64_t queries = 0;  // tokens of admitted requests
  std::uint64_t hits = 0;     // of which reused from the cache
  bool reset = false;         // a ResetPrefixCache succeeded since last taken
  MissCounters speculative_rewind = {};
  MissCounters no_checkpoint = {};
  MissCounters window_not_covered = {};
  MissCounters evicted = {};
};

struct PoolCounters {
  std::uint64_t evicted_blocks = 0;  // cached blocks reused for new data
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
  // one there.
  void Commit(const Request& request, std::uint32_t num_computed_tokens);

  // Releases the request's blocks, last first; cached ones stay findable
  // until evicted. REQUIRES: the request holds blocks.
  void Free(RequestId id);

  // Copies queued by allocations since the last call; the engine runs them
  // before the step. Their endpoints stay pinned until FinishStep().
  std::vector<BlockCopy> TakeCopies();

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
  // Fraction of usable blocks in use: 1 - free / (num_blocks - 1).
  double usage() const;
  // Blocks on the free queue (cached ones included).
  std::uint32_t num_free_blocks() const;
  // Blocks currently holding at least one key, per group (index = group
  // id). O(num_blocks).
  std::vector<std::uint64_t> CachedBlocksPerGroup() const;
  // The request's block table in `group`, valid until the next mutating
  // call. REQUIRES: the request holds blocks.
  std::span<const BlockId> block_table(RequestId id, GroupId group) const;

 private:
  struct Impl;
  explicit CacheManager(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hkv
