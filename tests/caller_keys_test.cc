// Requests keyed by their caller (Request::KeyedByCaller): an engine that
// hashes its own blocks hands hkv the keys, and the cache treats them as it
// treats its own.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <variant>

#include "hkv/cache_manager.h"
#include "test_util.h"

namespace hkv {
namespace {

using ::hkv::testing::Range;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

CacheManager MakeHybrid() {
  Result<CacheManager> cache =
      CacheManager::Create({.groups = {{.block_size = 16},
                                       {.kind = GroupKind::kRecurrent,
                                        .block_size = 16,
                                        .recurrent_mode = RecurrentMode::kAll}},
                            .num_blocks = 64,
                            .keys = {.hash_unit = 16},
                            .events = KvEventMode::kEnabled});
  EXPECT_TRUE(cache.has_value());
  return std::move(*cache);
}

// Serves `r` whole in one chunk, then frees it.
void Serve(CacheManager& cache, const Request& r) {
  const CacheHit hit = cache.Lookup(r);
  ASSERT_TRUE(cache.Allocate(
      r, {.num_new_tokens = r.num_tokens() - hit.num_tokens, .hit = &hit}));
  cache.Commit(r, r.num_tokens());
  cache.FinishStep();
  cache.Free(r.id());
}

// The keys hkv computes for `tokens`, as a caller would hand them over.
std::vector<BlockHash> KeysOf(const CacheManager& cache,
                              const std::vector<TokenId>& tokens) {
  const Request r({.id = RequestId{99}}, tokens, cache.key_scheme());
  return {r.keys().begin(), r.keys().end()};
}

TEST(CallerKeysTest, HitsAndTablesEqualThoseOfHkvKeys) {
  CacheManager own = MakeHybrid();
  CacheManager keyed = MakeHybrid();
  const std::vector<TokenId> prompt = Range(0, 100);
  Serve(own, Request({.id = RequestId{1}}, prompt, own.key_scheme()));
  const std::vector<BlockHash> keys = KeysOf(keyed, prompt);
  Serve(keyed, Request::KeyedByCaller({.id = RequestId{1}}, 100, keys,
                                      keyed.key_scheme()));

  const std::vector<TokenId> resend = Range(0, 90);
  const Request r_own({.id = RequestId{2}}, resend, own.key_scheme());
  const Request r_keyed = Request::KeyedByCaller(
      {.id = RequestId{2}}, 90, KeysOf(keyed, resend), keyed.key_scheme());
  const CacheHit a = own.Lookup(r_own);
  const CacheHit b = keyed.Lookup(r_keyed);
  EXPECT_EQ(a.num_tokens, 80u);
  EXPECT_EQ(b.num_tokens, a.num_tokens);
  EXPECT_EQ(b.blocks, a.blocks);
}

TEST(CallerKeysTest, AppendedKeysExtendTheChain) {
  CacheManager cache = MakeHybrid();
  const std::vector<TokenId> tokens = Range(0, 50);
  const std::vector<BlockHash> keys = KeysOf(cache, tokens);
  Request r = Request::KeyedByCaller({.id = RequestId{1}}, 20, {keys.front()},
                                     cache.key_scheme());
  EXPECT_EQ(r.num_tokens(), 20u);
  r.AppendKeyedTokens(10, std::span(keys).subspan(1, 0));  // 30: no new unit
  r.AppendKeyedTokens(20, std::span(keys).subspan(1, 2));  // 50: units 2, 3
  EXPECT_EQ(r.num_tokens(), 50u);
  EXPECT_THAT(r.keys(), ElementsAreArray(keys));
  EXPECT_THAT(r.tokens(), IsEmpty());
}

TEST(CallerKeysTest, StoredEventsCarryNoTokenIds) {
  CacheManager cache = MakeHybrid();
  const std::vector<BlockHash> keys = KeysOf(cache, Range(0, 40));
  Serve(cache, Request::KeyedByCaller({.id = RequestId{1}}, 40, keys,
                                      cache.key_scheme()));
  std::uint32_t stored = 0;
  for (const KvEvent& e : cache.TakeEvents()) {
    if (const auto* s = std::get_if<BlockStored>(&e)) {
      ++stored;
      EXPECT_THAT(s->token_ids, IsEmpty());
      EXPECT_EQ(s->block_hashes.front(), keys.front());
    }
  }
  EXPECT_EQ(stored, 2u);  // one run per group
}

TEST(CallerKeysTest, MisuseIsRefusedAndChangesNothing) {
  const KeyScheme scheme = *MakeKeyScheme({.hash_unit = 16});
  const std::vector<BlockHash> keys(2);
  EXPECT_THROW((void)Request::KeyedByCaller({}, 20, keys, scheme), UsageError);
  try {
    (void)Request::KeyedByCaller({}, 20, keys, scheme);
  } catch (const UsageError& e) {
    EXPECT_THAT(e.what(), HasSubstr("has 1 complete hash units of 16, but 2"));
  }
  EXPECT_THROW((void)Request::KeyedByCaller({.extras = {.cache_salt = "s"}}, 32,
                                            keys, scheme),
               UsageError);
  Request r = Request::KeyedByCaller({}, 32, keys, scheme);
  EXPECT_THROW(r.AppendKeyedTokens(16, {}), UsageError);  // a unit, no key
  EXPECT_THROW(r.AppendTokens(Range(0, 4)), UsageError);
  EXPECT_EQ(r.num_tokens(), 32u);
  Request own({}, Range(0, 4), scheme);
  EXPECT_THROW(own.AppendKeyedTokens(4, {}), UsageError);
  EXPECT_EQ(own.num_tokens(), 4u);
}

}  // namespace
}  // namespace hkv
