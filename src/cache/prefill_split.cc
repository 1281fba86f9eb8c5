#include "cache/prefill_split.h"

#include <algorithm>
#include <numeric>

#include "cache/commit_rules.h"
#include "groups/kind_traits.h"
#include "groups/recurrent_state.h"
#include "groups/retention.h"

namespace hkv::internal {

namespace {

std::uint32_t ExportBlock(const CacheConfig& config) {
  std::uint32_t block = 0;
  for (const GroupSpec& g : config.groups) {
    if (!IsAlignedRecurrent(g)) continue;
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
    if (IsAlignedRecurrent(g)) {
      rules.applies = true;
      states = std::lcm(states, g.block_size);
    }
    if (attention == nullptr && TraitsOf(g.kind).reads_whole_prefix) {
      attention = &g;
    }
  }
  // The configured page (the full-attention block per rank, else the first
  // group's), and a multiple of every aligned recurrent block: a chunk that
  // ended inside a state block would leave that block holding a state from
  // before its end.
  rules.block =
      std::lcm((attention ? *attention : config.groups[0]).block_size, states);
  const CacheFacts& facts = geometry.facts;
  rules.fine = facts.partial_hits && facts.hash_unit < facts.scheduler_block;
  rules.export_block = ExportBlock(config);
  return rules;
}

namespace {

std::uint32_t Checkpoint(std::uint32_t n, std::uint32_t unit,
                         DraftRewind rewind) {
  return RecurrentStateManager::CheckpointPosition(n, unit, rewind);
}

// The prompt's checkpoint when the kernel exports it from inside the chunk
// [start, end) into a slot the request does not hold yet (as the recurrent
// manager then does; spec §7.3 "internal"); 0 otherwise.
std::uint32_t ExportedCheckpoint(const SplitInput& input, std::uint32_t start,
                                 std::uint32_t end) {
  const std::uint32_t b = input.rules.export_block;
  const std::uint32_t prompt = input.num_prompt_tokens;
  if (b == 0 || end < prompt) return 0;
  const std::uint32_t position =
      Checkpoint(prompt, input.facts.alignment, input.facts.draft_model);
  const bool inside = position > start && position < end;
  const bool fresh_slot = (end + b - 1) / b >= (start + b - 1) / b + 2;
  return inside && fresh_slot ? position : 0;
}

// The first stop strictly inside (start, end); `end` when none.
class FirstStop {
 public:
  FirstStop(std::uint32_t start, std::uint32_t end)
      : start_(start), stop_(end) {}
  void Consider(std::uint32_t s) {
    if (s > start_ && s < stop_) stop_ = s;
  }
  std::uint32_t stop() const { return stop_; }

 private:
  std::uint32_t start_;
  std::uint32_t stop_;
};

// With R = 0 the recurrent states are kept only at the positions a resend
// or a sibling at the junction resumes from (spec §3.5's expansion of
// P - 1 and J at the alignment and the scheduler block; under placement
// the one position a lookup lands on), so chunks stop there. An exporting chunk
// does not stop at floor(end / b) * b: the export takes the slot the state
// there would need.
void ConsiderResendPositions(const SplitInput& input, std::uint32_t end,
                             bool exports, FirstStop& stops) {
  const std::uint32_t prompt = input.num_prompt_tokens;
  const std::uint32_t b = input.rules.export_block;
  // 0 is never a stop.
  const std::uint32_t skipped = exports && end % b != 0 ? end / b * b : 0;
  std::vector<std::uint32_t> positions;
  if (prompt > 0) {
    AddRetainedPositions(prompt, Boundary::kResend, input.facts, positions);
  }
  if (const std::uint32_t junction = input.chunk.shared_prefix_boundary;
      junction > 0) {
    AddRetainedPositions(junction, Boundary::kJunction, input.facts, positions);
  }
  for (std::uint32_t p : positions) {
    if (p != skipped) stops.Consider(p);
  }
}

// The stops of spec §7.3 for the chunk [start, end). `exported`: the
// checkpoint the chunk exports (0: none); such a chunk need not stop on the
// next block, at the last state or at the prompt's tail.
std::uint32_t FirstStopOf(const SplitInput& input, std::uint32_t end,
                          std::uint32_t exported) {
  const SplitRules& rules = input.rules;
  const CacheFacts& facts = input.facts;
  const std::uint32_t b = rules.block;
  const std::uint32_t start = input.chunk.num_computed_tokens;
  FirstStop stops(start, end);
  if (exported == 0) {
    if (start % b != 0) stops.Consider((start / b + 1) * b);
    const std::uint32_t last =
        Checkpoint(input.num_tokens, b, facts.draft_model);
    stops.Consider(last);
    const std::uint32_t tail =
        Checkpoint(input.num_prompt_tokens, facts.hash_unit, facts.draft_model);
    if (rules.fine && last < tail && tail < input.num_prompt_tokens) {
      stops.Consider(tail);
    }
  }
  const std::optional<std::uint32_t> r = facts.retention_interval;
  if (r && *r > 0) stops.Consider((start / *r + 1) * *r);
  const std::uint32_t junction = input.chunk.shared_prefix_boundary;
  if (junction > start && junction < end) {
    stops.Consider(start + (junction - start) / b * b);
  }
  if (r && *r == 0) {
    ConsiderResendPositions(input, end, exported != 0, stops);
  }
  return stops.stop();
}

}  // namespace

std::uint32_t SplitPrefill(const SplitInput& input) {
  const SplitRules& rules = input.rules;
  const PrefillChunk& chunk = input.chunk;
  if (!rules.applies || input.num_tokens == 0) return chunk.num_new_tokens;
  const std::uint32_t b = rules.block;
  const std::uint32_t start = chunk.num_computed_tokens;
  std::uint32_t end = start + chunk.num_new_tokens;
  const std::uint32_t prefill_end =
      std::max(input.num_prompt_tokens, input.num_tokens - 1);
  if (start >= prefill_end) return chunk.num_new_tokens;
  const std::uint32_t exported = ExportedCheckpoint(input, start, end);
  if (end < prefill_end && exported == 0) {
    std::uint32_t cap = chunk.max_num_scheduled_tokens;
    if (chunk.long_prefill_threshold > 0) {
      cap = std::min(cap, chunk.long_prefill_threshold);
    }
    // Sub-block chunks only when a block does not fit the budget.
    const std::uint32_t aligned = end / b * b;
    if (aligned > start || b <= cap) end = aligned;
  }
  std::uint32_t stop = FirstStopOf(input, end, exported);
  // A stop before the prompt's end leaves the chunk nothing to export: it
  // must then end at the checkpoint itself, or no state is left there
  // (a deviation from §7.3, which loses the resend's hit; docs/design.md).
  if (exported != 0 && stop < input.num_prompt_tokens) {
    stop = std::min(stop, exported);
  }
  return end > start ? stop - start : 0;
}

}  // namespace hkv::internal
