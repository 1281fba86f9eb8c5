#include "cache/cache_core.h"

#include <algorithm>
#include <atomic>
#include <limits>

#include "cache/commit_rules.h"
#include "cache/hit_shape.h"
#include "cache/prefix_stats.h"
#include "check.h"
#include "groups/kind_traits.h"
#include "groups/stored_event.h"
#include "hkv/limits.h"
#include "text.h"

namespace hkv::internal {
namespace {

// Cache ids start at 1: 0 marks a hit no lookup made.
std::uint64_t NextCacheId() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

KeyScheme SchemeOf(const CacheConfig& config) {
  Result<void> valid = config.Validate();
  HKV_REQUIRE(valid.has_value(), valid ? "" : valid.error().message);
  return *MakeKeyScheme(config.keys);
}

}  // namespace

CacheCore::CacheCore(const CacheConfig& config)
    : config_(config),
      id_(NextCacheId()),
      scheme_(SchemeOf(config)),
      geometry_(ResolveGeometry(config)),
      pool_(config.num_blocks,
            config.caching == PrefixCaching::kEnabled ? Caching::kEnabled
                                                      : Caching::kDisabled,
            config.events == KvEventMode::kEnabled ? Events::kEnabled
                                                   : Events::kDisabled,
            config.free_order, config.group_pool_blocks,
            config.pool_slot_bytes) {
  if (config.eviction_record == EvictionRecord::kOff) {
    pool_.StopRecordingEvictions();
  }
  if (pool_.rebalances()) {
    parked_at_take_.resize(pool_.num_blocks());
    for (std::uint32_t i = 0; i < pool_.num_blocks(); ++i) {
      parked_at_take_[i] = pool_.parked(BlockId{i});
    }
  }
  for (std::size_t i = 0; i < config.groups.size(); ++i) {
    groups_.push_back(TraitsOf(config.groups[i].kind)
                          .make(pool_, geometry_.facts, geometry_.groups[i],
                                config.groups[i]));
  }
}

std::uint32_t CacheCore::MaxHitLength(std::uint32_t num_tokens) const {
  const std::uint32_t n = std::min(num_tokens, config_.max_model_len);
  return n > 0 ? n - 1 : 0;
}

bool CacheCore::LimiterEvicted(const CacheHit& hit, KeyView keys) const {
  const std::uint32_t chain = hit.chain_tokens / scheme_.hash_unit;
  return chain > 0 && pool_.WasEvicted({.hash = keys[chain - 1],
                                        .group = hit.limiting_group});
}

CacheHit CacheCore::Lookup(const Request& request) const {
  HKV_REQUIRE(request.key_scheme() == scheme_,
              "request keyed with a different key scheme than the cache");
  return LookupView(request.id(), request.num_tokens(), request.keys(),
                    request.cache_read());
}

CacheHit CacheCore::LookupKeys(RequestId id, std::uint32_t num_tokens,
                               const KeySource& keys,
                               CacheRead cache_read) const {
  HKV_REQUIRE(num_tokens <= kMaxTokensPerRequest,
              internal::Cat("a request of ", num_tokens,
                            " tokens exceeds the limit of ",
                            kMaxTokensPerRequest, " tokens per request"));
  HKV_REQUIRE(
      keys.size() == num_tokens / scheme_.hash_unit,
      internal::Cat(num_tokens, " tokens have ", num_tokens / scheme_.hash_unit,
                    " complete hash units of ", scheme_.hash_unit,
                    ", but the source has ", keys.size(), " keys"));
  const LazyKeys lazy(keys);
  return LookupView(id, num_tokens, lazy.view(), cache_read);
}

CacheHit CacheCore::LookupView(RequestId id, std::uint32_t num_tokens,
                               KeyView keys, CacheRead cache_read) const {
  if (!pool_.caching_enabled() || cache_read == CacheRead::kSkipped) {
    CacheHit none{.origin = {.cache = id_, .request = id}};
    none.blocks.resize(groups_.size());
    return none;
  }
  CacheHit hit = coordinator_.FindLongestHit(keys, MaxHitLength(num_tokens));
  hit.key_generation = pool_.key_generation();
  hit.origin = {.cache = id_, .request = id, .num_tokens = hit.num_tokens};
  if (const std::uint32_t units = hit.num_tokens / scheme_.hash_unit;
      units > 0) {
    hit.origin.key = keys[units - 1];
  }
  // A window or checkpoint the limiting group had once, evicted since.
  if (hit.miss_cause != MissCause::kNone &&
      hit.miss_cause != MissCause::kSpeculativeRewind &&
      LimiterEvicted(hit, keys)) {
    hit.miss_cause = MissCause::kEvicted;
  }
  return hit;
}

CacheHit CacheCore::TruncateHit(const CacheHit& hit,
                                std::uint32_t num_tokens) const {
  CheckOrigin(nullptr, hit);
  return internal::TruncateHit(hit, num_tokens, geometry_);
}

std::uint32_t CacheCore::SplitPrefill(const Request& request,
                                      const PrefillChunk& chunk) const {
  CheckSplit(request, chunk);
  return internal::SplitPrefill(
      {.rules = split_rules_,
       .facts = geometry_.facts,
       .num_prompt_tokens = request.num_prompt_tokens(),
       .num_tokens = request.num_tokens(),
       .chunk = chunk});
}

std::uint64_t CacheCore::BlocksNeeded(const RequestState* state,
                                      const CacheHit* hit,
                                      AllocationDemand demand) const {
  static const GroupTable kEmptyTable;
  std::fill(need_.begin(), need_.end(), 0);
  std::uint64_t total = 0;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const GroupTable& table = state ? state->tables[g] : kEmptyTable;
    demand.hit = {};
    if (hit != nullptr) demand.hit = hit->blocks[g];
    const std::uint32_t n = groups_[g]->NumBlocksToAllocate(table, demand);
    need_[groups_[g]->geometry().pool] += n;
    total += n;
  }
  return total;
}

