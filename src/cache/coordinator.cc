#include "cache/coordinator.h"

#include <algorithm>

#include "groups/kind_traits.h"

namespace hkv::internal {

Coordinator::Coordinator(
    const std::vector<std::unique_ptr<GroupManager>>& managers,
    const CacheGeometry& geometry)
    : managers_(managers), geometry_(geometry) {}

void Coordinator::Collect(const SpecGroup& group, GroupHit& hit,
                          CacheHit& out) const {
  for (std::size_t m = 0; m < group.members.size(); ++m) {
    out.blocks[ToIndex(group.members[m])] = std::move(hit.blocks[m]);
  }
}

void Coordinator::Blame(const SpecGroup& limiter, bool rewound,
                        CacheHit& out) const {
  out.limiting_group = limiter.members[0];
  if (rewound) {
    out.miss_cause = MissCause::kSpeculativeRewind;
  } else {
    out.miss_cause = TraitsOf(limiter.kind).keeps_states
                         ? MissCause::kNoCheckpoint
                         : MissCause::kWindowNotCovered;
  }
}

CacheHit Coordinator::FindUnitary(KeyView keys,
                                  std::uint32_t max_length) const {
  const SpecGroup& group = geometry_.spec_groups[0];
  GroupHit hit = managers_[0]->FindLongestHit({.keys = keys,
                                               .max_length = max_length,
                                               .rewind = group.rewind,
                                               .members = group.members});
  CacheHit out{.num_tokens = hit.num_tokens,
               .chain_tokens = std::min(hit.proven_tokens, max_length)};
  // Only its own rewind can lower it.
  if (hit.num_tokens < out.chain_tokens) Blame(group, true, out);
  out.blocks.resize(managers_.size());
  Collect(group, hit, out);
  return out;
}

std::uint32_t Coordinator::ProofLength(const SpecGroup& group,
                                       std::uint32_t length,
                                       std::size_t num_keys) const {
  const KindTraits& kind = TraitsOf(group.kind);
  if (!kind.rewinds_itself) return length;
  const std::uint32_t b =
      managers_[ToIndex(group.members[0])]->geometry().block_size;
  const std::uint32_t unit = geometry_.facts.hash_unit;
  const bool unit_margin =
      geometry_.facts.partial_hits && kind.fine_capable && b > unit;
  const std::uint64_t proof = std::uint64_t{length} + (unit_margin ? unit : b);
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>(proof, std::uint64_t{num_keys} * unit));
}

CacheHit Coordinator::FindLongestHit(KeyView keys,
                                     std::uint32_t max_length) const {
  if (geometry_.spec_groups.empty()) {  // nothing is cached
    CacheHit none;
    none.blocks.resize(managers_.size());
    return none;
  }
  if (managers_.size() == 1) return FindUnitary(keys, max_length);
  const std::vector<SpecGroup>& groups = geometry_.spec_groups;
  Pass pass{.keys = keys,
            .hits = std::vector<GroupHit>(groups.size()),
            .asked = std::vector<std::optional<std::uint32_t>>(groups.size())};
  const bool one_pass =
      groups.size() == 2 && TraitsOf(groups[0].kind).reads_whole_prefix;
  std::uint32_t hit = max_length;
  for (;;) {
    std::uint32_t current = hit;
    for (std::size_t i = 0; i < groups.size(); ++i) {
      current = Ask(i, current, pass);
    }
    if (current >= hit) break;
    hit = current;
    if (one_pass) break;
  }
  return Gather(hit, max_length, pass);
}

std::uint32_t Coordinator::Ask(std::size_t i, std::uint32_t current,
                               Pass& pass) const {
  const SpecGroup& group = geometry_.spec_groups[i];
  const GroupManager& manager = *managers_[ToIndex(group.members[0])];
  const bool whole_prefix = TraitsOf(group.kind).reads_whole_prefix;
  GroupHit& hit = pass.hits[i];
  // A whole-prefix set is downward closed: one lookup serves every length.
  if (whole_prefix && pass.asked[i]) {
    return std::min(current, hit.num_tokens);
  }
  // A rewinding group always answers from its rewound set: it proves one
  // unit (block) past the length and drops it, exactly once per question.
  // (The reference asks a group plain once its rewind was "verified", which
  // answers from a different set and can lose a valid hit.)
  const bool rewind = group.rewind == DraftRewind::kEagle;
  const std::uint32_t length =
      rewind ? ProofLength(group, current, pass.keys.size()) : current;
  // Asked the same length again (the loop's last pass, once the groups
  // agree): a lookup changes nothing, so the answer is the one it has.
  if (pass.asked[i] != length) {
    hit = manager.FindLongestHit(
        {.keys = pass.keys,
         .max_length = length,
         .rewind = rewind ? DraftRewind::kEagle : DraftRewind::kNone,
         .members = group.members});
    pass.asked[i] = length;
  }
  if (hit.num_tokens < current) {
    // The rewind alone lowered it: full attention's chain is its proof;
    // another group could resume at `current` before dropping.
    const bool rewound =
        rewind && (whole_prefix ? hit.proven_tokens > hit.num_tokens
                                : hit.proven_tokens >= current);
    pass.limiter = Limiter{i, rewound};
  }
  pass.longest = std::max(pass.longest, hit.num_tokens);
  return hit.num_tokens;
}

CacheHit Coordinator::Gather(std::uint32_t hit, std::uint32_t max_length,
                             Pass& pass) const {
  const std::vector<SpecGroup>& groups = geometry_.spec_groups;
  CacheHit out{.num_tokens = hit};
  out.blocks.resize(managers_.size());
  std::optional<std::uint32_t> chain;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (TraitsOf(groups[i].kind).reads_whole_prefix) {
      chain = std::min(chain.value_or(max_length), pass.hits[i].proven_tokens);
      const std::uint32_t b =
          managers_[ToIndex(groups[i].members[0])]->geometry().block_size;
      for (std::vector<BlockId>& blocks : pass.hits[i].blocks) {
        blocks.resize(std::min<std::size_t>(blocks.size(), (hit + b - 1) / b));
      }
    }
    Collect(groups[i], pass.hits[i], out);
  }
  // Without a whole-prefix group the chain is the longest answer.
  out.chain_tokens = std::min(chain.value_or(pass.longest), max_length);
  if (pass.longest > hit) out.shared_prefix_boundary = pass.longest;
  if (hit < out.chain_tokens && pass.limiter) {
    Blame(groups[pass.limiter->spec_group], pass.limiter->rewound, out);
  }
  return out;
}

}  // namespace hkv::internal
