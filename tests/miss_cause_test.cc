// Why-missed: a hit shorter than the full-attention chain names the group
// that limited it and the cause, and admission counts the causes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace hkv {
namespace {

using ::hkv::testing::AllocateAndCommit;
using ::hkv::testing::Concat;
using ::hkv::testing::Range;
using ::hkv::testing::Repeat;

std::vector<TokenId> Prefix48() { return Range(0, 48); }

TEST(MissCauseTest, RewindBelowTheChain) {
  internal::CacheCore cache(CacheConfig{
      .groups = {{.block_size = 16, .speculation = Speculation::kEagle}},
      .num_blocks = 10,
      .keys = {.hash_unit = 16}});
  const Request r0({.id = RequestId{0}}, Repeat(0, 48), cache.key_scheme());
  AllocateAndCommit(cache, r0, 48);
  const Request r1({.id = RequestId{1}}, Repeat(0, 48), cache.key_scheme());
  const CacheHit hit = cache.Lookup(r1);
  EXPECT_EQ(hit.num_tokens, 16u);
  EXPECT_EQ(hit.chain_tokens, 32u);
  EXPECT_EQ(hit.miss_cause, MissCause::kSpeculativeRewind);
  ASSERT_TRUE(cache.Allocate(r1, {.num_new_tokens = 32, .hit = &hit}));
  const PrefixCacheStats stats = cache.TakeStats();
  EXPECT_EQ(stats.speculative_rewind.requests, 1u);
  EXPECT_EQ(stats.speculative_rewind.tokens, 16u);
}

class HybridMissTest : public ::testing::Test {
 protected:
  void Build(GroupSpec second, EvictionRecord record = EvictionRecord::kKept) {
    cache_ = std::make_unique<internal::CacheCore>(
        CacheConfig{.groups = {{.block_size = 16}, second},
                    .num_blocks = 30,
                    .keys = {.hash_unit = 16},
                    .eviction_record = record});
  }
  // Caches Prefix48 in a full-attention and a recurrent group, then reuses
  // every block but the attention ones: the recurrent state goes.
  void EvictTheStateOfPrefix48() {
    const Request r0 = Make(0, Prefix48());
    AllocateAndCommit(*cache_, r0, 48);
    const std::vector<BlockId> attention(
        cache_->block_table(r0.id(), GroupId{0}).begin(),
        cache_->block_table(r0.id(), GroupId{0}).end());
    cache_->Free(r0.id());
    cache_->FinishStep();
    internal::BlockPool& pool = cache_->pool();
    for (BlockId b : attention) pool.Touch(b);
    std::vector<BlockId> taken;
    pool.Allocate(pool.num_free_blocks(), taken);
    pool.Free(taken);
    pool.Free(attention);
  }
  Request Make(std::uint64_t id, std::vector<TokenId> tokens) {
    return Request({.id = RequestId{id}}, tokens, cache_->key_scheme());
  }
  std::unique_ptr<internal::CacheCore> cache_;
};

TEST_F(HybridMissTest, NoStateAtTheChainEnd) {
  Build({.kind = GroupKind::kRecurrent, .block_size = 16});
  const Request r0 = Make(0, Prefix48());
  AllocateAndCommit(*cache_, r0, 48);
  cache_->FinishStep();
  std::vector<TokenId> tokens = Prefix48();
  tokens.back() = 101;
  const CacheHit hit = cache_->Lookup(Make(1, tokens));
  EXPECT_EQ(hit.num_tokens, 0u);
  EXPECT_EQ(hit.chain_tokens, 32u);
  EXPECT_EQ(hit.miss_cause, MissCause::kNoCheckpoint);
  EXPECT_EQ(hit.limiting_group, GroupId{1});
}

TEST_F(HybridMissTest, WindowNotCovered) {
  Build({.kind = GroupKind::kSlidingWindow,
         .block_size = 16,
         .sliding_window = 32});
  const Request r0 = Make(0, Concat(Prefix48(), Repeat(3, 7)));
  AllocateAndCommit(*cache_, r0, 55);
  cache_->pool().EvictKeys(cache_->block_table(r0.id(), GroupId{1})[1]);
  const CacheHit hit =
      cache_->Lookup(Make(1, Concat(Prefix48(), Repeat(3, 7))));
  EXPECT_EQ(hit.num_tokens, 16u);  // the run that reaches position 0
  EXPECT_EQ(hit.chain_tokens, 48u);
  EXPECT_EQ(hit.miss_cause, MissCause::kWindowNotCovered);
  EXPECT_EQ(hit.limiting_group, GroupId{1});
}

TEST_F(HybridMissTest, StateEvictedByReuse) {
  Build({.kind = GroupKind::kRecurrent, .block_size = 16});
  EvictTheStateOfPrefix48();
  const CacheHit hit = cache_->Lookup(Make(1, Concat(Prefix48(), {7})));
  EXPECT_EQ(hit.num_tokens, 0u);
  EXPECT_EQ(hit.chain_tokens, 48u);
  EXPECT_EQ(hit.miss_cause, MissCause::kEvicted);
}

TEST_F(HybridMissTest, WithoutTheEvictionRecordAnEvictedStateIsMissingOnly) {
  // StateEvictedByReuse's history, the record off: the recurrent group
  // limits the hit and says it has no state there.
  Build({.kind = GroupKind::kRecurrent, .block_size = 16},
        EvictionRecord::kOff);
  EvictTheStateOfPrefix48();
  const CacheHit hit = cache_->Lookup(Make(1, Concat(Prefix48(), {7})));
  EXPECT_EQ(hit.num_tokens, 0u);
  EXPECT_EQ(hit.chain_tokens, 48u);
  EXPECT_EQ(hit.miss_cause, MissCause::kNoCheckpoint);
  EXPECT_EQ(hit.limiting_group, GroupId{1});
}

TEST(MissCauseTest, AnEvictionRecordSettingOutOfRangeIsRefused) {
  CacheConfig config{.groups = {{.block_size = 16}},
                     .num_blocks = 10,
                     .keys = {.hash_unit = 16},
                     .eviction_record = static_cast<EvictionRecord>(7)};
  const Result<void> valid = config.Validate();
  ASSERT_FALSE(valid);
  EXPECT_THAT(valid.error().message,
              ::testing::HasSubstr("eviction_record 7 is neither"));
}

TEST_F(HybridMissTest, FullHitHasNoCause) {
  Build({.kind = GroupKind::kRecurrent, .block_size = 16});
  AllocateAndCommit(*cache_, Make(0, Prefix48()), 48);
  cache_->FinishStep();
  const CacheHit hit = cache_->Lookup(Make(1, Concat(Prefix48(), {7})));
  EXPECT_EQ(hit.num_tokens, 48u);
  EXPECT_EQ(hit.miss_cause, MissCause::kNone);
}

}  // namespace
}  // namespace hkv
