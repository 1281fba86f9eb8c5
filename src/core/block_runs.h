// Runs of consecutive block ids: the test that lets BlockPool's hot loops
// handle 16 blocks at a time instead of one. A request's table holds long
// runs (blocks leave the free queue in the order they entered it, and a
// request frees its table last first), so freeing a request is mostly runs.
//
// Stateless; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hkv/types.h"

namespace hkv::internal {

inline constexpr std::size_t kRunWidth = 16;

// How ids[k] follows ids[0] over a run: ids[0] + k or ids[0] - k.
enum class RunStep { kNone, kAscending, kDescending };

// The lowest id of a run of kRunWidth ids starting at `first`.
inline std::uint32_t RunLowest(std::uint32_t first, RunStep step) {
  return step == RunStep::kDescending
             ? first - static_cast<std::uint32_t>(kRunWidth - 1)
             : first;
}

// Per block id, the two 32-bit words BlockPool keeps: its reference count,
// then its primary key's tokens (0: no key).
struct BlockWords {
  std::uint32_t ref_count = 0;
  std::uint32_t primary_num_tokens = 0;
};

// FindRun's reference count for "any".
inline constexpr std::uint32_t kAnyRefCount = UINT32_MAX;

// Whether ids[0 .. kRunWidth) are consecutive ids (either way), the null
// block not among them, whose words all hold `ref_count` (unless it is
// kAnyRefCount) and, with `need_key`, a primary key; then how they follow
// each other. kNone on a CPU without AVX-512 (callers then take their
// one-block loop). REQUIRES: every id of a run indexes `blocks`.
RunStep FindRun(const BlockId* ids, const BlockWords* blocks,
                std::uint32_t ref_count, bool need_key);

// Per id, the two 32-bit words of a free list's links: the previous id,
// then the next.
struct LinkWords {
  std::uint32_t prev = 0;
  std::uint32_t next = 0;
};

// How the ids lowest .. lowest + kRunWidth - 1, whose links are
// run[0 .. kRunWidth), follow each other on a list: each id's next is id + 1
// and its previous id - 1 (kAscending), the reverse (kDescending), or
// neither (kNone; also on a CPU without AVX-512). The links out of the run
// (its ends' outer neighbours) may be anything.
RunStep FindLinkedRun(const LinkWords* run, std::uint32_t lowest);

// How many of run[0 .. kRunWidth) hold no reference.
std::uint32_t CountUnreferenced(const BlockWords* run);

// Whether FindRun can answer anything but kNone on this CPU.
bool FindsRuns();

// Sets the reference count of run[0 .. kRunWidth) to `ref_count`, keeping
// their keys.
void SetReferences(BlockWords* run, std::uint32_t ref_count);

}  // namespace hkv::internal
