#include <algorithm>
#include <numeric>
#include <string>

#include "hkv/cache_manager.h"

namespace hkv {
namespace {

Result<void> Invalid(std::string message) {
  return Fail(ErrorCode::kInvalidArgument, std::move(message));
}

std::string Num(std::uint64_t n) { return std::to_string(n); }

Result<void> ValidateKindOptions(const GroupSpec& group,
                                 const std::string& name) {
  if (group.output_window > 0 && group.kind != GroupKind::kFullAttention) {
    return Invalid(name + "output_window applies to full-attention groups");
  }
  if (group.checkpoint_blocks == 0) return {};
  if (group.kind != GroupKind::kRecurrent ||
      group.recurrent_mode != RecurrentMode::kAlign) {
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
  const bool sharded = TokensPerBlock(group, config.dcp) != group.block_size;
  const std::uint64_t block = TokensPerBlock(group, config.dcp);
  const std::uint32_t unit = config.keys.hash_unit;
  if (block > 0xffffffffu) {
    return Invalid(name + "block of " + Num(block) +
                   " tokens exceeds 2^32 - 1");
  }
  // Only cacheable groups' blocks are keyed, so only they need the unit.
  if (group.block_size == 0 ||
      (IsPrefixCacheable(group) && block % unit != 0)) {
    return Invalid(name + "block size " + Num(block) +
                   " is not a positive multiple of the hash unit " + Num(unit));
  }
  switch (group.kind) {
    case GroupKind::kFullAttention:
      break;
    case GroupKind::kSlidingWindow:
      if (group.sliding_window == 0)
        return Invalid(name + "sliding window must be >= 1");
      if (sharded) {
        return Invalid(name +
                       "a sliding-window group cannot be DCP-sharded (dcp " +
                       Num(config.dcp) + "); make it replicated");
      }
      break;
    case GroupKind::kChunkedLocal:
      if (group.chunk_size == 0)
        return Invalid(name + "chunk size must be >= 1");
      if (group.speculation == Speculation::kEagle) {
        return Invalid(name +
                       "a chunked-local group cannot feed a draft model");
      }
      if (sharded)
        return Invalid(name + "a chunked-local group cannot be DCP-sharded");
      if (block != unit) {
        return Invalid(name +
                       "a chunked-local group needs hash unit == block size (" +
                       Num(block) + "), got " + Num(unit));
      }
      break;
    case GroupKind::kRecurrent:
      break;
    case GroupKind::kScratch:
      if (group.scratch_blocks == 0) {
        return Invalid(name + "a scratch group needs scratch_blocks >= 1");
      }
      break;
  }
  return ValidateKindOptions(group, name);
}

Result<void> ValidateRetention(const CacheConfig& config,
                               std::uint64_t scheduler_block) {
  if (!config.retention_interval || *config.retention_interval == 0) return {};
  const std::uint32_t r = *config.retention_interval;
  if (r % scheduler_block != 0) {
    return Invalid("retention interval " + Num(r) +
                   " is not a multiple of the scheduler block " +
                   Num(scheduler_block));
  }
  const bool sparse_kind = std::any_of(
      config.groups.begin(), config.groups.end(), [](const GroupSpec& g) {
        return g.kind == GroupKind::kSlidingWindow ||
               g.kind == GroupKind::kRecurrent;
      });
  if (!sparse_kind) {
    return Invalid(
        "a retention interval needs a sliding-window or recurrent "
        "group");
  }
  return {};
}

// Rules that depend on the scheduler block S, the lcm of all blocks.
Result<void> ValidateAlignment(const CacheConfig& config) {
  std::uint64_t scheduler_block = 1;
  for (const GroupSpec& g : config.groups) {
    scheduler_block = std::lcm(scheduler_block, TokensPerBlock(g, config.dcp));
  }
  if (Result<void> valid = ValidateRetention(config, scheduler_block); !valid) {
    return valid;
  }
  for (std::size_t i = 0; i < config.groups.size(); ++i) {
    const GroupSpec& g = config.groups[i];
    const std::string name = "group " + Num(i) + ": ";
    // Chunked-local hits are whole blocks, so all hits align to them.
    if (g.kind == GroupKind::kChunkedLocal && g.block_size != scheduler_block) {
      return Invalid(name +
                     "a chunked-local group's block must be the "
                     "scheduler block (the lcm of all blocks, " +
                     Num(scheduler_block) + "), got " + Num(g.block_size));
    }
    // States at every block boundary leave no room for hits between them.
    if (g.kind == GroupKind::kRecurrent &&
        g.recurrent_mode == RecurrentMode::kAll &&
        config.keys.hash_unit != scheduler_block) {
      return Invalid(name +
                     "a recurrent group in all mode needs hash unit == "
                     "scheduler block (" +
                     Num(scheduler_block) + "), got " +
                     Num(config.keys.hash_unit));
    }
  }
  return {};
}

}  // namespace

bool IsPrefixCacheable(const GroupSpec& group) {
  if (group.kind == GroupKind::kScratch) return false;
  return !(group.kind == GroupKind::kRecurrent &&
           group.recurrent_mode == RecurrentMode::kNone);
}

std::uint64_t TokensPerBlock(const GroupSpec& group, std::uint32_t dcp) {
  const bool sharded = group.dcp_layout == DcpLayout::kSharded &&
                       group.kind != GroupKind::kRecurrent;
  return std::uint64_t{group.block_size} * (sharded ? dcp : 1);
}

std::uint64_t MaxBlocksPerRequest(const GroupSpec& group,
                                  const RequestBounds& bounds) {
  const std::uint64_t b = TokensPerBlock(group, bounds.dcp);
  const std::uint64_t length = bounds.max_model_len;
  const std::uint64_t in_flight = bounds.max_in_flight_tokens;
  const auto blocks = [b](std::uint64_t tokens) {
    return (tokens + b - 1) / b;
  };
  switch (group.kind) {
    case GroupKind::kSlidingWindow:
      return blocks(std::min(group.sliding_window - 1 + in_flight, length)) + 1;
    case GroupKind::kChunkedLocal:
      return blocks(std::min(group.chunk_size + in_flight, length));
    case GroupKind::kRecurrent:
      switch (group.recurrent_mode) {
        case RecurrentMode::kAlign:
          return 2 + std::uint64_t{group.speculative_blocks} +
                 group.checkpoint_blocks;
        case RecurrentMode::kAll:  // a state per block of the chunk
          return blocks(std::min(in_flight, length)) + 1 +
                 group.speculative_blocks;
        case RecurrentMode::kNone:
          return 1 + std::uint64_t{group.speculative_blocks};
      }
      break;
    case GroupKind::kScratch:
      return group.scratch_blocks;
    case GroupKind::kFullAttention:
      break;
  }
  return blocks(length);
}

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
  if (free_order != FreeOrder::kPrependUncached &&
      free_order != FreeOrder::kAppendAll) {
    return Invalid("free_order " + Num(static_cast<std::uint64_t>(free_order)) +
                   " is neither kPrependUncached nor kAppendAll");
  }
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (Result<void> valid = ValidateGroup(groups[i], i, *this); !valid)
      return valid;
  }
  return ValidateAlignment(*this);
}

}  // namespace hkv
