// The cluster index (hkv/cluster_index.h): hybrid-correct answers beside
// full attention's chain, copies of a key, the LRU bound, and every way a
// batch stream can go wrong (gaps, replays, restarts, unreadable batches).
// That its answers equal the cache's own lookups under random traffic is
// HybridPropertyTest's.
#include "hkv/cluster_index.h"

#include <gtest/gtest.h>

#include "hkv/request.h"
#include "test_util.h"

namespace hkv {
namespace {

class ClusterIndexTest : public ::testing::Test {
 protected:
  ClusterIndexTest() { Rebuild(1000); }

  void Rebuild(std::uint32_t capacity) {
    index_ =
        *ClusterIndex::Create({.instance_config = testing::FullAndRecurrent16(),
                               .capacity_keys = capacity},
                              2);
  }
  // The prompt's first `units` unit keys.
  std::vector<BlockHash> Keys(std::uint32_t units) const {
    const Request r({}, prompt_, index_->key_scheme());
    return {r.keys().begin(), r.keys().begin() + units};
  }
  // Full attention holds the first `attention` units, the recurrent group
  // the state after unit `state`.
  std::vector<KvEvent> Holding(std::uint32_t attention,
                               std::uint32_t state) const {
    return {BlockStored{.block_hashes = Keys(attention),
                        .block_size = 16,
                        .group = GroupId{0}},
            BlockStored{.block_hashes = {Keys(state).back()},
                        .block_size = 16,
                        .group = GroupId{1}}};
  }
  std::string Batch(const std::vector<KvEvent>& events) const {
    return EncodeEventBatch(events, 1.0, 0, KeyFunction::kSha256Cbor,
                            HashEncoding::kBytes);
  }
  InstanceMatch Match(std::uint32_t instance) const {
    return index_->Match(prompt_)[instance];
  }