bool CacheCore::NeedFits() const {
  // Below 2^56 + 2^32 * 2^24 under the limits: no sum wraps.
  std::uint64_t missing_bytes = 0;
  std::uint64_t spare_bytes = pool_.spare_bytes();
  for (std::uint32_t p = 0; p < need_.size(); ++p) {
    const std::uint32_t free = pool_.num_free_blocks(p);
    if (need_[p] <= free) {
      if (pool_.rebalances())
        spare_bytes += (free - need_[p]) * pool_.slot_bytes(p);
      continue;
    }
    const std::uint64_t short_blocks = need_[p] - free;
    if (!pool_.rebalances() || short_blocks > pool_.num_parked_blocks(p)) {
      return false;
    }
    missing_bytes += short_blocks * pool_.slot_bytes(p);
  }
  return missing_bytes <= spare_bytes;
}

void CacheCore::SpareCursors(std::uint32_t pool) {
  cursors_.assign(need_.size(), std::nullopt);
  for (std::uint32_t p = 0; p < need_.size(); ++p) {
    if (p == pool || pool_.num_free_blocks(p) <= need_[p]) continue;
    cursors_[p] = pool_.NthFree(p, static_cast<std::uint32_t>(need_[p]));
  }
}

bool CacheCore::PlanParking(std::uint64_t slot, std::uint64_t younger_than) {
  planned_cursors_ = cursors_;
  plan_.clear();
  std::uint64_t bytes = pool_.spare_bytes();
  while (bytes < slot) {
    // The oldest spare block of any other pool.
    std::optional<std::uint32_t> oldest;
    for (std::uint32_t p = 0; p < planned_cursors_.size(); ++p) {
      if (planned_cursors_[p] &&
          (!oldest || pool_.EvictionAge(*planned_cursors_[p]) <
                          pool_.EvictionAge(*planned_cursors_[*oldest]))) {
        oldest = p;
      }
    }
    if (!oldest ||
        pool_.EvictionAge(*planned_cursors_[*oldest]) >= younger_than) {
      return false;
    }
    const BlockId block = *planned_cursors_[*oldest];
    plan_.push_back(block);
    bytes += pool_.slot_bytes(*oldest);
    planned_cursors_[*oldest] = pool_.NextFree(block);
  }
  return true;
}

