// CacheConfig::Validate and Request against hkv/limits.h: every count that
// could wrap 32-bit arithmetic or allocate without bound is refused, naming
// the field, its value and the limit, before any pool or token list is
// built; so are block sizes whose scheduler block the unit cannot divide.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "hkv/cache_manager.h"
#include "hkv/group_list.h"
#include "hkv/limits.h"
#include "hkv/request.h"
#include "test_util.h"

namespace hkv {
namespace {

using ::hkv::testing::Range;
using ::testing::HasSubstr;

constexpr std::uint32_t kMax32 = std::numeric_limits<std::uint32_t>::max();

std::string Error(const CacheConfig& config) {
  Result<void> valid = config.Validate();
  if (valid) return "(valid)";
  EXPECT_EQ(valid.error().code, ErrorCode::kInvalidArgument);
  return valid.error().message;
}

CacheConfig With(GroupSpec group) {
  return {.groups = {group}, .num_blocks = 16};
}

TEST(ConfigLimitsTest, DefaultMaxModelLenIsTheTokensPerRequestLimit) {
  EXPECT_EQ(CacheConfig{}.max_model_len, kMaxTokensPerRequest);
}

// `--num-blocks 1073741824` allocated 2^30 blocks of metadata.
TEST(ConfigLimitsTest, NumBlocksBeyondThePoolLimitIsRefused) {
  CacheConfig config = With({});
  config.num_blocks = 1u << 30;
  EXPECT_THAT(Error(config),
              HasSubstr("num_blocks 1073741824 exceeds the limit of 16777216 "
                        "blocks per pool"));
  config.num_blocks = kMaxPoolBlocks;
  EXPECT_EQ(Error(config), "(valid)");
  EXPECT_FALSE(CacheManager::Create({.groups = {{}}, .num_blocks = 1u << 30}));
}

TEST(ConfigLimitsTest, TokenCountsBeyondTheRequestLimitAreRefused) {
  CacheConfig config = With({});
  config.max_model_len = kMaxTokensPerRequest + 1;
  EXPECT_THAT(Error(config), HasSubstr("max_model_len 16777217 exceeds the "
                                       "limit of 16777216 tokens per request"));
  config = With({});
  config.max_in_flight_tokens = kMax32;
  EXPECT_THAT(Error(config), HasSubstr("max_in_flight_tokens 4294967295"));
  // `replay T --block-size 4294967295`.
  EXPECT_THAT(Error(With({.block_size = kMax32})),
              HasSubstr("group 0: block_size 4294967295 tokens exceeds the "
                        "limit of 16777216 tokens per request"));
  EXPECT_THAT(Error(With({.kind = GroupKind::kSlidingWindow,
                          .sliding_window = kMax32})),
              HasSubstr("group 0: sliding_window 4294967295 exceeds"));
  EXPECT_THAT(Error(With({.output_window = kMax32})),
              HasSubstr("group 0: output_window 4294967295 exceeds"));
  EXPECT_THAT(
      Error(With({.kind = GroupKind::kChunkedLocal, .chunk_size = kMax32})),
      HasSubstr("group 0: chunk_size 4294967295 exceeds"));
}

TEST(ConfigLimitsTest, BlockCountsBeyondThePoolLimitAreRefused) {
  EXPECT_THAT(Error(With({.kind = GroupKind::kRecurrent,
                          .speculative_blocks = kMax32})),
              HasSubstr("group 0: speculative_blocks 4294967295 exceeds the "
                        "limit of 16777216 blocks per pool"));
  EXPECT_THAT(
      Error(With({.kind = GroupKind::kScratch, .scratch_blocks = kMax32})),
      HasSubstr("group 0: scratch_blocks 4294967295 exceeds"));
}

// A block of 2^20 tokens on 2^10 DCP ranks covers 2^30 tokens.
TEST(ConfigLimitsTest, DcpScalingBeyondTheLimitIsRefused) {
  CacheConfig config = With({.block_size = 1u << 20});
  config.keys.hash_unit = 1u << 20;
  config.dcp = 1u << 10;
  EXPECT_THAT(Error(config),
              HasSubstr("group 0: block_size 1048576 x dcp 1024 = 1073741824 "
                        "tokens exceeds"));
  config.dcp = 16;
  EXPECT_EQ(Error(config), "(valid)");
}

// 4099 and 4111 are prime: each block is small, their lcm is not.
TEST(ConfigLimitsTest, SchedulerBlockBeyondTheLimitIsRefused) {
  const CacheConfig config{
      .groups = {{.block_size = 4099}, {.block_size = 4111}},
      .num_blocks = 16,
      .keys = {.hash_unit = 1}};
  EXPECT_THAT(Error(config),
              HasSubstr("the groups' blocks of 4099, 4111 tokens have a least "
                        "common multiple (the scheduler block) of 16850989, "
                        "above the limit of 16777216 tokens per request"));
}

// The group_list fuzzer's `full:65536,full:65537`: 65536 x 65537 is past
// 2^32, so a 32-bit lcm wrapped to 65536 and the cache was built.
TEST(ConfigLimitsTest, SchedulerBlockPast32BitsIsRefusedNamingTheBlocks) {
  Result<std::vector<GroupSpec>> groups =
      ParseGroupList("full:65536,full:65537");
  ASSERT_TRUE(groups) << groups.error().message;
  const CacheConfig config{
      .groups = *groups, .num_blocks = 64, .keys = {.hash_unit = 1}};
  EXPECT_THAT(Error(config),
              HasSubstr("blocks of 65536, 65537 tokens have a least common "
                        "multiple (the scheduler block) of 4295032832, above"));
  EXPECT_FALSE(CacheManager::Create(config));
}

// The cache_ops fuzzer's lone recurrent group in "none" mode: it caches
// nothing, so no block rule named the unit, but hits are still multiples
// of the unit or of the scheduler block (spec §5.2), so the unit divides it.
TEST(ConfigLimitsTest, HashUnitMustDivideTheSchedulerBlock) {
  const GroupSpec none{.kind = GroupKind::kRecurrent,
                       .block_size = 6,
                       .recurrent_mode = RecurrentMode::kNone};
  CacheConfig config = With(none);
  config.keys.hash_unit = 4;
  EXPECT_THAT(Error(config),
              HasSubstr("hash unit 4 does not divide the scheduler block 6 "
                        "(the lcm of the groups' blocks of 6 tokens)"));
  EXPECT_FALSE(CacheManager::Create(config));
  config.keys.hash_unit = 3;
  EXPECT_EQ(Error(config), "(valid)");
  // Beside a cacheable group the unit divides its block, hence S (12).
  config.groups.push_back({.block_size = 4});
  config.keys.hash_unit = 4;
  EXPECT_EQ(Error(config), "(valid)");
  // A scratch group caches nothing either.
  config.groups = {
      {.kind = GroupKind::kScratch, .block_size = 6, .scratch_blocks = 1}};
  EXPECT_THAT(Error(config), HasSubstr("hash unit 4 does not divide"));
}

// A recurrent group keeping a state per block needs the hash unit at the
// scheduler block only for hits, which could fall between its states. With
// prefix caching off there are no hits: a request allocates, computes and
// frees as with the unit at the block.
TEST(ConfigLimitsTest, AStatePerBlockNeedsTheUnitAtTheBlockOnlyWithCaching) {
  CacheConfig config = {.groups = {{.block_size = 32},
                                   {.kind = GroupKind::kRecurrent,
                                    .block_size = 32,
                                    .recurrent_mode = RecurrentMode::kAll}},
                        .num_blocks = 64};
  config.keys.hash_unit = 16;
  EXPECT_THAT(Error(config), HasSubstr("with prefix caching on"));
  config.caching = PrefixCaching::kDisabled;
  ASSERT_EQ(Error(config), "(valid)");
  Result<CacheManager> cache = CacheManager::Create(config);
  ASSERT_TRUE(cache);
  const std::vector<TokenId> prompt = Range(0, 100);
  const Request r({.id = RequestId{1}}, prompt, cache->key_scheme());
  ASSERT_TRUE(cache->Allocate(r, {.num_new_tokens = 100}));
  cache->Commit(r, 100);
  EXPECT_EQ(cache->Lookup(r).num_tokens, 0u);
  cache->Free(r.id());
  EXPECT_EQ(cache->usage(), 0.0);
}

TEST(ConfigLimitsTest, HashUnitAndRetentionBeyondTheLimitAreRefused) {
  CacheConfig scratch =
      With({.kind = GroupKind::kScratch, .scratch_blocks = 1});
  scratch.keys.hash_unit = kMax32;
  EXPECT_THAT(Error(scratch), HasSubstr("hash unit 4294967295 exceeds"));
  CacheConfig retained = {
      .groups = {{.block_size = 16},
                 {.kind = GroupKind::kRecurrent, .block_size = 16}},
      .num_blocks = 16,
      .retention_interval = kMax32 - 15};
  EXPECT_THAT(Error(retained), HasSubstr("retention_interval 4294967280"));
}

TEST(ConfigLimitsTest, MaxBlocksPerRequestDoesNotWrap) {
  const GroupSpec window{.kind = GroupKind::kSlidingWindow,
                         .block_size = 16,
                         .sliding_window = 64};
  // In-flight tokens count at most the length.
  EXPECT_EQ(MaxBlocksPerRequest(
                window, {.max_model_len = 160,
                         .max_in_flight_tokens =
                             std::numeric_limits<std::uint64_t>::max()}),
            11u);
  EXPECT_THROW(MaxBlocksPerRequest({.block_size = 0}, {.max_model_len = 16}),
               UsageError);
}

TEST(ConfigLimitsTest, RequestsBeyondTheTokenLimitAreRefused) {
  const KeyScheme scheme = *MakeKeyScheme({.hash_unit = kMaxTokensPerRequest});
  const std::vector<TokenId> too_long(kMaxTokensPerRequest + 1);
  EXPECT_THROW(Request({.id = RequestId{1}}, too_long, scheme), UsageError);
  Request r({.id = RequestId{1}},
            std::span(too_long).first(kMaxTokensPerRequest - 1), scheme);
  const std::vector<TokenId> two(2);
  try {
    r.AppendTokens(two);
    ADD_FAILURE() << "appended past the limit";
  } catch (const UsageError& e) {
    EXPECT_THAT(e.what(), HasSubstr("request tokens 16777215 + 2 exceed the "
                                    "limit of 16777216 tokens per request"));
  }
  EXPECT_EQ(r.num_tokens(), kMaxTokensPerRequest - 1);
  const KeyExtras unsorted{.multimodal = {{.identifier = "b", .offset = 20},
                                          {.identifier = "a", .offset = 4}}};
  EXPECT_THROW(Request({.id = RequestId{2}, .extras = unsorted}, Range(0, 40),
                       *MakeKeyScheme({})),
               UsageError);
  // An item's end past 2^32 wrapped to the front and was skipped.
  const KeyExtras image{
      .multimodal = {
          {.identifier = "img", .offset = kMax32 - 2, .length = 100}}};
  EXPECT_EQ(UnitExtraKeys(image, kMax32 - 17, kMax32 - 1).size(), 1u);
}

}  // namespace
}  // namespace hkv
