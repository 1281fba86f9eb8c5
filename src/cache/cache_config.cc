#include "hkv/cache_config.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>

#include "check.h"
#include "core/block_pool.h"
#include "groups/kind_traits.h"
#include "groups/recurrent_state.h"
#include "hkv/limits.h"

namespace hkv {
namespace {

Result<void> Invalid(std::string message) {
  return Fail(ErrorCode::kInvalidArgument, std::move(message));
}

std::string Num(std::uint64_t n) { return std::to_string(n); }

// Token counts (blocks, windows, chunks, intervals) are bounded by the tokens
// one request holds, pools' block counts by the blocks a pool holds: a
// count beyond either can never be reached, and the bounds keep sums of a
// few such counts inside 32 bits.
Result<void> AtMost(std::uint64_t value, std::uint64_t limit,
                    const std::string& what, const char* unit) {
  if (value <= limit) return {};
  return Invalid(what + " " + Num(value) + " exceeds the limit of " +
                 Num(limit) + " " + unit);
}

Result<void> ValidateCounts(const GroupSpec& group, const std::string& name,
                            std::uint32_t dcp) {
  constexpr const char* kTokens = "tokens per request";
  constexpr const char* kBlocks = "blocks per pool";
  if (const std::uint64_t block = TokensPerBlock(group, dcp);
      block > kMaxTokensPerRequest) {
    const std::string scaled = block != group.block_size
                                   ? " x dcp " + Num(dcp) + " = " + Num(block)
                                   : "";
    return Invalid(name + "block_size " + Num(group.block_size) + scaled +
                   " tokens exceeds the limit of " + Num(kMaxTokensPerRequest) +
                   " " + kTokens);
  }
  for (Result<void> ok : {AtMost(group.sliding_window, kMaxTokensPerRequest,
                                 name + "sliding_window", kTokens),
                          AtMost(group.output_window, kMaxTokensPerRequest,
                                 name + "output_window", kTokens),
                          AtMost(group.chunk_size, kMaxTokensPerRequest,
                                 name + "chunk_size", kTokens),
                          AtMost(group.speculative_blocks, kMaxPoolBlocks,
                                 name + "speculative_blocks", kBlocks),
                          AtMost(group.scratch_blocks, kMaxPoolBlocks,
                                 name + "scratch_blocks", kBlocks)}) {
    if (!ok) return ok;
  }
  return {};
}

Result<void> ValidateKindOptions(const GroupSpec& group,
                                 const std::string& name) {
  if (group.output_window > 0 &&
      !internal::TraitsOf(group.kind).output_window) {
    return Invalid(name + "output_window applies to full-attention groups");
  }
  if (group.checkpoint_blocks == 0) return {};
  if (!internal::IsAlignedRecurrent(group)) {
    return Invalid(name +
                   "checkpoint_blocks needs a recurrent group in align mode");
  }
  if (group.checkpoint_blocks > 1) {
    return Invalid(name + "checkpoint_blocks " + Num(group.checkpoint_blocks) +
                   ": at most one exported checkpoint per chunk is supported");
  }
  return {};
}

Result<void> ValidateGroup(const GroupSpec& group, std::size_t index,
                           const CacheConfig& config) {
  const std::string name = "group " + Num(index) + ": ";
  const std::uint64_t block = TokensPerBlock(group, config.dcp);
  const std::uint32_t unit = config.keys.hash_unit;
  if (Result<void> ok = ValidateCounts(group, name, config.dcp); !ok) return ok;
  // Only cacheable groups' blocks are keyed, so only they need the unit.
  if (group.block_size == 0 ||
      (IsPrefixCacheable(group) && block % unit != 0)) {
    return Invalid(name + "block size " + Num(block) +
                   " is not a positive multiple of the hash unit " + Num(unit));
  }
  return ValidateKindOptions(group, name);
}

Result<void> ValidateRetention(const CacheConfig& config,
                               std::uint64_t scheduler_block) {
  if (config.retention == Retention::kPlacement && config.retention_interval) {
    return Invalid(
        "retention placement chooses its own positions; leave "
        "retention_interval unset (got " +
        Num(*config.retention_interval) + ")");
  }
  if (!config.retention_interval || *config.retention_interval == 0) return {};
  const std::uint32_t r = *config.retention_interval;
  if (r % scheduler_block != 0) {
    return Invalid("retention interval " + Num(r) +
                   " is not a multiple of the scheduler block " +
                   Num(scheduler_block));
  }
  const bool sparse_kind = std::any_of(
      config.groups.begin(), config.groups.end(), [](const GroupSpec& g) {
        return internal::TraitsOf(g.kind).sparse_retention;
      });
  if (!sparse_kind) {
    return Invalid(
        "a retention interval needs a sliding-window or recurrent "
        "group");
  }
  return {};
}

// The scheduler block S, the lcm of all blocks (in 64 bits: two blocks below
// 2^32 have an lcm below 2^64), or an error naming the blocks when it
// exceeds the tokens one request holds or the hash unit does not divide it.
// REQUIRES: every block is at most that; hash unit >= 1.
Result<std::uint64_t> SchedulerBlock(const CacheConfig& config) {
  std::uint64_t lcm = 1;
  std::string blocks;
  for (const GroupSpec& g : config.groups) {
    const std::uint64_t block = TokensPerBlock(g, config.dcp);
    blocks += (blocks.empty() ? "" : ", ") + Num(block);
    lcm = std::lcm(lcm, block);
    if (lcm > kMaxTokensPerRequest) {
      return Fail(ErrorCode::kInvalidArgument,
                  "the groups' blocks of " + blocks +
                      " tokens have a least common multiple (the scheduler "
                      "block) of " +
                      Num(lcm) + ", above the limit of " +
                      Num(kMaxTokensPerRequest) + " tokens per request");
    }
  }
  // Hits are multiples of the unit or of S, so the unit divides S (spec
  // §5.2: h divides every cacheable block, a lone group's unit is its
  // block, h is S beside a recurrent group not in align mode). With no
  // cacheable group (recurrent "none", scratch) only this keeps it so.
  if (lcm % config.keys.hash_unit != 0) {
    return Fail(ErrorCode::kInvalidArgument,
                "hash unit " + Num(config.keys.hash_unit) +
                    " does not divide the scheduler block " + Num(lcm) +
                    " (the lcm of the groups' blocks of " + blocks +
                    " tokens)");
  }
  return lcm;
}

// Run once the per-group pools are valid.
Result<void> ValidateRebalancing(const CacheConfig& config) {
  const std::vector<std::uint64_t>& slots = config.pool_slot_bytes;
  if (slots.empty()) return {};
  if (slots.size() != config.groups.size()) {
    return Invalid("pool_slot_bytes has " + Num(slots.size()) + " sizes for " +
                   Num(config.groups.size()) + " groups");
  }
  for (std::size_t g = 0; g < slots.size(); ++g) {
    if (slots[g] == 0 || slots[g] > kMaxSlotBytes) {
      return Invalid("group " + Num(g) + ": pool_slot_bytes " + Num(slots[g]) +
                     " is outside [1, 2^32]");
    }
  }
  // Each term is below 2^56: checked after each, the sum cannot wrap.
  std::uint64_t ids = 1;
  for (std::uint64_t n :
       internal::RebalancedPoolIds(config.group_pool_blocks, slots)) {
    ids += n;
    if (ids > kMaxPoolBlocks) break;
  }
  if (ids > kMaxPoolBlocks) {
    return Invalid("rebalancing pools need at least " + Num(ids) +
                   " block ids, more than 2^24: the smallest slot is too "
                   "small for the arena");
  }
  return {};
}

Result<void> ValidatePools(const CacheConfig& config) {
  if (config.group_pool_blocks.empty() && !config.pool_slot_bytes.empty()) {
    return Invalid("pool_slot_bytes needs per-group pools (group_pool_blocks)");
  }
  const std::vector<std::uint32_t>& pools = config.group_pool_blocks;
  if (pools.empty()) return {};
  if (pools.size() != config.groups.size()) {
    return Invalid("group_pool_blocks has " + Num(pools.size()) +
                   " counts for " + Num(config.groups.size()) + " groups");
  }
  std::uint64_t sum = 0;
  for (std::size_t g = 0; g < pools.size(); ++g) {
    if (pools[g] == 0) {
      return Invalid("group " + Num(g) + ": its pool needs at least 1 block");
    }
    sum += pools[g];
  }
  if (sum + 1 != config.num_blocks) {
    return Invalid("num_blocks " + Num(config.num_blocks) +
                   " is not 1 + the per-group pools' blocks (" + Num(sum) +
                   ")");
  }
  return ValidateRebalancing(config);
}

// Rules that depend on the scheduler block S, the lcm of all blocks.
Result<void> ValidateAlignment(const CacheConfig& config) {
  const Result<std::uint64_t> lcm = SchedulerBlock(config);
  if (!lcm) return tl::unexpected(lcm.error());
  const std::uint64_t scheduler_block = *lcm;
  if (Result<void> valid = ValidateRetention(config, scheduler_block); !valid) {
    return valid;
  }
  for (std::size_t i = 0; i < config.groups.size(); ++i) {
    const GroupSpec& g = config.groups[i];
    const std::string name = "group " + Num(i) + ": ";
    const std::uint64_t block = TokensPerBlock(g, config.dcp);
    if (Result<void> ok = internal::TraitsOf(g.kind).check(
            g, {.block = block,
                .hash_unit = config.keys.hash_unit,
                .scheduler_block = scheduler_block,
                .dcp = config.dcp,
                .sharded = block != g.block_size,
                .caching = config.caching == PrefixCaching::kEnabled});
        !ok) {
      return Invalid(name + ok.error().message);
    }
  }
  return {};
}

}  // namespace

Result<void> CacheConfig::Validate() const {
  if (groups.empty()) return Invalid("a cache needs at least one group");
  if (num_blocks < 2) {
    return Invalid(
        "num_blocks must be at least 2 (the null block and one usable block), "
        "got " +
        Num(num_blocks));
  }
  if (keys.hash_unit == 0) return Invalid("hash unit must be at least 1 token");
  if (max_model_len == 0)
    return Invalid("max_model_len must be at least 1 token");
  if (dcp == 0) return Invalid("dcp must be at least 1");
  for (Result<void> ok :
       {AtMost(num_blocks, kMaxPoolBlocks, "num_blocks", "blocks per pool"),
        AtMost(max_model_len, kMaxTokensPerRequest, "max_model_len",
               "tokens per request"),
        AtMost(max_in_flight_tokens.value_or(0), kMaxTokensPerRequest,
               "max_in_flight_tokens", "tokens per request"),
        AtMost(retention_interval.value_or(0), kMaxTokensPerRequest,
               "retention_interval", "tokens per request")}) {
    if (!ok) return ok;
  }
  if (free_order != FreeOrder::kPrependUncached &&
      free_order != FreeOrder::kAppendAll) {
    return Invalid("free_order " + Num(static_cast<std::uint64_t>(free_order)) +
                   " is neither kPrependUncached nor kAppendAll");
  }
  if (eviction_record != EvictionRecord::kKept &&
      eviction_record != EvictionRecord::kOff) {
    return Invalid("eviction_record " +
                   Num(static_cast<std::uint64_t>(eviction_record)) +
                   " is neither kKept nor kOff");
  }
  if (behaviour != Behaviour::kSpec && behaviour != Behaviour::kEngine) {
    return Invalid("behaviour " + Num(static_cast<std::uint64_t>(behaviour)) +
                   " is neither kSpec nor kEngine");
  }
  if (Result<void> ok = ValidatePools(*this); !ok) return ok;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (Result<void> valid = ValidateGroup(groups[i], i, *this); !valid)
      return valid;
  }
  // After the groups: a unit derived from a block names the block first.
  if (Result<void> ok = AtMost(keys.hash_unit, kMaxTokensPerRequest,
                               "hash unit", "tokens per request");
      !ok) {
    return ok;
  }
  return ValidateAlignment(*this);
}

Result<Retention> ParseRetention(std::string_view text) {
  if (text == "reference") return Retention::kReference;
  if (text == "placement") return Retention::kPlacement;
  return Fail(
      ErrorCode::kInvalidArgument,
      "retention \"" + std::string(text) + "\" is not reference or placement");
}

}  // namespace hkv
