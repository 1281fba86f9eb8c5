// Spec §8.4 vectors V-50 ... V-53: hits inside a page when the hash unit is
// finer than the block (the reference's "partial attention rewind").
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "groups/full_attention.h"
#include "test_util.h"

namespace hkv {
namespace {

using ::hkv::internal::DraftRewind;
using ::hkv::testing::Range;

// A full-attention group over its own pool, driven at manager level.
class PartialHitsTest : public ::testing::Test {
 protected:
  void Build(std::uint32_t block_size, std::uint32_t unit, DraftRewind rewind,
             std::uint32_t num_blocks = 10) {
    pool_ = std::make_unique<internal::BlockPool>(num_blocks,
                                                  internal::Caching::kEnabled);
    facts_ = {
        .hash_unit = unit, .alignment = unit, .scheduler_block = block_size};
    manager_ = std::make_unique<internal::FullAttentionManager>(
        *pool_, facts_,
        internal::GroupGeometry{.block_size = block_size, .rewind = rewind},
        GroupSpec{});
    scheme_ = *MakeKeyScheme({.hash_unit = unit});
  }

  // Allocates blocks for `r` and registers its first `n` tokens.
  internal::GroupTable Produce(const Request& r, std::uint32_t n) {
    internal::GroupTable table;
    internal::CopyLog log;
    std::vector<BlockId> placed;
    manager_->AllocateNew(table, {.num_slots = n, .num_main = n}, placed, log);
    manager_->Commit(table, r, n, {});
    return table;
  }

  // The group's lookup, rewinding when the group feeds a draft model.
  internal::GroupHit Find(const Request& r, std::uint32_t max_length) const {
    static constexpr GroupId kMembers[] = {GroupId{0}};
    return manager_->FindLongestHit({.keys = r.keys(),
                                     .max_length = max_length,
                                     .rewind = manager_->geometry().rewind,
                                     .members = kMembers});
  }

  internal::CacheFacts facts_;
  std::unique_ptr<internal::BlockPool> pool_;
  std::unique_ptr<internal::FullAttentionManager> manager_;
  KeyScheme scheme_;
};

struct RewindCase {
  std::uint32_t block_size;  // b_spec x dcp for sharded groups
  std::uint32_t leading;     // full pages before the boundary page
  std::uint32_t eagle;
  std::uint32_t expected_hit;
  std::uint32_t expected_hit_changed_last;  // V-51
};

class PartialRewindTest : public PartialHitsTest,
                          public ::testing::WithParamInterface<RewindCase> {};

// Producer range(boundary): full pages cached plus a partial entry at the
// boundary only (no resend positions); the lookup's limit is boundary - 1.
TEST_P(PartialRewindTest, V50_V51_ReusePartialPagesBelowTheirBoundary) {
  const RewindCase c = GetParam();
  Build(c.block_size, 256, c.eagle ? DraftRewind::kEagle : DraftRewind::kNone,
        8);
  const std::uint32_t boundary = c.leading * c.block_size + 2048;
  const Request producer({.id = RequestId{0}}, Range(0, boundary), scheme_);
  std::vector<BlockId> table;
  pool_->Allocate((boundary + c.block_size - 1) / c.block_size, table);
  const auto key = [&](std::uint32_t tokens) {
    return internal::PrefixKey{.hash = producer.keys()[tokens / 256 - 1]};
  };
  for (std::uint32_t j = 0; j < boundary / c.block_size; ++j) {
    pool_->CacheFull(table[j], key((j + 1) * c.block_size),
                     (j + 1) * c.block_size);
  }
  if (boundary % c.block_size != 0) {
    pool_->CachePartial(table.back(), key(boundary), boundary);
  }

  const Request same({.id = RequestId{1}}, Range(0, boundary), scheme_);
  internal::GroupHit hit = Find(same, boundary - 1);
  EXPECT_EQ(hit.num_tokens, c.expected_hit);
  EXPECT_THAT(hit.blocks[0], ::testing::ElementsAreArray(
                                 std::span(table).first(hit.blocks[0].size())));

  std::vector<TokenId> changed = Range(0, boundary);
  changed.back() = 999999;
  const Request other({.id = RequestId{2}}, changed, scheme_);
  hit = Find(other, boundary - 1);
  EXPECT_EQ(hit.num_tokens, c.expected_hit_changed_last);
}

// dcp 1 and dcp 4 replicated: pages of 2048; dcp 4 sharded: pages of 8192.
INSTANTIATE_TEST_SUITE_P(Geometries, PartialRewindTest,
                         ::testing::Values(RewindCase{2048, 0, 0, 1792, 0},
                                           RewindCase{2048, 0, 1, 1536, 0},
                                           RewindCase{2048, 1, 0, 3840, 2048},
                                           RewindCase{2048, 1, 1, 3584, 1792},
                                           RewindCase{8192, 0, 0, 1792, 0},
                                           RewindCase{8192, 0, 1, 1536, 0},
                                           RewindCase{8192, 1, 0, 9984, 8192},
                                           RewindCase{8192, 1, 1, 9728, 7936}),
                         [](const ::testing::TestParamInfo<RewindCase>& test) {
                           const RewindCase& c = test.param;
                           return "page" + std::to_string(c.block_size) +
                                  "_lead" + std::to_string(c.leading) +
                                  (c.eagle ? "_eagle" : "");
                         });

TEST_F(PartialHitsTest, V52_FullPagesKeepTheirTailUnderEagle) {
  for (DraftRewind rewind : {DraftRewind::kNone, DraftRewind::kEagle}) {
    Build(4, 2, rewind);
    const Request r({.id = RequestId{0}}, Range(0, 8), scheme_);
    Produce(r, 8);
    const internal::GroupHit hit = Find(r, 8);
    EXPECT_EQ(hit.num_tokens, rewind == DraftRewind::kEagle ? 6u : 8u);
    EXPECT_EQ(hit.blocks[0].size(), 2u);
  }
}

TEST_F(PartialHitsTest, V53_PartialEntryInsideTheSecondPage) {
  for (DraftRewind rewind : {DraftRewind::kNone, DraftRewind::kEagle}) {
    Build(4, 2, rewind);
    // Producer of 7 tokens registers block 0 in full and block 1 at 6.
    const Request producer({.id = RequestId{0}}, Range(0, 7), scheme_);
    const internal::GroupTable table = Produce(producer, 7);
    ASSERT_EQ(pool_->primary_num_tokens(table.blocks[1]), 6u);
    const Request r({.id = RequestId{1}}, Range(0, 8), scheme_);
    const internal::GroupHit hit = Find(r, 8);
    EXPECT_EQ(hit.num_tokens, rewind == DraftRewind::kEagle ? 4u : 6u);
    EXPECT_EQ(hit.blocks[0].size(), rewind == DraftRewind::kEagle ? 1u : 2u);
  }
}

}  // namespace
}  // namespace hkv
