// Spec §1.3's free-queue order under both FreeOrder settings, on the block
// ids of vectors V-03, V-04, V-05 and V-08 (pool of 11: ids 1 ... 10 usable,
// b = h = 16). The reference fork puts freed blocks without a key at the
// front (kPrependUncached, the vectors as the spec lists them); upstream
// vLLM appends every freed block (kAppendAll), derived here by hand from the
// rule: a request's blocks are freed last first, and each block whose count
// reaches 0 goes to the back in that order.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "test_util.h"

namespace hkv {
namespace {

using ::hkv::testing::AllocateAndCommit;
using ::hkv::testing::Concat;
using ::hkv::testing::Ids;
using ::hkv::testing::Range;
using ::hkv::testing::Repeat;
using ::testing::ElementsAreArray;

template <typename Expected>
std::string OrderName(const ::testing::TestParamInfo<Expected>& test) {
  return test.param.order == FreeOrder::kAppendAll ? "AppendAll"
                                                   : "PrependUncached";
}

std::vector<BlockId> IdsOf(const std::vector<std::uint32_t>& ids) {
  std::vector<BlockId> out;
  for (std::uint32_t id : ids) out.push_back(BlockId{id});
  return out;
}

class FreeOrderTest : public ::testing::Test {
 protected:
  void Build(FreeOrder order) {
    cache_ = std::make_unique<internal::CacheCore>(
        CacheConfig{.groups = {{.block_size = 16}},
                    .num_blocks = 11,
                    .keys = {.hash_unit = 16},
                    .free_order = order});
  }
  Request Make(std::uint64_t id, const std::vector<TokenId>& tokens) {
    return Request({.id = RequestId{id}}, tokens, cache_->key_scheme());
  }
  // Looks the request up and allocates all its uncomputed tokens; returns
  // the blocks the allocation took.
  std::vector<BlockId> Admit(const Request& r, CacheHit* hit_out = nullptr) {
    CacheHit hit = cache_->Lookup(r);
    if (hit_out) *hit_out = hit;
    return AllocateAndCommit(*cache_, r, r.num_tokens() - hit.num_tokens, &hit)
        .value_or(std::vector<BlockId>{});
  }
  std::vector<BlockId> Queue() const {
    return cache_->pool().FreeQueueSnapshot();
  }
  static std::vector<TokenId> Prefix48() {
    return Concat(Concat(Repeat(0, 16), Repeat(1, 16)), Repeat(2, 16));
  }

