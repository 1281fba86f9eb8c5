// ResidencyMirror alone (src/cache/residency_mirror.h): one engine's keys as
// its events announce them, copies counted, LRU past its capacity, and the
// engine's own lookup over them.
#include "cache/residency_mirror.h"

#include <gtest/gtest.h>

#include "hkv/request.h"
#include "test_util.h"

namespace hkv::internal {
namespace {

CacheConfig Hybrid() {
  return {.groups = {{.kind = GroupKind::kFullAttention, .block_size = 16},
                     {.kind = GroupKind::kRecurrent, .block_size = 16}},
          .num_blocks = 64,
          .keys = {.hash_unit = 16}};
}

class ResidencyMirrorTest : public ::testing::Test {
 protected:
  std::vector<BlockHash> Keys() const {
    const KeyScheme scheme = *MakeKeyScheme(Hybrid().keys);
    const Request r({}, prompt_, scheme);
    return {r.keys().begin(), r.keys().end()};
  }
  PrefixKey Attention(std::size_t unit) const {
    return {.hash = keys_[unit], .group = GroupId{0}};
  }
  PrefixKey State(std::size_t unit) const {
    return {.hash = keys_[unit], .group = GroupId{1}};
  }
  CacheHit Lookup(const ResidencyMirror& m) const {
    return m.FindLongestHit(keys_, prompt_size() - 1);
  }
  std::uint32_t prompt_size() const {
    return static_cast<std::uint32_t>(prompt_.size());
  }

  std::vector<TokenId> prompt_ = testing::Range(0, 81);  // 5 units and 1
  std::vector<BlockHash> keys_ = Keys();
};

TEST_F(ResidencyMirrorTest, AnswersAsTheEngineLooksUp) {
  ResidencyMirror mirror(Hybrid(), 100);
  for (std::size_t u = 0; u < 4; ++u) mirror.Store(Attention(u));
  mirror.Store(State(2));
  const CacheHit hit = Lookup(mirror);
  EXPECT_EQ(hit.chain_tokens, 64u);  // full attention's four units
  EXPECT_EQ(hit.num_tokens, 48u);    // the state after unit 2
  EXPECT_EQ(mirror.num_keys(), 5u);
  EXPECT_EQ(mirror.keys_per_group(), (std::vector<std::uint64_t>{4, 1}));
}

TEST_F(ResidencyMirrorTest, AKeyStaysWhileACopyIsHeld) {
  ResidencyMirror mirror(Hybrid(), 100);
  mirror.Store(Attention(0));
  mirror.Store(Attention(0));  // two requests computed the same prefix
  EXPECT_TRUE(mirror.Remove(Attention(0)));
  EXPECT_EQ(Lookup(mirror).chain_tokens, 16u);
  EXPECT_TRUE(mirror.Remove(Attention(0)));
  EXPECT_EQ(Lookup(mirror).chain_tokens, 0u);
  EXPECT_FALSE(mirror.Remove(Attention(0)));  // never more than stored
  EXPECT_EQ(mirror.keys_per_group(), (std::vector<std::uint64_t>{0, 0}));
}

TEST_F(ResidencyMirrorTest, PastItsCapacityTheLeastRecentlyStoredGoes) {
  ResidencyMirror mirror(Hybrid(), 3);
  for (std::size_t u = 0; u < 4; ++u) mirror.Store(Attention(u));
  EXPECT_EQ(mirror.evicted_keys(), 1u);
  EXPECT_EQ(mirror.num_keys(), 3u);
  // Unit 0 was forgotten: the chain is broken at its start. Forgetting
  // only shortens an answer.
  EXPECT_EQ(Lookup(mirror).chain_tokens, 0u);
  mirror.Store(Attention(0));  // evicts unit 1, the oldest now
  EXPECT_EQ(Lookup(mirror).chain_tokens, 16u);
}

TEST_F(ResidencyMirrorTest, ClearForgetsEveryKey) {
  ResidencyMirror mirror(Hybrid(), 100);
  for (std::size_t u = 0; u < 5; ++u) {
    mirror.Store(Attention(u));
    mirror.Store(State(u));
  }
  mirror.Clear();
  EXPECT_EQ(mirror.num_keys(), 0u);
  EXPECT_EQ(Lookup(mirror).chain_tokens, 0u);
  EXPECT_EQ(mirror.keys_per_group(), (std::vector<std::uint64_t>{0, 0}));
  mirror.Store(Attention(0));  // and takes keys again
  EXPECT_EQ(Lookup(mirror).chain_tokens, 16u);
}

}  // namespace
}  // namespace hkv::internal