void CacheCore::MoveInto(std::uint32_t pool, bool spare_evictions) {
  const std::uint64_t slot = pool_.slot_bytes(pool);
  SpareCursors(pool);
  // Pass 2: the last block the allocation takes, evicted if it has a key.
  std::optional<BlockId> victim;
  while (pool_.num_parked_blocks(pool) > 0) {
    const bool short_of_blocks = need_[pool] > pool_.num_free_blocks(pool);
    std::uint64_t younger_than = std::numeric_limits<std::uint64_t>::max();
    if (!short_of_blocks) {
      if (!spare_evictions || need_[pool] == 0) return;
      if (!victim) {
        victim =
            pool_.NthFree(pool, static_cast<std::uint32_t>(need_[pool] - 1));
      }
      younger_than = pool_.EvictionAge(*victim);
      if (younger_than == 0) return;  // it evicts nothing
    }
    // Park only what pays for one unpark: no eviction goes for nothing.
    if (!PlanParking(slot, younger_than)) {
      HKV_DCHECK(!short_of_blocks);
      return;
    }
    for (BlockId block : plan_) pool_.ParkBlock(block);
    cursors_ = planned_cursors_;
    pool_.Unpark(pool, 1, moved_scratch_);
    moved_since_take_ = true;
    // The unparked id goes first: the allocation's last block moves back one.
    if (victim) victim = pool_.PrevFree(*victim);
    if (!short_of_blocks && !victim) return;
  }
}

void CacheCore::MakeRoom() {
  for (std::uint32_t p = 0; p < need_.size(); ++p) {
    need_[p] -= free_at_check_[p] - pool_.num_free_blocks(p);  // adopted
  }
  moved_scratch_.clear();
  // The short pools first: what they must have cannot wait for the others.
  for (std::uint32_t p = 0; p < need_.size(); ++p) {
    if (need_[p] > pool_.num_free_blocks(p)) MoveInto(p, false);
    HKV_DCHECK(need_[p] <= pool_.num_free_blocks(p));
  }
  for (std::uint32_t p = 0; p < need_.size(); ++p) MoveInto(p, true);
}

PoolMoves CacheCore::TakePoolMoves() {
  PoolMoves moves;
  if (!moved_since_take_) return moves;
  moved_since_take_ = false;
  for (std::uint32_t i = 1; i < pool_.num_blocks(); ++i) {
    const bool parked = pool_.parked(BlockId{i});
    if (parked == parked_at_take_[i]) continue;
    (parked ? moves.parked : moves.unparked).push_back(BlockId{i});
    parked_at_take_[i] = parked;
  }
  return moves;
}

bool CacheCore::WholeSequenceFits(const Request& request,
                                  const RequestState* state,
                                  const CacheHit* hit,
                                  AllocationDemand demand) const {
  demand.num_main = std::min(request.num_tokens(), config_.max_model_len);
  demand.num_slots = demand.num_main;
  demand.gate = AdmissionGate::kWholeSequence;
  BlocksNeeded(state, hit, demand);
  return NeedFits();
}

std::optional<NewBlocks> CacheCore::Allocate(const Request& request,
                                             const AllocationRequest& args) {
  auto it = requests_.find(request.id());
  const bool running = it != requests_.end();
  CheckAllocation(request, args, running ? &it->second : nullptr);
  // A hit of no tokens adopts nothing.
  const CacheHit* hit =
      args.hit != nullptr && args.hit->num_tokens > 0 ? args.hit : nullptr;
  const std::uint32_t hit_tokens = hit ? hit->num_tokens : 0;
  // Checked: these sums are at most max_model_len (< 2^32).
  const std::uint32_t num_local = args.num_computed_tokens + hit_tokens;
  const std::uint32_t total = num_local + args.num_external_computed_tokens;
  const std::uint32_t num_main = total + args.num_new_tokens;
  const AllocationDemand demand{
      .num_slots = static_cast<std::uint32_t>(std::min<std::uint64_t>(
          std::uint64_t{num_main} + args.num_lookahead_tokens,
          config_.max_model_len)),
      .num_main = num_main,
      .num_local_computed = num_local,
      .num_computed = total,
      .num_prompt_tokens = request.num_prompt_tokens()};
  if (args.gate == AdmissionGate::kWholeSequence &&
      !WholeSequenceFits(request, running ? &it->second : nullptr, hit,
                         demand)) {
    return std::nullopt;
  }
  if (running) {
    // Blocks still read by in-flight steps stay.
    const std::uint32_t processed = total > args.num_in_flight_tokens
                                        ? total - args.num_in_flight_tokens
                                        : 0;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      groups_[g]->RemoveSkippedBlocks(it->second.tables[g], processed);
    }
  }
  const std::uint64_t need =
      BlocksNeeded(running ? &it->second : nullptr, hit, demand);
  if (!NeedFits()) return std::nullopt;
  for (std::uint32_t p = 0; p < need_.size() && pool_.rebalances(); ++p) {
    free_at_check_[p] = pool_.num_free_blocks(p);
  }
  const std::uint32_t in_use_before =
      pool_.num_usable_blocks() - pool_.num_free_blocks();
  if (!running) {
    it = Admit(request, args.hit);
    // Every group adopts its hit before any group allocates, so one group's
    // allocation cannot evict another group's hit blocks.
    AdoptHit(it->second, hit, demand);
    if (hit != nullptr && request.event_report() == EventReport::kFull) {
      AnnounceReuse(request, *hit);
    }
  }
  // After the adoption: no pool parks a block the hit holds.
  if (pool_.rebalances()) MakeRoom();
  it->second.num_slots = std::max(it->second.num_slots, demand.num_slots);
  std::vector<std::uint32_t> starts(groups_.size());
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    starts[g] = static_cast<std::uint32_t>(it->second.tables[g].blocks.size());
    // A new request's blocks for a connector's tokens precede the slots
    // this step computes into.
    if (!running && args.num_external_computed_tokens > 0) {
      const std::uint32_t b = groups_[g]->geometry().block_size;
      starts[g] = std::max(starts[g], total / b + (total % b != 0 ? 1 : 0));
    }
  }
  NewBlocks placed = AllocateNew(it->second, demand);
  placed.table_starts = std::move(starts);
  // The predictors and the allocators agree: allocations are all or nothing.
  HKV_DCHECK(pool_.num_usable_blocks() - pool_.num_free_blocks() -
                 in_use_before ==
             need);
  static_cast<void>(in_use_before);
  return placed;
}