  std::vector<TokenId> prompt_ = testing::Range(0, 65);  // 4 units and 1
  std::unique_ptr<ClusterIndex> index_;
};

TEST_F(ClusterIndexTest, AnInstanceResumesOnlyWhereEveryGroupCan) {
  ASSERT_TRUE(index_->Apply(0, Holding(4, 2)).has_value());
  ASSERT_TRUE(index_->Apply(1, Holding(3, 3)).has_value());
  // Instance 0 holds more attention, but its state stops at 32 tokens.
  EXPECT_EQ(Match(0),
            (InstanceMatch{.hybrid_tokens = 32, .attention_tokens = 64}));
  EXPECT_EQ(Match(1),
            (InstanceMatch{.hybrid_tokens = 48, .attention_tokens = 48}));
  EXPECT_EQ(index_->ResidentKeys(0), (std::vector<std::uint64_t>{4, 1}));
}

TEST_F(ClusterIndexTest, MatchKeysAgreesWithMatchAndChecksTheKeyCount) {
  ASSERT_TRUE(index_->Apply(0, Holding(4, 4)).has_value());
  const Result<std::vector<InstanceMatch>> by_keys =
      index_->MatchKeys(Keys(4), 65);
  ASSERT_TRUE(by_keys.has_value());
  EXPECT_EQ(*by_keys, index_->Match(prompt_));
  EXPECT_EQ((*by_keys)[0].hybrid_tokens, 64u);
  const auto wrong = index_->MatchKeys(Keys(3), 65);
  ASSERT_FALSE(wrong.has_value());
  EXPECT_EQ(wrong.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(wrong.error().message.find("4 unit keys, got 3"),
            std::string::npos);
}

TEST_F(ClusterIndexTest, AKeyStaysWhileAnotherCopyHoldsIt) {
  ASSERT_TRUE(index_->Apply(0, Holding(4, 4)).has_value());
  ASSERT_TRUE(index_->Apply(0, Holding(4, 4)).has_value());  // second copies
  const std::vector<KvEvent> remove_one = {
      BlockRemoved{.block_hashes = {Keys(4).back()}, .group = GroupId{1}}};
  ASSERT_TRUE(index_->Apply(0, remove_one).has_value());
  EXPECT_EQ(Match(0).hybrid_tokens, 64u);
  ASSERT_TRUE(index_->Apply(0, remove_one).has_value());
  EXPECT_EQ(Match(0).hybrid_tokens, 0u);  // no state left at all
  ASSERT_TRUE(index_->Apply(0, remove_one).has_value());
  EXPECT_EQ(index_->counters(0).removed_keys, 2u);
  EXPECT_EQ(index_->counters(0).unknown_removals, 1u);
}

TEST_F(ClusterIndexTest, PastItsCapacityTheOldestKeyIsForgotten) {
  Rebuild(4);
  ASSERT_TRUE(index_->Apply(0, Holding(4, 4)).has_value());  // 5 keys
  EXPECT_EQ(index_->counters(0).evicted_keys, 1u);
  // The first block's key went first: nothing resumes, nothing is claimed.
  EXPECT_EQ(Match(0), (InstanceMatch{}));
  EXPECT_EQ(index_->ResidentKeys(0), (std::vector<std::uint64_t>{3, 1}));
}

TEST_F(ClusterIndexTest, AnEventForAGroupTheLayoutLacksChangesNothing) {
  ASSERT_TRUE(index_->Apply(0, Holding(4, 4)).has_value());
  const std::vector<KvEvent> events = {
      BlockRemoved{.block_hashes = Keys(4), .group = GroupId{0}},
      BlockStored{.block_hashes = Keys(1), .group = GroupId{7}}};
  const Result<void> applied = index_->Apply(0, events);
  ASSERT_FALSE(applied.has_value());
  EXPECT_EQ(applied.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(applied.error().message.find("group 7"), std::string::npos);
  EXPECT_EQ(Match(0).hybrid_tokens, 64u);  // the removal was not applied
}

TEST_F(ClusterIndexTest, AGapIsReportedAndAReplayFillsIt) {
  const std::string first = Batch(Holding(2, 2));
  const std::string second = Batch(Holding(4, 4));
  EXPECT_EQ(index_->ApplyBatch(0, 0, first, BatchSource::kLive),
            BatchOutcome::kApplied);
  // Batch 1 was lost on the way: 2 is not applied.
  EXPECT_EQ(index_->ApplyBatch(0, 2, second, BatchSource::kLive),
            BatchOutcome::kGap);
  EXPECT_EQ(index_->expected_sequence(0), 1u);
  // Batch 1 may have removed what batch 0 stored: until the gap is filled
  // the instance claims nothing (it holds batch 0's keys still).
  EXPECT_TRUE(index_->held(0));
  EXPECT_EQ(Match(0), (InstanceMatch{}));
  EXPECT_EQ(index_->ResidentKeys(0)[0], 2u);
  // The replay answers from 1; a batch it repeats is ignored.
  EXPECT_EQ(index_->ApplyBatch(0, 1, Batch({}), BatchSource::kReplay),
            BatchOutcome::kApplied);
  EXPECT_TRUE(index_->held(0));  // not yet at batch 2
  EXPECT_EQ(index_->ApplyBatch(0, 2, second, BatchSource::kReplay),
            BatchOutcome::kApplied);
  EXPECT_EQ(index_->ApplyBatch(0, 2, second, BatchSource::kReplay),
            BatchOutcome::kDuplicate);
  EXPECT_FALSE(index_->held(0));
  EXPECT_EQ(Match(0).hybrid_tokens, 64u);
  const InstanceCounters& counters = index_->counters(0);
  EXPECT_EQ(counters.gaps, 1u);
  EXPECT_EQ(counters.duplicates, 1u);
  EXPECT_EQ(counters.batches, 3u);
}

TEST_F(ClusterIndexTest, AReplayThatCannotFillTheGapClearsTheInstance) {
  ASSERT_EQ(index_->ApplyBatch(0, 0, Batch(Holding(4, 4)), BatchSource::kLive),
            BatchOutcome::kApplied);
  // Batches 1 to 4 (which may have removed keys) are past the history.
  EXPECT_EQ(
      index_->ApplyBatch(0, 5, Batch(Holding(1, 1)), BatchSource::kReplay),
      BatchOutcome::kHistoryLost);
  EXPECT_EQ(Match(0).hybrid_tokens, 16u);
  EXPECT_EQ(index_->expected_sequence(0), 6u);
  EXPECT_EQ(index_->counters(0).history_lost, 1u);
}

TEST_F(ClusterIndexTest, ASequenceResetIsARestart) {
  ASSERT_EQ(index_->ApplyBatch(1, 0, Batch(Holding(4, 4)), BatchSource::kLive),
            BatchOutcome::kApplied);
  ASSERT_EQ(index_->ApplyBatch(1, 1, Batch({}), BatchSource::kLive),
            BatchOutcome::kApplied);
  EXPECT_EQ(index_->ApplyBatch(1, 0, Batch(Holding(1, 1)), BatchSource::kLive),
            BatchOutcome::kRestarted);
  // Or a late batch 0: held until the stream is back at batch 1.
  EXPECT_TRUE(index_->held(1));
  EXPECT_EQ(Match(1), (InstanceMatch{}));
  ASSERT_EQ(index_->ApplyBatch(1, 1, Batch(Holding(2, 2)), BatchSource::kLive),
            BatchOutcome::kApplied);
  EXPECT_FALSE(index_->held(1));
  EXPECT_EQ(Match(1).hybrid_tokens, 32u);
  // A restart seen past its first batch: cleared, to replay from 0.
  EXPECT_EQ(index_->ApplyBatch(1, 1, Batch({}), BatchSource::kLive),
            BatchOutcome::kGap);
  EXPECT_EQ(Match(1), (InstanceMatch{}));
  EXPECT_EQ(index_->expected_sequence(1), 0u);
  EXPECT_EQ(index_->counters(1).restarts, 2u);
  EXPECT_EQ(Match(0), (InstanceMatch{}));  // the other instance is untouched
}

TEST_F(ClusterIndexTest, ALateBatchHoldsTheInstanceUntilTheStreamIsBack) {
  ASSERT_EQ(index_->ApplyBatch(0, 0, Batch(Holding(4, 4)), BatchSource::kLive),
            BatchOutcome::kApplied);
  for (std::uint64_t s = 1; s <= 3; ++s) {
    ASSERT_EQ(index_->ApplyBatch(0, s, Batch({}), BatchSource::kLive),
              BatchOutcome::kApplied);
  }
  // Batch 1 again, late (or a restart past its first batch): batches 2 and
  // 3 may have removed what a replay up to 1 stores, so nothing is claimed
  // until a batch numbered 3 or more is applied again.
  EXPECT_EQ(index_->ApplyBatch(0, 1, Batch({}), BatchSource::kLive),
            BatchOutcome::kGap);
  // The replay: history lost short of 1 (cleared), 2 unreadable (cleared
  // again): still held, whatever it holds.
  ASSERT_EQ(
      index_->ApplyBatch(0, 1, Batch(Holding(4, 4)), BatchSource::kReplay),
      BatchOutcome::kHistoryLost);
  EXPECT_TRUE(index_->held(0));
  EXPECT_EQ(Match(0), (InstanceMatch{}));
  EXPECT_EQ(index_->ApplyBatch(0, 2, "\xc1", BatchSource::kReplay),
            BatchOutcome::kRejected);
  EXPECT_TRUE(index_->held(0));
  ASSERT_EQ(index_->ApplyBatch(0, 3, Batch(Holding(2, 2)), BatchSource::kLive),
            BatchOutcome::kApplied);
  EXPECT_FALSE(index_->held(0));
  EXPECT_EQ(Match(0).hybrid_tokens, 32u);
  // A resync (the dropped connection a restart brings) ends a hold at once.
  EXPECT_EQ(index_->ApplyBatch(0, 0, Batch({}), BatchSource::kLive),
            BatchOutcome::kRestarted);
  EXPECT_TRUE(index_->held(0));
  index_->Resync(0);
  EXPECT_FALSE(index_->held(0));
  ASSERT_EQ(index_->ApplyBatch(0, 0, Batch(Holding(1, 1)), BatchSource::kLive),
            BatchOutcome::kApplied);
  EXPECT_EQ(Match(0).hybrid_tokens, 16u);
}

TEST_F(ClusterIndexTest, AnUnreadableBatchIsCountedAndClearsOnlyItsInstance) {
  ASSERT_EQ(index_->ApplyBatch(0, 0, Batch(Holding(4, 4)), BatchSource::kLive),
            BatchOutcome::kApplied);
  ASSERT_TRUE(index_->Apply(1, Holding(4, 4)).has_value());
  const std::string whole = Batch(Holding(4, 4));
  Error error;
  EXPECT_EQ(index_->ApplyBatch(0, 1, whole.substr(0, whole.size() / 2),
                               BatchSource::kLive, &error),
            BatchOutcome::kRejected);
  EXPECT_EQ(error.code, ErrorCode::kCorruption);
  EXPECT_EQ(Match(0), (InstanceMatch{}));
  EXPECT_EQ(Match(1).hybrid_tokens, 64u);
  // An unknown tag, and a group the layout lacks.
  std::string unknown = Batch({AllBlocksCleared{}});
  unknown.replace(unknown.find("AllBlocksCleared"), 16, "AllBlocksFreed!!");
  EXPECT_EQ(index_->ApplyBatch(0, 2, unknown, BatchSource::kLive, &error),
            BatchOutcome::kRejected);
  EXPECT_NE(error.message.find("AllBlocksFreed"), std::string::npos);
  const std::vector<KvEvent> stray = {
      BlockStored{.block_hashes = Keys(1), .group = GroupId{2}}};
  EXPECT_EQ(index_->ApplyBatch(0, 3, Batch(stray), BatchSource::kLive, &error),
            BatchOutcome::kRejected);
  EXPECT_EQ(error.code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(index_->counters(0).rejected, 3u);
  // The stream goes on.
  EXPECT_EQ(index_->ApplyBatch(0, 4, Batch(Holding(2, 2)), BatchSource::kLive),
            BatchOutcome::kApplied);
  EXPECT_EQ(Match(0).hybrid_tokens, 32u);
}

TEST_F(ClusterIndexTest, ADroppedInstanceStartsOverFromAGap) {
  ASSERT_EQ(index_->ApplyBatch(0, 0, Batch(Holding(4, 4)), BatchSource::kLive),
            BatchOutcome::kApplied);
  index_->Clear(0);
  EXPECT_EQ(Match(0), (InstanceMatch{}));
  EXPECT_EQ(index_->expected_sequence(0), std::nullopt);
  EXPECT_EQ(index_->counters(0).clears, 1u);
  // Its stream resumes where it is: a gap to replay from 0.
  EXPECT_EQ(index_->ApplyBatch(0, 7, Batch(Holding(1, 1)), BatchSource::kLive),
            BatchOutcome::kGap);
  EXPECT_EQ(index_->expected_sequence(0), 0u);
}

TEST_F(ClusterIndexTest, AResyncedInstanceClaimsNothingAndTakesTheNextBatch) {
  ASSERT_EQ(index_->ApplyBatch(0, 0, Batch(Holding(4, 4)), BatchSource::kLive),
            BatchOutcome::kApplied);
  index_->Resync(0);
  EXPECT_EQ(Match(0), (InstanceMatch{}));
  EXPECT_EQ(index_->counters(0).clears, 1u);
  // Batches were lost that no replay brings back: the next one, whatever
  // its number, starts the stream again (no gap, no replay from 0).
  EXPECT_EQ(index_->ApplyBatch(0, 9, Batch(Holding(2, 2)), BatchSource::kLive),
            BatchOutcome::kApplied);
  EXPECT_EQ(Match(0).hybrid_tokens, 32u);
  EXPECT_EQ(index_->expected_sequence(0), 10u);
  EXPECT_EQ(index_->ApplyBatch(0, 11, Batch({}), BatchSource::kLive),
            BatchOutcome::kGap);
  // Clear ends a pending resync: its stream starts over from a gap.
  index_->Resync(1);
  index_->Clear(1);
  EXPECT_EQ(index_->ApplyBatch(1, 3, Batch({}), BatchSource::kLive),
            BatchOutcome::kGap);
}

TEST_F(ClusterIndexTest, AReplayFromTheStartClaimsNothingUntilOneCompletes) {
  // The engine stored the prompt (0), then a batch over the frame limit
  // (1) dropped the link and the reset after it (2) was lost.
  ASSERT_EQ(index_->ApplyBatch(0, 0, Batch(Holding(4, 4)), BatchSource::kLive),
            BatchOutcome::kApplied);
  index_->Resync(0);
  // A probe replays from 0: batch 0 comes back, batch 1 never does.
  ASSERT_EQ(
      index_->ApplyBatch(0, 0, Batch(Holding(4, 4)), BatchSource::kReplay),
      BatchOutcome::kApplied);
  EXPECT_TRUE(index_->held(0));
  EXPECT_EQ(Match(0), (InstanceMatch{}));
  // The same from a never-heard instance; a live batch does not end it.
  ASSERT_EQ(
      index_->ApplyBatch(1, 0, Batch(Holding(4, 4)), BatchSource::kReplay),
      BatchOutcome::kApplied);
  ASSERT_EQ(index_->ApplyBatch(1, 1, Batch({}), BatchSource::kLive),
            BatchOutcome::kApplied);
  EXPECT_EQ(Match(1), (InstanceMatch{}));
  // A replay that runs to the latest batch ends it.
  index_->ReplayCompleted(1);
  EXPECT_FALSE(index_->held(1));
  EXPECT_EQ(Match(1).hybrid_tokens, 64u);
  // A resync ends it too: the next live batch starts the stream.
  index_->Resync(0);
  ASSERT_EQ(index_->ApplyBatch(0, 5, Batch(Holding(2, 2)), BatchSource::kLive),
            BatchOutcome::kApplied);
  EXPECT_FALSE(index_->held(0));
  EXPECT_EQ(Match(0).hybrid_tokens, 32u);
}

TEST_F(ClusterIndexTest, Low64HashesMatchTheSameKeys) {
  index_ =
      *ClusterIndex::Create({.instance_config = testing::FullAndRecurrent16(),
                             .capacity_keys = 1000,
                             .hashes = HashEncoding::kLow64},
                            1);
  const std::string batch = EncodeEventBatch(
      Holding(4, 3), 1.0, 0, KeyFunction::kSha256Cbor, HashEncoding::kLow64);
  ASSERT_EQ(index_->ApplyBatch(0, 0, batch, BatchSource::kLive),
            BatchOutcome::kApplied);
  EXPECT_EQ(Match(0),
            (InstanceMatch{.hybrid_tokens = 48, .attention_tokens = 64}));
}

TEST_F(ClusterIndexTest, EachStreamSaysItsOwnHashEncoding) {
  // The default: one engine sends the digest's bytes, another integers (the
  // reference engine's default); a query matches both.
  index_ = *ClusterIndex::Create(
      {.instance_config = testing::FullAndRecurrent16(), .capacity_keys = 1000},
      2);
  ASSERT_EQ(index_->ApplyBatch(0, 0, Batch(Holding(4, 3)), BatchSource::kLive),
            BatchOutcome::kApplied);
  const std::string low64 = EncodeEventBatch(
      Holding(4, 3), 1.0, 0, KeyFunction::kSha256Cbor, HashEncoding::kLow64);
  ASSERT_EQ(index_->ApplyBatch(1, 0, low64, BatchSource::kLive),
            BatchOutcome::kApplied);
  const InstanceMatch expected{.hybrid_tokens = 48, .attention_tokens = 64};
  EXPECT_EQ(Match(0), expected);
  EXPECT_EQ(Match(1), expected);
  // A bytes stream that turns to integers is refused and forgotten; its
  // next batch with a hash decides again.
  Error error;
  EXPECT_EQ(index_->ApplyBatch(0, 1,
                               EncodeEventBatch(Holding(2, 2), 2.0, 0,
                                                KeyFunction::kSha256Cbor,
                                                HashEncoding::kLow64),
                               BatchSource::kLive, &error),
            BatchOutcome::kRejected);
  EXPECT_NE(error.message.find("a block hash is not 32 bytes"),
            std::string::npos);
  EXPECT_EQ(Match(0), InstanceMatch{});
  ASSERT_EQ(index_->ApplyBatch(0, 2,
                               EncodeEventBatch(Holding(2, 2), 3.0, 0,
                                                KeyFunction::kSha256Cbor,
                                                HashEncoding::kLow64),
                               BatchSource::kLive),
            BatchOutcome::kApplied);
  EXPECT_EQ(Match(0).hybrid_tokens, 32u);
}

TEST_F(ClusterIndexTest, AClearInsideABatchKeepsTheStreamsEncoding) {
  // The reference engine's reset: AllBlocksCleared, then in the same batch
  // the next stores, in integers. (The encoding was once forgotten with
  // the keys, and the stores after it kept as digests: no match.)
  const auto low64 = [](std::vector<KvEvent> events) {
    return EncodeEventBatch(events, 1.0, 0, KeyFunction::kSha256Cbor,
                            HashEncoding::kLow64);
  };
  ASSERT_EQ(index_->ApplyBatch(0, 0, low64(Holding(1, 1)), BatchSource::kLive),
            BatchOutcome::kApplied);
  std::vector<KvEvent> reset = {AllBlocksCleared{}};
  for (KvEvent& e : Holding(4, 3)) reset.push_back(std::move(e));
  ASSERT_EQ(index_->ApplyBatch(0, 1, low64(reset), BatchSource::kLive),
            BatchOutcome::kApplied);
  EXPECT_EQ(Match(0),
            (InstanceMatch{.hybrid_tokens = 48, .attention_tokens = 64}));
}

TEST(ClusterIndexCreateTest, BadOptionsAreNamed) {
  const auto error = [](const ClusterIndexOptions& options,
                        std::uint32_t instances) {
    auto index = ClusterIndex::Create(options, instances);
    EXPECT_FALSE(index.has_value());
    return index ? std::string() : index.error().message;
  };
  EXPECT_NE(error({.instance_config = testing::FullAndRecurrent16(),
                   .capacity_keys = 0},
                  1)
                .find("capacity_keys"),
            std::string::npos);
  EXPECT_NE(error({.instance_config = testing::FullAndRecurrent16()}, 0)
                .find("instances"),
            std::string::npos);
  EXPECT_NE(error({.instance_config = testing::FullAndRecurrent16()}, 5000)
                .find("instances"),
            std::string::npos);
  EXPECT_NE(error({.instance_config = {}}, 1).find("instance_config"),
            std::string::npos);
}

}  // namespace
}  // namespace hkv
