#include "cache/coordinator.h"

#include <algorithm>

namespace hkv::internal {

Coordinator::Coordinator(
    const std::vector<std::unique_ptr<GroupManager>>& managers,
    const CacheGeometry& geometry)
    : managers_(managers), geometry_(geometry) {}

void Coordinator::Collect(const SpecGroup& group, GroupHit& hit,
                          CommonHit& out) const {
  for (std::size_t m = 0; m < group.members.size(); ++m) {
    out.blocks[ToIndex(group.members[m])] = std::move(hit.blocks[m]);
  }
}

CommonHit Coordinator::FindUnitary(std::span<const BlockHash> keys,
                                   std::uint32_t max_length) const {
  const SpecGroup& group = geometry_.spec_groups[0];
  GroupHit hit = managers_[0]->FindLongestHit({.keys = keys,
                                               .max_length = max_length,
                                               .rewind = group.rewind,
                                               .members = group.members});
  CommonHit out{.num_tokens = hit.num_tokens,
                .blocks = {},
                .longest = hit.num_tokens,
                .chain_tokens = std::min(hit.proven_tokens, max_length)};
  if (hit.num_tokens < out.chain_tokens) {
    out.limiter = group.members[0];  // only its own rewind can lower it
    out.limited_by_rewind = true;
  }
  out.blocks.resize(managers_.size());
  Collect(group, hit, out);
  return out;
}

std::uint32_t Coordinator::ProofLength(const GroupManager& manager,
                                       std::uint32_t length,
                                       std::size_t num_keys) const {
  if (!manager.traits().rewinds_itself) return length;
  const GroupGeometry& g = manager.geometry();
  const bool unit_margin = geometry_.partial_hits &&
                           manager.traits().fine_capable &&
                           g.block_size > g.hash_unit;
  const std::uint64_t proof =
      std::uint64_t{length} + (unit_margin ? g.hash_unit : g.block_size);
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>(proof, std::uint64_t{num_keys} * g.hash_unit));
}

CommonHit Coordinator::FindLongestHit(std::span<const BlockHash> keys,
                                      std::uint32_t max_length) const {
  if (geometry_.spec_groups.empty()) {  // nothing is cached
    CommonHit none;
    none.blocks.resize(managers_.size());
    return none;
  }
  if (managers_.size() == 1) return FindUnitary(keys, max_length);
  const std::vector<SpecGroup>& groups = geometry_.spec_groups;
  Pass pass{.keys = keys,
            .hits = std::vector<GroupHit>(groups.size()),
            .looked_up = std::vector<bool>(groups.size(), false)};
  const bool one_pass =
      groups.size() == 2 && groups[0].kind == GroupKind::kFullAttention;
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
  GroupHit& hit = pass.hits[i];
  // Full attention's set is downward closed: one lookup serves every length.
  if (group.kind == GroupKind::kFullAttention && pass.looked_up[i]) {
    return std::min(current, hit.num_tokens);
  }
  // A rewinding group always answers from its rewound set: it proves one
  // unit (block) past the length and drops it, exactly once per question.
  // (The reference asks a group plain once its rewind was "verified", which
  // answers from a different set and can lose a valid hit.)
  const bool rewind = group.rewind == DraftRewind::kEagle;
  hit = manager.FindLongestHit(
      {.keys = pass.keys,
       .max_length =
           rewind ? ProofLength(manager, current, pass.keys.size()) : current,
       .rewind = rewind ? DraftRewind::kEagle : DraftRewind::kNone,
       .members = group.members});
  pass.looked_up[i] = true;
  if (hit.num_tokens < current) {
    // The rewind alone lowered it: full attention's chain is its proof;
    // another group could resume at `current` before dropping.
    const bool rewound = rewind && (group.kind == GroupKind::kFullAttention
                                        ? hit.proven_tokens > hit.num_tokens
                                        : hit.proven_tokens >= current);
    pass.limiter = Limiter{i, rewound};
  }
  pass.longest = std::max(pass.longest, hit.num_tokens);
  return hit.num_tokens;
}

CommonHit Coordinator::Gather(std::uint32_t hit, std::uint32_t max_length,
                              Pass& pass) const {
  const std::vector<SpecGroup>& groups = geometry_.spec_groups;
  CommonHit out{.num_tokens = hit, .blocks = {}, .longest = pass.longest};
  out.blocks.resize(managers_.size());
  std::optional<std::uint32_t> chain;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].kind == GroupKind::kFullAttention) {
      chain = std::min(chain.value_or(max_length), pass.hits[i].proven_tokens);
      const std::uint32_t b =
          managers_[ToIndex(groups[i].members[0])]->geometry().block_size;
      for (std::vector<BlockId>& blocks : pass.hits[i].blocks) {
        blocks.resize(std::min<std::size_t>(blocks.size(), (hit + b - 1) / b));
      }
    }
    Collect(groups[i], pass.hits[i], out);
  }
  out.chain_tokens = std::min(chain.value_or(pass.longest), max_length);
  if (hit < out.chain_tokens && pass.limiter) {
    out.limiter = geometry_.spec_groups[pass.limiter->spec_group].members[0];
    out.limited_by_rewind = pass.limiter->rewound;
  }
  return out;
}

}  // namespace hkv::internal
