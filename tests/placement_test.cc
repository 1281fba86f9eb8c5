// Retention::kPlacement (hkv/cache_config.h): one recurrent state per
// prompt end and per shared-prefix junction, where a lookup lands, against
// the reference's sparse retention (R = 0), which keeps every position a
// lookup may land on at the alignment and at the scheduler block.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cache/commit_rules.h"
#include "hkv/experiment.h"
#include "test_util.h"

namespace hkv {
namespace {

using ::hkv::testing::Concat;
using ::hkv::testing::Range;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Positions = std::vector<std::uint32_t>;

Positions Retained(std::uint32_t position, bool placement, bool rewind,
                   internal::Boundary boundary = internal::Boundary::kResend,
                   bool junction_rewound = false) {
  const internal::CacheFacts facts{
      .hash_unit = 512,
      .alignment = 512,
      .scheduler_block = 2048,
      .partial_hits = true,
      .draft_model =
          rewind ? internal::DraftRewind::kEagle : internal::DraftRewind::kNone,
      .retention_interval = 0,
      .placement = placement,
      .junction_rewound = junction_rewound};
  Positions out;
  internal::AddRetainedPositions(position, boundary, facts, out);
  return out;
}

// A prompt of 5001 tokens at A = 512, S = 2048: its resend is capped at
// 5000, where the reference keeps 4608 and 4096 (A), 4096 and 2048 (S) with
// a rewinding draft; placement only the prompt's checkpoint, where the
// resend lands: 4608 less the draft's unit. A prompt of 5120 proves its
// whole ten units: the draft's rewind lands on 4608.
TEST(PlacementTest, RetainsOnlyWhereALookupLands) {
  EXPECT_THAT(Retained(5001, false, true), ElementsAre(4608u, 4096u, 2048u));
  EXPECT_THAT(Retained(5001, true, true), ElementsAre(4096u));
  EXPECT_THAT(Retained(5001, false, false), ElementsAre(4608u, 4096u));
  EXPECT_THAT(Retained(5001, true, false), ElementsAre(4608u));
  EXPECT_THAT(Retained(5120, false, true), ElementsAre(4608u, 4096u, 2048u));
  EXPECT_THAT(Retained(5120, true, true), ElementsAre(4608u));
  // A lookup below one unit (after the rewind) lands nowhere.
  EXPECT_THAT(Retained(701, true, true), IsEmpty());
  // A junction some group found without rewinding lands one unit lower; one
  // every such group rewound already is where siblings land.
  const auto junction = internal::Boundary::kJunction;
  EXPECT_THAT(Retained(5000, true, true, junction, false), ElementsAre(4096u));
  EXPECT_THAT(Retained(5000, true, true, junction, true), ElementsAre(4608u));
}

TEST(PlacementTest, ParsesItsNameAndRefusesAnInterval) {
  EXPECT_EQ(ParseRetention("placement"), Retention::kPlacement);
  EXPECT_EQ(ParseRetention("reference"), Retention::kReference);
  const Result<Retention> bad = ParseRetention("dense");
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, HasSubstr("\"dense\""));
  CacheConfig config{
      .groups = {{.block_size = 16},
                 {.kind = GroupKind::kRecurrent, .block_size = 16}},
      .num_blocks = 8,
      .retention = Retention::kPlacement};
  EXPECT_TRUE(config.Validate());
  config.retention_interval = 0;
  const Result<void> refused = config.Validate();
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message,
              HasSubstr("leave retention_interval unset (got 0)"));
}

// Full attention 512 feeding a draft (lookups rewind a unit), recurrent 512
// in align mode, h = 512. A = [0, 4097); B shares A's first 2600 tokens;
// C shares A's first 3000. B's lookup sees A's chain to 2560, which the
// attention group rewinds to 2048 (the junction, rewound: the only group
// covering positions rewinds), but no state at or below it: B misses, and
// keeps states where a resend of its prompt lands (P - 1 = 4096, one unit
// lower: 3584) and where the junction's siblings land (2048). C lands
// there.
class JunctionTest : public ::testing::TestWithParam<Retention> {
 protected:
  JunctionTest() : cache_(ConfigFor(GetParam())) {}

  static CacheConfig ConfigFor(Retention retention) {
    CacheConfig config{
        .groups = {{.block_size = 512, .speculation = Speculation::kEagle},
                   {.kind = GroupKind::kRecurrent, .block_size = 512}},
        .num_blocks = 64,
        .keys = {.hash_unit = 512},
        .retention = retention};
    if (retention == Retention::kReference) config.retention_interval = 0;
    return config;
  }

