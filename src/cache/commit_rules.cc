#include "cache/commit_rules.h"

#include <algorithm>

#include "groups/kind_traits.h"
#include "groups/recurrent_state.h"
#include "groups/retention.h"

namespace hkv::internal {

void AddRetainedPositions(std::uint32_t position, Boundary kind,
                          const CacheFacts& facts,
                          std::vector<std::uint32_t>& out) {
  const bool rewind = facts.draft_model == DraftRewind::kEagle;
  const auto add = [&out](std::uint32_t p) {
    if (p > 0 && std::find(out.begin(), out.end(), p) == out.end()) {
      out.push_back(p);
    }
  };
  if (kind == Boundary::kResend && facts.placement) {
    // Where the prompt's checkpoint is: a resend proves its whole units
    // and a rewinding group drops the last.
    add(RecurrentStateManager::CheckpointPosition(position, facts.alignment,
                                                  facts.draft_model));
    return;
  }
  // A resend is capped at P - 1.
  const std::uint32_t boundary =
      kind == Boundary::kResend && position > 0 ? position - 1 : position;
  if (facts.placement) {
    add(ReachablePositions(boundary, facts.alignment,
                           rewind && !facts.junction_rewound)
            .back());
    return;
  }
  for (std::uint32_t a : {facts.alignment, facts.scheduler_block}) {
    for (std::uint32_t p : ReachablePositions(boundary, a, rewind)) add(p);
  }
}

std::vector<std::uint32_t> ResendBoundaries(const CacheGeometry& geometry,
                                            const Request& request) {
  const std::uint32_t prompt = request.num_prompt_tokens();
  const std::uint32_t resend = prompt > 0 ? prompt - 1 : 0;
  const bool rewind = geometry.facts.draft_model == DraftRewind::kEagle;
  const std::uint32_t s = geometry.facts.scheduler_block;
  std::vector<std::uint32_t> out;
  if (geometry.facts.placement) {
    AddRetainedPositions(prompt, Boundary::kResend, geometry.facts, out);
    return out;
  }
  if (geometry.facts.partial_hits) {
    for (std::uint32_t a : {geometry.facts.alignment, s}) {
      for (std::uint32_t p : ReachablePositions(resend, a, rewind)) {
        if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
      }
    }
    return out;
  }
  if (!rewind) return {resend};
  // A resend rewinds from the aligned block below it; a longer sibling from
  // the last aligned block of the prompt.
  const std::uint32_t below_resend = resend / s * s;
  const std::uint32_t below_prompt = prompt / s * s;
  out = {below_resend > s ? below_resend - s : 0,
         below_prompt > s ? below_prompt - s : 0};
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::uint32_t> ReplayBoundaries(const CacheGeometry& geometry,
                                            const Request& request,
                                            std::uint32_t junction) {
  std::vector<std::uint32_t> out = ResendBoundaries(geometry, request);
  // The junction where a sibling's prefix ends (spec §3.5): the state a
  // chunk stopping there leaves serves the siblings.
  if (junction > 0) {
    AddRetainedPositions(junction, Boundary::kJunction, geometry.facts, out);
  }
  return out;
}

std::uint32_t CacheableTokens(const CacheGeometry& geometry,
                              std::uint32_t num_tokens, GroupKind kind,
                              const GroupGeometry& group) {
  if (geometry.groups.size() == 1 || TraitsOf(kind).keeps_states) {
    return num_tokens;
  }
  const auto aligned = [&geometry](std::uint32_t n) {
    return geometry.facts.partial_hits ? n
                                       : n / geometry.facts.scheduler_block *
                                             geometry.facts.scheduler_block;
  };
  const std::uint32_t cacheable = aligned(num_tokens);
  // A rewinding group's lookups prove one block past the aligned point.
  if (group.rewind == DraftRewind::kEagle && cacheable > 0) {
    return std::min(num_tokens, aligned(num_tokens) + group.block_size);
  }
  return cacheable;
}

}  // namespace hkv::internal
