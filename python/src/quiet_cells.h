// hkv.vllm's decode fast path (the quiet path at the top of allocate_slots
// in python/hkv/vllm/manager.py): the token counts across which no group's
// allocation, release or caching changes, and the record of them an
// allocation leaves for the next one.
// In C++ because a quarter of a hybrid model's decode allocations cross a
// boundary, and the record's Python cost was a fifth of such a call.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "bindings.h"
#include "hkv/group_spec.h"

namespace hkv::python {

// The record an allocation leaves: a later allocation changes nothing while
// its epoch, lookahead and commit flag are these and its computed, main and
// cached token counts stay in these ranges (inclusive).
struct QuietRecord {
  std::int64_t epoch = 0;
  std::int64_t lookahead = 0;
  bool no_commit = false;  // the allocation cached nothing
  std::int64_t computed_lo = 0;
  std::int64_t computed_hi = 0;
  std::int64_t main_lo = 0;
  std::int64_t main_hi = 0;
  std::int64_t commit_lo = 0;
  std::int64_t commit_hi = 0;

  // As Python sees it: (epoch, lookahead, commit is None, computed lo, hi,
  // main lo, hi, commit lo, hi).
  py::tuple AsTuple() const;
  // The record of such a tuple; UsageError for anything else.
  static QuietRecord FromTuple(py::handle tuple);
};

// The token counts an allocation of a running request reads.
enum class QuietCount {
  kComputed,  // computed before the call: what groups release
  kMain,      // computed plus new (and, past it, the slots): what they place
  kCached,    // what the commit caches up to
};

class QuietCells {
 public:
  // `block_sizes`: each group's tokens per block, as the manager counts
  // them. A group's allocations, releases and caching change only where a
  // token count crosses an offset plus a multiple of a period. The main
  // count (and the slot count): where its blocks' ceiling moves (offset 1),
  // in every group. The cached count: where a block fills (offset 0), in
  // every group. The computed count, in the groups that release blocks
  // behind it: where a window's start passes a block (the engine skips
  // computed - window + 1 tokens: offset window - 1); a chunk's start (the
  // engine skips the chunks computed in whole: offset 0 of each chunk); a
  // recurrent state's release, one token past a block once the speculative
  // blocks' count is taken off the computed tokens (the engine's
  // MambaManager.remove_skipped_blocks: offset s + 1). Full attention
  // releases nothing: its computed count binds nothing.
  // UsageError for sizes that do not match the groups or a period below 1.
  QuietCells(const std::vector<GroupSpec>& groups,
             const std::vector<std::int64_t>& block_sizes,
             std::int64_t max_model_len);

  // The counts of kind `count` around `x` that no group tells apart from
  // it; a side no boundary binds is +-2^62.
  std::pair<std::int64_t, std::int64_t> Cell(QuietCount count,
                                             std::int64_t x) const;

  // The record an allocation of a request of `num_prompt_tokens` leaves. A
  // later allocation changes nothing while its computed, main, slot and
  // cached token counts stay in the cells of this one's; the slot count's
  // cell is folded into the main count's range (with the same lookahead,
  // slots are main plus lookahead capped at max_model_len). The cells know
  // only the groups' periodic boundaries; those particular to a request (a
  // partial entry at its prompt's last hash unit when the hash unit is
  // smaller than a block, a recurrent state's prompt checkpoint, the
  // positions a resend replays) all lie at or below its prompt. So there is
  // no record while the computed count is below the prompt, and no range
  // reaches below it (drafts rejected take the computed count back).
  std::optional<QuietRecord> Record(std::int64_t epoch,
                                    std::int64_t total_computed,
                                    std::int64_t num_new_tokens,
                                    std::int64_t lookahead,
                                    std::optional<std::int64_t> commit,
                                    std::int64_t num_prompt_tokens) const;

 private:
  struct Period {
    std::int64_t period;
    // Ascending, between the last offset less a period and the first plus
    // a period: for residue r and i = upper_bound(r), the nearest
    // boundaries are at offsets[i - 1] (at or under) and offsets[i] (over).
    std::vector<std::int64_t> offsets;
  };
  using Periods = std::vector<Period>;
  static std::pair<std::int64_t, std::int64_t> CellIn(const Periods& periods,
                                                      std::int64_t x);

  std::int64_t max_model_len_;
  std::array<Periods, 3> periods_;  // by QuietCount
};

}  // namespace hkv::python