absl::flat_hash_map<RequestId, CacheCore::RequestState>::iterator
CacheCore::Admit(const Request& request, const CacheHit* hit) {
  auto it = requests_.emplace(request.id(), RequestState{}).first;
  it->second.tables.resize(groups_.size());
  if (hit != nullptr) {
    it->second.shared_prefix_boundary = hit->shared_prefix_boundary;
    it->second.num_committed_tokens = hit->num_tokens;
  }
  if (pool_.caching_enabled() && request.cache_read() == CacheRead::kAllowed) {
    RecordAdmission(request.num_tokens(), hit, stats_);
  }
  return it;
}

void CacheCore::AdoptHit(RequestState& state, const CacheHit* hit,
                         const AllocationDemand& demand) {
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    AllocationDemand adopted = demand;
    adopted.hit = {};
    if (hit != nullptr) adopted.hit = hit->blocks[g];
    groups_[g]->AdoptHit(state.tables[g], adopted);
  }
}

void CacheCore::AnnounceReuse(const Request& request, const CacheHit& hit) {
  if (!pool_.events().enabled()) return;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    for (BlockStored& event : ReuseEvents(request,
                                          {.blocks = hit.blocks[g],
                                          .num_tokens = hit.num_tokens,
                                          .geometry = groups_[g]->geometry()},
                                          pool_)) {
      pool_.events().Record(std::move(event));
    }
  }
}

NewBlocks CacheCore::AllocateNew(RequestState& state,
                                 const AllocationDemand& demand) {
  NewBlocks placed;
  placed.blocks.resize(groups_.size());
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    GroupTable& table = state.tables[g];
    const auto exported_before = table.exported_checkpoint;
    groups_[g]->AllocateNew(table, demand, placed.blocks[g], pending_copies_);
    const auto exported = table.exported_checkpoint;
    if (exported && exported != exported_before) {
      placed.state_exports.push_back(
          {.group = GroupId{static_cast<std::uint32_t>(g)},
           .block = table.blocks[exported->index],
           .position = exported->position});
    }
  }
  return placed;
}

void CacheCore::Commit(const Request& request,
                       std::uint32_t num_computed_tokens) {
  const std::uint32_t n = CheckCommit(request, num_computed_tokens);
  RequestState& state = requests_.find(request.id())->second;
  // Registering the same count again would re-arm recurrent checkpoints.
  if (n == state.num_committed_tokens) return;
  state.num_committed_tokens = n;
  if (!pool_.caching_enabled()) return;
  // Only partial tails and sparse retention read the replay positions; a
  // decode step of a plain model skips computing them.
  const bool needs_replay = geometry_.facts.partial_hits ||
                            geometry_.facts.retention_interval.has_value();
  const std::vector<std::uint32_t> replay =
      needs_replay
          ? ReplayBoundaries(geometry_, request, state.shared_prefix_boundary)
          : std::vector<std::uint32_t>{};
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    groups_[g]->Commit(state.tables[g], request,
                       CacheableTokens(geometry_, n, config_.groups[g].kind,
                                       groups_[g]->geometry()),
                       replay);
  }
}

