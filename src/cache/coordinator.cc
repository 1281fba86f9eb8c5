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
  CommonHit out{
      .num_tokens = hit.num_tokens, .blocks = {}, .longest = hit.num_tokens};
  out.blocks.resize(managers_.size());
  Collect(group, hit, out);
  return out;
}

std::uint32_t Coordinator::ProofLength(const GroupManager& manager,
                                       std::uint32_t length,
                                       std::size_t num_keys) const {
  if (!manager.RewindsItself()) return length;
  const GroupGeometry& g = manager.geometry();
  const bool unit_margin = geometry_.partial_hits && manager.FineCapable() &&
                           g.block_size > g.hash_unit;
  const std::uint64_t proof =
      std::uint64_t{length} + (unit_margin ? g.hash_unit : g.block_size);
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>(proof, std::uint64_t{num_keys} * g.hash_unit));
}

CommonHit Coordinator::FindLongestHit(std::span<const BlockHash> keys,
                                      std::uint32_t max_length) const {
  if (managers_.size() == 1) return FindUnitary(keys, max_length);
  const std::vector<SpecGroup>& groups = geometry_.spec_groups;
  std::vector<GroupHit> hits(groups.size());
  std::vector<bool> looked_up(groups.size(), false);
  // Spec groups whose rewind is proven at the current length.
  std::vector<bool> verified(groups.size(), false);
  const bool one_pass =
      groups.size() == 2 && groups[0].kind == GroupKind::kFullAttention;
  std::uint32_t hit = max_length;
  std::uint32_t longest = 0;
  for (;;) {
    std::uint32_t current = hit;
    for (std::size_t i = 0; i < groups.size(); ++i) {
      const SpecGroup& group = groups[i];
      const GroupManager& manager = *managers_[ToIndex(group.members[0])];
      if (group.kind == GroupKind::kFullAttention && looked_up[i]) {
        current = std::min(current, hits[i].num_tokens);
        continue;
      }
      const bool rewind = group.rewind == DraftRewind::kEagle && !verified[i];
      hits[i] = manager.FindLongestHit(
          {.keys = keys,
           .max_length =
               rewind ? ProofLength(manager, current, keys.size()) : current,
           .rewind = rewind ? DraftRewind::kEagle : DraftRewind::kNone,
           .members = group.members});
      looked_up[i] = true;
      if (rewind) {
        verified[i] = true;
      } else if (hits[i].num_tokens < current) {
        std::fill(verified.begin(), verified.end(), false);
      }
      current = hits[i].num_tokens;
      longest = std::max(longest, current);
    }
    if (current >= hit) break;
    hit = current;
    if (one_pass) break;
  }
  CommonHit out{.num_tokens = hit, .blocks = {}, .longest = longest};
  out.blocks.resize(managers_.size());
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].kind == GroupKind::kFullAttention) {
      const std::uint32_t b =
          managers_[ToIndex(groups[i].members[0])]->geometry().block_size;
      for (std::vector<BlockId>& blocks : hits[i].blocks) {
        blocks.resize(std::min<std::size_t>(blocks.size(), (hit + b - 1) / b));
      }
    }
    Collect(groups[i], hits[i], out);
  }
  return out;
}

}  // namespace hkv::internal
