#include "cache/prefill_split.h"

#include <algorithm>
#include <numeric>

#include "groups/recurrent_state.h"
#include "groups/retention.h"

namespace hkv::internal {

namespace {

std::uint32_t ExportBlock(const CacheConfig& config) {
  std::uint32_t block = 0;
  for (const GroupSpec& g : config.groups) {
    if (g.kind != GroupKind::kRecurrent ||
        g.recurrent_mode != RecurrentMode::kAlign) {
      continue;
    }
    if (g.checkpoint_blocks == 0 || (block != 0 && block != g.block_size)) {
      return 0;
    }
    block = g.block_size;
  }
  return block;
}

}  // namespace

SplitRules MakeSplitRules(const CacheConfig& config,
                          const CacheGeometry& geometry) {
  SplitRules rules;
  const GroupSpec* attention = nullptr;
  std::uint32_t states = 1;  // lcm of the aligned recurrent blocks
  for (const GroupSpec& g : config.groups) {
    if (g.kind == GroupKind::kRecurrent &&
        g.recurrent_mode == RecurrentMode::kAlign) {
      rules.applies = true;
      states = std::lcm(states, g.block_size);
    }
    if (attention == nullptr && g.kind == GroupKind::kFullAttention) {
      attention = &g;
    }
  }
  // The configured page (the full-attention block per rank, else the first
  // group's), and a multiple of every aligned recurrent block: a chunk that
  // ended inside a state block would leave that block holding a state from
  // before its end.
  rules.block =
      std::lcm((attention ? *attention : config.groups[0]).block_size, states);
  rules.hash_unit = config.keys.hash_unit;
  rules.fine =
      geometry.partial_hits && config.keys.hash_unit < geometry.scheduler_block;
  rules.checkpoint_unit =
      rules.fine ? config.keys.hash_unit : geometry.scheduler_block;
  rules.rewind = geometry.groups[0].draft_model;
  rules.alignment = geometry.alignment;
  rules.scheduler_block = geometry.scheduler_block;
  rules.retention_interval = config.retention_interval;
  rules.export_block = ExportBlock(config);
  return rules;
}

namespace {

std::uint32_t Checkpoint(std::uint32_t n, std::uint32_t unit,
                         DraftRewind rewind) {
  return RecurrentStateManager::CheckpointPosition(n, unit, rewind);
}

// Sparse retention keeps states only where they were left: stop on each
// retention segment's end, and with R = 0 on every position it keeps.
template <typename Consider>
void ConsiderRetention(const SplitRules& rules, const SplitInput& input,
                       std::uint32_t start, Consider&& consider) {
  if (!rules.retention_interval) return;
  const std::uint32_t r = *rules.retention_interval;
  if (r > 0) {
    consider((start / r + 1) * r);
    return;
  }
  const std::uint32_t prompt = input.num_prompt_tokens;
  const bool rewind = rules.rewind == DraftRewind::kEagle;
  for (std::uint32_t x :
       {prompt > 0 ? prompt - 1 : 0u, input.chunk.shared_prefix_boundary}) {
    if (x == 0) continue;
    for (std::uint32_t a : {rules.alignment, rules.scheduler_block}) {
      for (std::uint32_t p : ReachablePositions(x, a, rewind)) consider(p);
    }
  }
}

// The prompt's checkpoint when the kernel exports it from inside the chunk
// [start, end) into a slot the request does not hold yet (as the recurrent
// manager then does); 0 otherwise.
std::uint32_t ExportedCheckpoint(const SplitRules& rules,
                                 const SplitInput& input, std::uint32_t start,
                                 std::uint32_t end) {
  const std::uint32_t b = rules.export_block;
  const std::uint32_t prompt = input.num_prompt_tokens;
  if (b == 0 || end < prompt) return 0;
  const std::uint32_t position =
      Checkpoint(prompt, rules.alignment, rules.rewind);
  const bool inside = position > start && position < end;
  const bool fresh_slot = (end + b - 1) / b >= (start + b - 1) / b + 2;
  return inside && fresh_slot ? position : 0;
}

}  // namespace

std::uint32_t SplitPrefill(const SplitRules& rules, const SplitInput& input) {
  const PrefillChunk& chunk = input.chunk;
  if (!rules.applies || input.num_tokens == 0) return chunk.num_new_tokens;
  const std::uint32_t b = rules.block;
  const std::uint32_t start = chunk.num_computed_tokens;
  std::uint32_t end = start + chunk.num_new_tokens;
  const std::uint32_t prefill_end =
      std::max(input.num_prompt_tokens, input.num_tokens - 1);
  if (start >= prefill_end) return chunk.num_new_tokens;
  if (end < prefill_end) {
    std::uint32_t cap = chunk.max_num_scheduled_tokens;
    if (chunk.long_prefill_threshold > 0) {
      cap = std::min(cap, chunk.long_prefill_threshold);
    }
    // Sub-block chunks only when a block does not fit the budget.
    const std::uint32_t aligned = end / b * b;
    if (aligned > start || b <= cap) end = aligned;
  }
  std::uint32_t stop = end;
  // An exported checkpoint needs no chunk to end there.
  const std::uint32_t exported = ExportedCheckpoint(rules, input, start, end);
  const auto consider = [&](std::uint32_t s) {
    if (s > start && s < stop && s != exported) stop = s;
  };
  if (start % b != 0) consider((start / b + 1) * b);
  const std::uint32_t last_cache =
      Checkpoint(input.num_tokens, b, rules.rewind);
  consider(last_cache);
  if (rules.fine) {
    const std::uint32_t tail =
        Checkpoint(input.num_prompt_tokens, rules.hash_unit, rules.rewind);
    if (last_cache < tail && tail < input.num_prompt_tokens) consider(tail);
  }
  const std::uint32_t junction = chunk.shared_prefix_boundary;
  if (junction > start && junction < end) {
    consider(start + (junction - start) / b * b);
  }
  ConsiderRetention(rules, input, start, consider);
  return end > start ? stop - start : 0;
}

}  // namespace hkv::internal
