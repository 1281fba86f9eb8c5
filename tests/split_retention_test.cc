// Spec §7.3's chunk stops under every retention setting (dense, R = 0,
// R > 0), with and without a recurrent group that exports the prompt's
// checkpoint and an attention group feeding a draft model (EAGLE), and the
// recurrent states left keyed after the prompt: exactly those the retention
// rules name (§3.4.5 - §3.4.7, §4.4), never one where a chunk merely
// stopped. Every expectation is derived by hand in the comments.
//
// Groups: full attention 2048 (eagle or not) and recurrent 2048 in align
// mode (exporting or not), so b = S = 2048. A prompt of P tokens is computed
// as a scheduler would: each step's budget chunk is split, allocated and
// committed, then the prompt is sent again.
//
// Notation (§3.4.6): ckpt(n, u) = floor((n - 1) / u) * u without EAGLE,
// floor(n / u) * u - u with it. A chunk [start, end) stops at the first of
//   the next block end (start not on a block), last = ckpt(N, b), and with
//   fine hits the tail ckpt(P, h) when last < tail < P (none when it
//   exports);
//   R > 0: the next multiple of R;
//   R = 0: the positions §3.5 expands P - 1 to at A and S (one unit lower
//   too with EAGLE), except floor(end / b) * b when it exports;
// strictly inside it. It exports (§7.3 "internal") when it reaches P and
// cp = ckpt(P, A) lies inside it with a slot of its own.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace hkv {
namespace {

using ::hkv::testing::Range;
using ::testing::ElementsAreArray;

using Positions = std::vector<std::uint32_t>;
constexpr std::optional<std::uint32_t> kDense = std::nullopt;

struct Row {
  std::optional<std::uint32_t> retention;
  bool exports = false;
  bool eagle = false;
  Positions chunks;          // the prompt's chunk lengths
  Positions states;          // positions of the recurrent states keyed after it
  std::uint32_t resend = 0;  // the identical prompt's hit
  bool placement = false;    // Retention::kPlacement (retention unset)
};

class SplitRetentionTest : public ::testing::Test {
 protected:
  void Build(std::uint32_t unit, const Row& row) {
    cache_ = std::make_unique<internal::CacheCore>(
        CacheConfig{.groups = {{.block_size = 2048,
                                .speculation = row.eagle ? Speculation::kEagle
                                                         : Speculation::kNone},
                               {.kind = GroupKind::kRecurrent,
                                .block_size = 2048,
                                .checkpoint_blocks = row.exports ? 1u : 0u}},
                    .num_blocks = 64,
                    .keys = {.hash_unit = unit},
                    .retention_interval = row.retention,
                    .retention = row.placement ? Retention::kPlacement
                                               : Retention::kReference});
  }
  Request Make(std::uint64_t id, std::uint32_t prompt) const {
    return Request({.id = RequestId{id}}, Range(0, prompt),
                   cache_->key_scheme());
  }
  // Computes the prompt in split chunks of at most `budget` tokens, one
  // step each; returns the chunks.
  Positions Prefill(const Request& r, std::uint32_t budget) {
    Positions chunks;
    for (std::uint32_t done = 0; done < r.num_tokens();) {
      const std::uint32_t n = cache_->SplitPrefill(
          r, {.num_computed_tokens = done,
              .num_new_tokens = std::min(budget, r.num_tokens() - done),
              .max_num_scheduled_tokens = budget});
      if (n == 0) break;
      chunks.push_back(n);
      if (!cache_->Allocate(
              r, {.num_computed_tokens = done, .num_new_tokens = n})) {
        break;
      }
      done += n;
      cache_->Commit(r, done);
      cache_->TakeCopies();
      cache_->FinishStep();
    }
    return chunks;
  }
  // The unit boundaries at which the recurrent group keys a state.
  Positions KeyedStates(const Request& r) const {
    const std::uint32_t unit = r.key_scheme().hash_unit;
    Positions out;
    for (std::uint32_t p = unit; p <= r.num_tokens(); p += unit) {
      const internal::PrefixKey key{.hash = r.keys()[p / unit - 1],
                                    .group = GroupId{1}};
      if (cache_->pool().FindCached(key)) out.push_back(p);
    }
    return out;
  }
  void Check(std::uint32_t unit, std::uint32_t prompt, std::uint32_t budget,
             const Row& row) {
    SCOPED_TRACE(::testing::Message()
                 << "R="
                 << (row.placement   ? std::string("placement")
                     : row.retention ? std::to_string(*row.retention)
                                     : std::string("dense"))
                 << " export=" << row.exports << " eagle=" << row.eagle);
    Build(unit, row);
    const Request r = Make(1, prompt);
    EXPECT_THAT(Prefill(r, budget), ElementsAreArray(row.chunks));
    EXPECT_THAT(KeyedStates(r), ElementsAreArray(row.states));
    cache_->Free(r.id());
    EXPECT_EQ(cache_->Lookup(Make(2, prompt)).num_tokens, row.resend);
    EXPECT_TRUE(cache_->CheckInvariants());
  }

