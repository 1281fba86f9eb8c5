// The fixture of the recurrent-state vector tests: a cache core driven the
// way the reference's tests drive allocate_slots (each allocation registers
// what it schedules right away).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "test_util.h"

namespace hkv::testing {

inline GroupSpec Full(std::uint32_t block) { return {.block_size = block}; }
inline GroupSpec State(std::uint32_t block) {
  return {.kind = GroupKind::kRecurrent, .block_size = block};
}
inline std::vector<GroupSpec> Eagle(std::vector<GroupSpec> groups) {
  for (GroupSpec& g : groups) g.speculation = Speculation::kEagle;
  return groups;
}

class RecurrentTest : public ::testing::Test {
 protected:
  void Build(std::vector<GroupSpec> groups, std::uint32_t unit,
             std::uint32_t num_blocks, std::uint32_t dcp = 1) {
    cache_ = std::make_unique<internal::CacheCore>(
        CacheConfig{.groups = std::move(groups),
                    .num_blocks = num_blocks,
                    .keys = {.hash_unit = unit},
                    .dcp = dcp});
  }
  Request Make(std::uint64_t id, const std::vector<TokenId>& tokens) {
    return Request({.id = RequestId{id}}, tokens, cache_->key_scheme());
  }
  // Allocates `num_new` tokens after `computed` (or after `hit`) and
  // registers them; returns the new blocks per group, or nullopt.
  std::optional<std::vector<std::vector<BlockId>>> Schedule(
      const Request& r, std::uint32_t computed, std::uint32_t num_new,
      const CacheHit* hit = nullptr) {
    std::optional<NewBlocks> placed =
        cache_->Allocate(r, {.num_computed_tokens = computed,
                             .num_new_tokens = num_new,
                             .hit = hit});
    if (!placed) return std::nullopt;
    const std::uint32_t done = computed + (hit ? hit->num_tokens : 0) + num_new;
    cache_->Commit(r, std::min(done, r.num_tokens()));
    return placed->blocks;
  }
  // A new scheduler step: copies ran, pins released.
  void NextStep() {
    cache_->TakeCopies();
    cache_->FinishStep();
  }
  std::uint32_t Tokens(BlockId block) const {
    return cache_->pool().primary_num_tokens(block);
  }

  std::unique_ptr<internal::CacheCore> cache_;
};

inline std::vector<TokenId> Prefix48() {
  return Concat(Concat(Repeat(0, 16), Repeat(1, 16)), Repeat(2, 16));
}

}  // namespace hkv::testing