  std::unique_ptr<internal::CacheCore> cache_;
};

struct V03Expected {
  FreeOrder order;
  std::vector<std::uint32_t> queue_after_frees;  // V-03
  std::uint32_t r2_new_block;                    // V-04
  std::vector<std::uint32_t> r3_blocks;          // V-05
};

class FreeOrderV03Test : public FreeOrderTest,
                         public ::testing::WithParamInterface<V03Expected> {};

// r0 = 48 + 7 tokens takes [1, 2, 3, 4] (1-3 keyed); r1 = 48 + 5 hits
// [1, 2, 3] and takes 5; the queue is [6 ... 10].
TEST_P(FreeOrderV03Test, V03_to_V05_FreedBlocksAndTheirReuse) {
  const V03Expected& e = GetParam();
  Build(e.order);
  const Request r0 = Make(0, Concat(Prefix48(), Repeat(3, 7)));
  Admit(r0);
  const Request r1 = Make(1, Concat(Prefix48(), Repeat(3, 5)));
  ASSERT_THAT(Admit(r1), ElementsAreArray(Ids({5})));
  cache_->Free(r0.id());
  cache_->Free(r1.id());
  EXPECT_THAT(Queue(), ElementsAreArray(IdsOf(e.queue_after_frees)));
  CacheHit hit;
  const Request r2 = Make(2, Concat(Prefix48(), Repeat(3, 6)));
  EXPECT_THAT(Admit(r2, &hit), ElementsAreArray(Ids({e.r2_new_block})));
  EXPECT_THAT(hit.blocks[0], ElementsAreArray(Ids({1, 2, 3})));
  EXPECT_EQ(cache_->pool().num_free_blocks(), 6u);
  cache_->Free(r2.id());
  const Request r3 = Make(3, Repeat(99, 160));
  EXPECT_THAT(Admit(r3, &hit), ElementsAreArray(IdsOf(e.r3_blocks)));
  EXPECT_EQ(hit.num_tokens, 0u);
  EXPECT_EQ(cache_->pool().num_free_blocks(), 0u);
  EXPECT_TRUE(cache_->CheckInvariants());
}

INSTANTIATE_TEST_SUITE_P(
    Orders, FreeOrderV03Test,
    ::testing::Values(
        // The spec's vectors: free(r0) prepends 4; free(r1) prepends 5 and
        // appends 3, 2, 1. r2 takes the front block 5; free(r2) prepends 5
        // and appends 3, 2, 1 again.
        V03Expected{.order = FreeOrder::kPrependUncached,
                    .queue_after_frees = {5, 4, 6, 7, 8, 9, 10, 3, 2, 1},
                    .r2_new_block = 5,
                    .r3_blocks = {5, 4, 6, 7, 8, 9, 10, 3, 2, 1}},
        // Append all: free(r0) walks [4, 3, 2, 1]; only 4 reaches 0:
        // [6 ... 10, 4]. free(r1) walks [5, 3, 2, 1], all reach 0:
        // [6 ... 10, 4, 5, 3, 2, 1]. r2 hits [1, 2, 3] (taken out of the
        // queue) and pops 6: [7 ... 10, 4, 5]. free(r2) walks [6, 3, 2, 1]:
        // [7 ... 10, 4, 5, 6, 3, 2, 1], the order r3's ten blocks come in.
        V03Expected{.order = FreeOrder::kAppendAll,
                    .queue_after_frees = {6, 7, 8, 9, 10, 4, 5, 3, 2, 1},
                    .r2_new_block = 6,
                    .r3_blocks = {7, 8, 9, 10, 4, 5, 6, 3, 2, 1}}),
    OrderName<V03Expected>);

struct V08Expected {
  FreeOrder order;
  std::vector<std::uint32_t> after_r0;
  std::vector<std::uint32_t> after_r1;
  std::uint32_t r2_new_block;
};

class FreeOrderV08Test : public FreeOrderTest,
                         public ::testing::WithParamInterface<V08Expected> {};

// r0 = range(87) takes [1 ... 6] (1-5 keyed, 6 holds 7 tokens); r1 =
// range(87, 135) takes [7, 8, 9], all keyed; 10 stays free.
TEST_P(FreeOrderV08Test, V08_EvictionFollowsTheFreeQueue) {
  const V08Expected& e = GetParam();
  Build(e.order);
  const Request r0 = Make(0, Range(0, 87));
  const Request r1 = Make(1, Range(87, 135));
  ASSERT_EQ(Admit(r0).size(), 6u);
  ASSERT_EQ(Admit(r1).size(), 3u);
  cache_->Free(r0.id());
  EXPECT_THAT(Queue(), ElementsAreArray(IdsOf(e.after_r0)));
  cache_->Free(r1.id());
  EXPECT_THAT(Queue(), ElementsAreArray(IdsOf(e.after_r1)));
  CacheHit hit;
  const Request r2 = Make(2, Range(0, 35));
  EXPECT_THAT(Admit(r2, &hit), ElementsAreArray(Ids({e.r2_new_block})));
  EXPECT_EQ(hit.num_tokens, 32u);
  EXPECT_THAT(hit.blocks[0], ElementsAreArray(Ids({1, 2})));
  EXPECT_EQ(cache_->pool().num_free_blocks(), 7u);
}

INSTANTIATE_TEST_SUITE_P(
    Orders, FreeOrderV08Test,
    ::testing::Values(
        // The spec's vector: 6 goes in front of 10, keyed 5 ... 1 behind.
        V08Expected{.order = FreeOrder::kPrependUncached,
                    .after_r0 = {6, 10, 5, 4, 3, 2, 1},
                    .after_r1 = {6, 10, 5, 4, 3, 2, 1, 9, 8, 7},
                    .r2_new_block = 6},
        // Append all: free(r0) walks [6, 5, 4, 3, 2, 1] behind 10; free(r1)
        // walks [9, 8, 7] behind them. r2 hits [1, 2] and pops 10.
        V08Expected{.order = FreeOrder::kAppendAll,
                    .after_r0 = {10, 6, 5, 4, 3, 2, 1},
                    .after_r1 = {10, 6, 5, 4, 3, 2, 1, 9, 8, 7},
                    .r2_new_block = 10}),
    OrderName<V08Expected>);

TEST(FreeOrderConfigTest, RejectsAnUnknownOrderNamingTheField) {
  CacheConfig config{.groups = {{.block_size = 16}},
                     .num_blocks = 8,
                     .keys = {.hash_unit = 16},
                     .free_order = static_cast<FreeOrder>(7)};
  const Result<void> valid = config.Validate();
  ASSERT_FALSE(valid.has_value());
  EXPECT_THAT(valid.error().message, ::testing::HasSubstr("free_order 7"));
  config.free_order = FreeOrder::kAppendAll;
  EXPECT_TRUE(config.Validate().has_value());
}

}  // namespace
}  // namespace hkv