void CacheCore::Free(RequestId id) {
  auto it = requests_.find(id);
  HKV_REQUIRE(it != requests_.end(), "free of a request that holds no blocks");
  for (std::size_t g = 0; g < groups_.size(); ++g)
    groups_[g]->Free(it->second.tables[g]);
  requests_.erase(it);
}

std::vector<BlockCopy> CacheCore::TakeCopies() {
  pinned_copies_.insert(pinned_copies_.end(), pending_copies_.retained.begin(),
                        pending_copies_.retained.end());
  pending_copies_.retained.clear();
  return std::exchange(pending_copies_.copies, {});
}

void CacheCore::FinishStep() {
  pool_.Free(pinned_copies_);
  pinned_copies_.clear();
  for (const std::unique_ptr<GroupManager>& group : groups_) group->StartStep();
}

bool CacheCore::ResetPrefixCache() {
  if (!pool_.Reset()) return false;
  stats_.reset = true;
  return true;
}

std::vector<KvEvent> CacheCore::TakeEvents() {
  std::vector<KvEvent> events = pool_.events().Take();
  AnnotateKinds(events, config_.groups);
  return events;
}

PrefixCacheStats CacheCore::TakeStats() { return std::exchange(stats_, {}); }

std::span<const BlockId> CacheCore::block_table(RequestId id,
                                                GroupId group) const {
  auto it = requests_.find(id);
  HKV_REQUIRE(it != requests_.end(),
              "no block table for a request that holds no blocks");
  HKV_REQUIRE(ToIndex(group) < groups_.size(), "group id out of range");
  return it->second.tables[ToIndex(group)].blocks;
}

std::vector<std::uint64_t> CacheCore::CachedBlocksPerGroup() const {
  std::vector<std::uint64_t> counts(groups_.size(), 0);
  // A block's aliases exist only beside its primary key.
  for (std::uint32_t i = 1; i < pool_.num_blocks(); ++i) {
    const BlockId block{i};
    if (pool_.primary_num_tokens(block) > 0) {
      ++counts[ToIndex(pool_.primary_key(block).group)];
    }
  }
  return counts;
}

std::vector<std::pair<GroupId, BlockHash>> CacheCore::CachedKeys() const {
  std::vector<std::pair<GroupId, BlockHash>> keys;
  for (std::uint32_t i = 1; i < pool_.num_blocks(); ++i) {
    if (pool_.primary_num_tokens(BlockId{i}) == 0) continue;
    for (const PrefixKey& key : pool_.KeysOf(BlockId{i})) {
      keys.emplace_back(key.group, key.hash);
    }
  }
  return keys;
}

bool CacheCore::CheckInvariants() const {
  if (!pool_.CheckInvariants()) return false;
  std::vector<std::uint32_t> refs(pool_.num_blocks(), 0);
  // A group's blocks, held or keyed, lie in its pool.
  const auto in_pool = [this](BlockId b, GroupId g) {
    return b == kNullBlock || pool_.PoolOf(b) == geometry(g).pool;
  };
  for (const auto& [id, state] : requests_) {
    for (std::size_t g = 0; g < state.tables.size(); ++g) {
      for (BlockId b : state.tables[g].blocks) {
        if (!in_pool(b, GroupId{static_cast<std::uint32_t>(g)})) return false;
        ++refs[ToIndex(b)];
      }
    }
  }
  for (BlockId b : pending_copies_.retained) ++refs[ToIndex(b)];
  for (BlockId b : pinned_copies_) ++refs[ToIndex(b)];
  for (std::uint32_t i = 1; i < pool_.num_blocks(); ++i) {
    if (refs[i] != pool_.ref_count(BlockId{i})) return false;
    for (const PrefixKey& key : pool_.KeysOf(BlockId{i})) {
      if (!in_pool(BlockId{i}, key.group)) return false;
    }
  }
  return true;
}

}  // namespace hkv::internal