  std::unique_ptr<internal::CacheCore> cache_;
};

// h = 2048 (coarse hits: A = S = 2048), P = N = 4097, budget 8192. Without
// EAGLE last = cp = 4096 and R = 0 names P - 1 -> {4096}; with EAGLE
// last = cp = 2048, R = 0 stops at {4096, 2048} and the resend lands on
// {2048} (§4.4: {floor((P-1)/S)*S - S, floor(P/S)*S - S}). An export puts cp
// into slot 1 (the slot before the end state). R = 4096 keys the state
// ending each 4096-token segment (§3.4.7) and the resend positions.
TEST_F(SplitRetentionTest, CoarseHitsEveryRetentionSetting) {
  const std::vector<Row> rows = {
      // Dense: stop at last; the resend resumes there.
      {kDense, false, false, {4096, 1}, {4096}, 4096},
      {kDense, false, true, {2048, 2049}, {2048}, 2048},
      // An exporting chunk needs no stop: one chunk, the state comes from
      // the export.
      {kDense, true, false, {4097}, {4096}, 4096},
      {kDense, true, true, {4097}, {2048}, 2048},
      {0, false, false, {4096, 1}, {4096}, 4096},
      // R = 0 also stops at 4096, whose state no rule keeps.
      {0, false, true, {2048, 2048, 1}, {2048}, 2048},
      // Exporting: R = 0's 4096 = floor(4097 / b) * b is left out.
      {0, true, false, {4097}, {4096}, 4096},
      // The resend: 4096 is left out but 2048 stays a stop, so
      // [0, 2048) ends where the resend resumes; [2048, 4097) no longer
      // exports (cp = 2048 is not inside) and stops at 4096 (not kept).
      {0, true, true, {2048, 2048, 1}, {2048}, 2048},
      {4096, false, false, {4096, 1}, {4096}, 4096},
      // Stops at last = 2048, then at R's 4096; both states are named.
      {4096, false, true, {2048, 2048, 1}, {2048, 4096}, 2048},
      // The export is cut at R's 4096 = cp: the chunk end leaves the state.
      {4096, true, false, {4096, 1}, {4096}, 4096},
      // §7.3 alone cuts the exporting chunk at R's 4096 and exports nothing
      // ([4096, 1], no state at 2048: resend 0); hkv then stops at cp = 2048
      // (docs/design.md, Deviations), as without the export.
      {4096, true, true, {2048, 2048, 1}, {2048, 4096}, 2048},
  };
  for (const Row& row : rows) Check(2048, 4097, 8192, row);
}

// h = 512: hits may end inside blocks (A = 512, S = 2048), P = 4097, budget
// 8192. Without EAGLE last = cp = tail = 4096 (no tail stop: last < tail
// fails). With EAGLE last = 2048, cp = tail = 3584 (registered as a partial
// entry when a chunk ends there), R = 0 stops at {4096, 3584, 2048} and the
// retention keeps the blocks ending at 2048 and 4096 (§3.4.7 maps 3584 to
// block 0). The resend rewinds one unit: 3584.
TEST_F(SplitRetentionTest, FineHitsEveryRetentionSetting) {
  const std::vector<Row> rows = {
      {kDense, false, false, {4096, 1}, {4096}, 4096},
      // Stops at last (2048), the tail (3584), the next block end (4096).
      {kDense, false, true, {2048, 1536, 512, 1}, {2048, 3584, 4096}, 3584},
      {kDense, true, false, {4097}, {4096}, 4096},
      {kDense, true, true, {4097}, {3584}, 3584},
      {0, false, false, {4096, 1}, {4096}, 4096},
      {0, false, true, {2048, 1536, 512, 1}, {2048, 3584, 4096}, 3584},
      {0, true, false, {4097}, {4096}, 4096},
      // Exporting, R = 0 keeps 2048 and 3584 as stops (4096 left out);
      // [2048, 4097) exports again and stops at 3584; [3584, 4097) does not
      // and stops at the block end.
      {0, true, true, {2048, 1536, 512, 1}, {2048, 3584, 4096}, 3584},
      {4096, false, false, {4096, 1}, {4096}, 4096},
      {4096, false, true, {2048, 1536, 512, 1}, {2048, 3584, 4096}, 3584},
      {4096, true, false, {4096, 1}, {4096}, 4096},
      // §7.3 alone: [4096, 1], no state at 3584 or below (resend 0); hkv
      // stops at cp = 3584 (Deviations). The chunk end at 3584 is inside a
      // block: only the checkpoint's partial entry is keyed there.
      {4096, true, true, {3584, 512, 1}, {3584, 4096}, 3584},
  };
  for (const Row& row : rows) Check(512, 4097, 8192, row);
}

// h = 2048, P = 10241, budget 4096: chunks that do not reach the prompt's
// end are cut to whole blocks (4096, 8192); last = cp = 10240. Those chunk
// ends are keyed only where the retention names them: dense all, R = 0 only
// the resend's 10240, R = 8192 the segment end 8192 too.
TEST_F(SplitRetentionTest, BudgetChunksKeepOnlyNamedStates) {
  const std::vector<Row> rows = {
      {kDense, false, false, {4096, 4096, 2048, 1}, {4096, 8192, 10240}, 10240},
      {0, false, false, {4096, 4096, 2048, 1}, {10240}, 10240},
      {8192, false, false, {4096, 4096, 2048, 1}, {8192, 10240}, 10240},
      // The last chunk exports 10240 (R = 0 leaves it out as floor(end/b)*b).
      {kDense, true, false, {4096, 4096, 2049}, {4096, 8192, 10240}, 10240},
      {0, true, false, {4096, 4096, 2049}, {10240}, 10240},
      {8192, true, false, {4096, 4096, 2049}, {8192, 10240}, 10240},
  };
  for (const Row& row : rows) Check(2048, 10241, 4096, row);
}

// Placement (hkv/cache_config.h) keeps one position per boundary, where a
// lookup lands: at h = 512, P = 4097, budget 8192, P - 1 = 4096 lands on
// 4096, or with EAGLE one unit lower on 3584; the scheduler block's 4096
// and 2048 that R = 0 adds are neither stops nor kept.
//   No EAGLE: as R = 0 (its only position is 4096).
//   EAGLE: stops at last (2048), the tail and placement's 3584, the block
//   end; §3.4.7 maps 3584 to block 0 (the state at 2048 stays), the
//   checkpoint's partial entry is 3584, and block 1's 4096 is not kept.
//   EAGLE, exporting: the only stop is 3584, where the chunk ends and
//   leaves the state; [3584, 4097) stops at the block end.
TEST_F(SplitRetentionTest, PlacementKeepsOnlyWhereLookupsLand) {
  const std::vector<Row> rows = {
      {kDense, false, false, {4096, 1}, {4096}, 4096, true},
      {kDense, false, true, {2048, 1536, 512, 1}, {2048, 3584}, 3584, true},
      {kDense, true, false, {4097}, {4096}, 4096, true},
      {kDense, true, true, {3584, 512, 1}, {3584}, 3584, true},
  };
  for (const Row& row : rows) Check(512, 4097, 8192, row);
}

}  // namespace
}  // namespace hkv