  Request Make(std::uint64_t id, std::vector<TokenId> tokens) const {
    return Request({.id = RequestId{id}}, std::move(tokens),
                   cache_.key_scheme());
  }
  // Looks up, prefills in split chunks adopting the hit, frees; returns
  // the hit.
  std::uint32_t Serve(const Request& r) {
    const CacheHit hit = cache_.Lookup(r);
    std::uint32_t done = hit.num_tokens;
    bool first = true;
    while (done < r.num_tokens()) {
      const std::uint32_t n = cache_.SplitPrefill(
          r, {.num_computed_tokens = done,
              .num_new_tokens = r.num_tokens() - done,
              .shared_prefix_boundary = hit.shared_prefix_boundary});
      EXPECT_TRUE(cache_.Allocate(r, {.num_computed_tokens = first ? 0 : done,
                                      .num_new_tokens = n,
                                      .hit = first ? &hit : nullptr}));
      first = false;
      done += n;
      cache_.Commit(r, done);
      cache_.TakeCopies();
      cache_.FinishStep();
    }
    cache_.Free(r.id());
    EXPECT_TRUE(cache_.CheckInvariants());
    return hit.num_tokens;
  }
  // The unit boundaries at which the recurrent group keys a state.
  Positions KeyedStates(const Request& r) const {
    Positions out;
    for (std::uint32_t p = 512; p <= r.num_tokens(); p += 512) {
      const internal::PrefixKey key{.hash = r.keys()[p / 512 - 1],
                                    .group = GroupId{1}};
      if (cache_.pool().FindCached(key)) out.push_back(p);
    }
    return out;
  }

  internal::CacheCore cache_;
};

TEST_P(JunctionTest, KeepsOneStatePerBoundaryAndTheSiblingResumes) {
  const Request a = Make(1, Range(0, 4097));
  const Request b = Make(2, Concat(Range(0, 2600), Range(100000, 101497)));
  const Request c = Make(3, Concat(Range(0, 3000), Range(200000, 201097)));
  EXPECT_EQ(Serve(a), 0u);
  EXPECT_EQ(Serve(b), 0u);
  if (GetParam() == Retention::kPlacement) {
    EXPECT_THAT(KeyedStates(b), ElementsAre(2048u, 3584u));
  } else {
    // R = 0 also keeps the junction's rewound neighbour.
    EXPECT_THAT(KeyedStates(b), ElementsAre(1536u, 2048u, 3584u));
  }
  EXPECT_EQ(Serve(c), 2048u);
}

INSTANTIATE_TEST_SUITE_P(Retentions, JunctionTest,
                         ::testing::Values(Retention::kReference,
                                           Retention::kPlacement),
                         [](const auto& instance) {
                           return instance.param == Retention::kPlacement
                                      ? std::string("Placement")
                                      : std::string("ReferenceInterval0");
                         });

// The measured GB10 deployment at 2048/256/256 and 33 GiB on the first
// 2,000 requests of the conversation trace (hkv compare's default cut):
// placement keeps two states per request where R = 0 keeps up to eight,
// and the slots it frees hold more of the trace (docs/beyond.md).
std::uint64_t ReusedOnTheTrace(const std::string& retention,
                               std::optional<std::uint32_t> interval) {
  ExperimentOptions o{.workload = "mooncake:" HKV_DATA_DIR
                                  "/traces/mooncake_conversation_trace.jsonl",
                      .limit = 2000,
                      .retention_interval = interval,
                      .retention = retention,
                      .preset = "glm53-flash-gb10x4"};
  o.given.insert("retention_interval");
  o.given.insert("retention");
  Result<SimRuns> runs = RunSimulation(o, {});
  EXPECT_TRUE(runs.has_value()) << runs.error().message;
  return runs ? runs->runs.at(0).result.reused_tokens : 0;
}

TEST(PlacementTest, ReusesMoreOfTheTraceThanDenseOrResendOnly) {
  const std::uint64_t placement = ReusedOnTheTrace("placement", {});
  const std::uint64_t resend_only = ReusedOnTheTrace("reference", 0);
  const std::uint64_t dense = ReusedOnTheTrace("reference", {});
  EXPECT_GT(resend_only, dense);
  EXPECT_GT(placement, resend_only + resend_only / 4);
}

}  // namespace
}  // namespace hkv
