// The connector between a CacheManager and a TierChain (spec §3.6, §4.5.2,
// §4.6): a lookup that extends the GPU hit with object groups the tiers
// hold, the load that places their parts in the request's blocks, and the
// store of a request's cached entries.
//
// The extension is exact: the lookup runs the cache's own coordinator over
// the entries the GPU holds plus those the chain's directory knows, so a
// request reaches through the tiers exactly what it would reach had the
// tiers' entries stayed on the GPU: partial tails, window pages,
// recurrent states at checkpoints and a draft model's rewind included. The
// GPU hit is cut to a scheduler block and the tiers supply the rest, the
// state at the end included (CacheManager::TruncateHit).
//
// A scheduler step drives it as:
//   TierHit th = connector.Lookup(cache, r);          // no I/O
//   auto placed = cache.Allocate(r,
//       {.num_external_computed_tokens = th.num_external_tokens,
//        .num_new_tokens = n, .hit = &th.hit});
//   // the request is pending: not scheduled, not committed
//   TierLoad load = connector.Load(cache, r, th, *placed);  // reads the tiers
//   kDone:   write each part's bytes into its block; the step then computes
//            its n tokens and Commit(r, hit + external + n) registers the
//            loaded tokens with them. Do not Commit(r, hit + external)
//            alone: a recurrent state registered there sits in the block
//            the step advances.
//   kFailed: nothing was written; cache.Free(r.id()) and look up again
//            (what failed is forgotten, so the next lookup is shorter)
//   ...
//   connector.Store(cache, r, read_block);            // at completion
//
// hkv handles no tensors: the engine reads a block's bytes for Store and
// writes the loaded parts. Thread-compatible; the chain and the cache are
// the caller's and must outlive the calls.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hkv/allocation.h"
#include "hkv/cache_config.h"
#include "hkv/cache_hit.h"
#include "hkv/cache_manager.h"
#include "hkv/request.h"
#include "hkv/result.h"
#include "hkv/tier_chain.h"

namespace hkv {

struct TierHit {
  CacheHit hit = {};  // to adopt (AllocationRequest::hit)
  // Tokens after hit.num_tokens the tiers supply
  // (AllocationRequest::num_external_computed_tokens); 0: none.
  std::uint32_t num_external_tokens = 0;
  std::uint32_t gpu_tokens = 0;  // the GPU's own hit, before any cut
};

enum class LoadState {
  kDone,    // every part read and checked
  kFailed,  // some group was gone or refused: recompute
};

// A part to write: `bytes` into `block` of `group`.
struct PartLoad {
  GroupId group{0};
  BlockId block{0};
  std::uint32_t end_tokens = 0;
  std::string bytes;
};

struct TierLoad {
  LoadState state = LoadState::kFailed;
  std::vector<PartLoad> parts = {};  // when kDone
  std::uint64_t bytes_read = 0;      // the object groups read, whole
};

struct TierConnectorOptions {
  // Per cache group, the bytes a part must have (one block's page or
  // state); 0 or none: not checked. A part of another size fails its load
  // and its object group is dropped: an engine never writes a page of the
  // wrong size.
  std::vector<std::uint64_t> part_bytes = {};
};

struct ConnectorCounters {
  std::uint64_t lookups = 0;
  std::uint64_t extended_lookups = 0;  // the tiers reached past the GPU
  std::uint64_t external_tokens = 0;   // offered by those lookups
  std::uint64_t loads_done = 0;
  std::uint64_t loads_failed = 0;
  std::uint64_t wrong_size_parts = 0;  // refused by part_bytes
  std::uint64_t groups_stored = 0;
};

// The bytes of `block` in `group`, read by the engine.
using BlockReader = std::function<std::string(GroupId group, BlockId block)>;

class TierConnector {
 public:
  // `config` is the cache's. Fails with its validation error, or
  // kInvalidArgument for part_bytes not one per group.
  [[nodiscard]] static Result<TierConnector> Create(
      const CacheConfig& config, TierChain& chain,
      TierConnectorOptions options = {});
  TierConnector(TierConnector&&) noexcept;
  TierConnector& operator=(TierConnector&&) noexcept;
  ~TierConnector();

  // The GPU hit and the tiers' extension beyond it; the GPU hit alone when
  // the tiers add nothing. REQUIRES: `cache` made from the config, the
  // request keyed with its scheme. O(tokens / hash unit x groups).
  TierHit Lookup(const CacheManager& cache, const Request& request);

  // Reads what `hit` needs into the blocks Allocate placed for it;
  // `placed` is what that Allocate returned. REQUIRES: Allocate(request,
  // {.num_external_computed_tokens = hit.num_external_tokens, .hit =
  // &hit.hit, ...}) succeeded and the request has not been committed since.
  TierLoad Load(const CacheManager& cache, const Request& request,
                const TierHit& hit, const NewBlocks& placed);

  // Stores the object groups of the request's cached entries that the
  // chain does not hold yet (or holds with fewer parts); `read` supplies
  // each block's bytes. Returns the groups stored. REQUIRES: the request
  // holds blocks.
  std::size_t Store(const CacheManager& cache, const Request& request,
                    const BlockReader& read);

  ConnectorCounters counters() const;

 private:
  struct Impl;
  explicit TierConnector(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hkv
