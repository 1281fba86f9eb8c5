// The REQUIRES of CacheCore's calls: each throws UsageError naming the
// argument, its value and the bound it broke, before the call changes
// anything. Sums of 32-bit token counts are formed in 64 bits.
#include <algorithm>
#include <limits>

#include "cache/cache_core.h"
#include "cache/hit_shape.h"
#include "check.h"
#include "groups/kind_traits.h"
#include "text.h"

namespace hkv::internal {

void CacheCore::CheckAllocation(const Request& request,
                                const AllocationRequest& args,
                                const RequestState* state) const {
  HKV_REQUIRE(request.key_scheme() == scheme_,
              "request keyed with a different key scheme than the cache");
  const CacheHit* hit = args.hit;
  const std::uint32_t hit_tokens = hit != nullptr ? hit->num_tokens : 0;
  HKV_REQUIRE(args.num_new_tokens > 0 ||
                  args.num_external_computed_tokens > 0 || hit_tokens > 0,
              "an allocation needs new tokens, external tokens or a hit");
  const std::uint64_t max_len = config_.max_model_len;
  const std::uint64_t computed = std::uint64_t{args.num_computed_tokens} +
                                 hit_tokens + args.num_external_computed_tokens;
  HKV_REQUIRE(computed + args.num_new_tokens <= max_len,
              Cat("num_computed_tokens ", args.num_computed_tokens, " + hit ",
                  hit_tokens, " + num_external_computed_tokens ",
                  args.num_external_computed_tokens, " + num_new_tokens ",
                  args.num_new_tokens, " = ", computed + args.num_new_tokens,
                  " tokens exceed max_model_len ", max_len));
  HKV_REQUIRE(args.num_lookahead_tokens <= max_len,
              Cat("num_lookahead_tokens ", args.num_lookahead_tokens,
                  " exceeds max_model_len ", max_len));
  HKV_REQUIRE(args.num_in_flight_tokens <= computed,
              Cat("num_in_flight_tokens ", args.num_in_flight_tokens,
                  " exceeds the ", computed, " computed tokens"));
  // The reference engine's scheduler may count more computed tokens than
  // it allocated slots for (a step returning more tokens than it
  // scheduled); its manager allocates what the count needs.
  const std::uint32_t covered = state != nullptr ? state->num_slots : 0;
  HKV_REQUIRE(
      args.num_computed_tokens <= covered ||
          (state != nullptr && config_.behaviour == Behaviour::kEngine),
      Cat("num_computed_tokens ", args.num_computed_tokens, " beyond the ",
          covered, " tokens the request's blocks cover"));
  if (hit_tokens == 0) {
    // An empty lookup result adopts nothing, but its miss cause and
    // shared-prefix boundary are recorded at admission: they must be this
    // request's. (A default CacheHit carries none.)
    if (hit != nullptr && hit->origin.cache != 0) CheckOrigin(&request, *hit);
    return;
  }
  HKV_REQUIRE(state == nullptr,
              "a hit can only be adopted by a request that holds no blocks");
  HKV_REQUIRE(args.num_external_computed_tokens == 0 ||
                  hit_tokens % geometry_.facts.scheduler_block == 0,
              "external tokens after a hit ending inside a block: cut the hit "
              "to a block boundary first (TruncateHit)");
  CheckHit(request, *hit);
}

void CacheCore::CheckOrigin(const Request* request, const CacheHit& hit) const {
  const HitOrigin& origin = hit.origin;
  HKV_REQUIRE(origin.cache == id_,
              origin.cache == 0
                  ? "the hit was not made by a lookup (HitOrigin is unset)"
                  : "the hit comes from another cache's lookup");
  HKV_REQUIRE(hit.num_tokens <= origin.num_tokens,
              Cat("the hit of ", hit.num_tokens,
                  " tokens is longer than its lookup's ", origin.num_tokens));
  if (request == nullptr) return;
  HKV_REQUIRE(
      origin.request == request->id(),
      Cat("the hit was looked up for request ",
          static_cast<std::uint64_t>(origin.request), ", not for request ",
          static_cast<std::uint64_t>(request->id())));
  // Keys chain: equal keys at the lookup's length mean equal prefixes.
  const std::uint32_t units = origin.num_tokens / scheme_.hash_unit;
  HKV_REQUIRE(origin.num_tokens % scheme_.hash_unit == 0 &&
                  units <= request->keys().size() &&
                  (units == 0 || request->keys()[units - 1] == origin.key),
              Cat("request ", static_cast<std::uint64_t>(request->id()),
                  " no longer starts with the ", origin.num_tokens,
                  " tokens its hit was looked up for"));
}

void CacheCore::CheckHit(const Request& request, const CacheHit& hit) const {
  CheckOrigin(&request, hit);
  CheckHitShape(hit, {.num_request_tokens = request.num_tokens(),
                      .num_block_ids = pool_.num_blocks(),
                      .config = config_,
                      .geometry = geometry_});
  // What a lookup finds holds a key, in its group's pool (never a parked
  // id); cheap, and it keeps a forged id from being adopted below.
  for (std::size_t g = 0; g < hit.blocks.size(); ++g) {
    const std::uint32_t pool =
        geometry(GroupId{static_cast<std::uint32_t>(g)}).pool;
    if (pool_.AllKeyedIn(hit.blocks[g], pool)) continue;
    for (BlockId block : hit.blocks[g]) {
      HKV_REQUIRE(block == kNullBlock || (pool_.primary_num_tokens(block) > 0 &&
                                          pool_.PoolOf(block) == pool),
                  Cat("hit block ", ToIndex(block), " of group ", g,
                      " holds no key of that group's pool"));
    }
  }
  if (hit.key_generation != pool_.key_generation()) {
    const CacheHit fresh = Lookup(request);
    HKV_REQUIRE(
        fresh.num_tokens == hit.num_tokens && fresh.blocks == hit.blocks,
        "the hit's blocks changed since the lookup; look the request up again");
  }
}

std::uint32_t CacheCore::CheckCommit(const Request& request,
                                     std::uint32_t num_computed_tokens) const {
  HKV_REQUIRE(request.key_scheme() == scheme_,
              "request keyed with a different key scheme than the cache");
  auto it = requests_.find(request.id());
  HKV_REQUIRE(it != requests_.end(),
              "commit for a request that holds no blocks");
  const RequestState& state = it->second;
  const std::uint32_t n = std::min(num_computed_tokens, request.num_tokens());
  // The engine's cache_blocks caches from the blocks it cached before, and
  // a count below them (its scheduler rolled the request back past blocks
  // that failed to load) caches nothing.
  if (n < state.num_committed_tokens && geometry_.facts.engine_rules)
    return state.num_committed_tokens;
  HKV_REQUIRE(
      n >= state.num_committed_tokens,
      Cat("commit of ", n, " tokens below the ", state.num_committed_tokens,
          " the request committed (or adopted) before"));
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    // Scratch pages are rewritten in place and cover no positions.
    if (!TraitsOf(config_.groups[g].kind).covers_positions) continue;
    const std::uint64_t b = groups_[g]->geometry().block_size;
    HKV_REQUIRE(state.tables[g].blocks.size() * b >= n,
                Cat("commit of ", n,
                    " tokens beyond the blocks allocated to "
                    "the request (group ",
                    g, ")"));
  }
  return n;
}

void CacheCore::CheckSplit(const Request& request,
                           const PrefillChunk& chunk) const {
  HKV_REQUIRE(chunk.num_computed_tokens <= request.num_tokens(),
              Cat("chunk.num_computed_tokens ", chunk.num_computed_tokens,
                  " beyond the request's ", request.num_tokens(), " tokens"));
  // The budget may exceed what is left of the request, not 32 bits.
  const std::uint64_t end =
      std::uint64_t{chunk.num_computed_tokens} + chunk.num_new_tokens;
  HKV_REQUIRE(end <= std::numeric_limits<std::uint32_t>::max(),
              Cat("chunk.num_computed_tokens ", chunk.num_computed_tokens,
                  " + num_new_tokens ", chunk.num_new_tokens, " = ", end,
                  " exceeds 2^32 - 1"));
}

}  // namespace hkv::internal
