// CacheManager::LookupKeys: a lookup for a request its caller keys, before
// the request is built, that reads the caller's keys only as far as it
// probes them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "hkv/cache_manager.h"
#include "test_util.h"

namespace hkv {
namespace {

using ::hkv::testing::CountingKeys;
using ::hkv::testing::Range;
using ::testing::HasSubstr;

CacheManager FullAttention(std::uint32_t num_blocks) {
  Result<CacheManager> cache =
      CacheManager::Create({.groups = {{.block_size = 16}},
                            .num_blocks = num_blocks,
                            .keys = {.hash_unit = 16}});
  EXPECT_TRUE(cache.has_value());
  return std::move(*cache);
}

// Caches `r` whole, then frees it.
void Serve(CacheManager& cache, const Request& r) {
  ASSERT_TRUE(cache.Allocate(r, {.num_new_tokens = r.num_tokens()}));
  cache.Commit(r, r.num_tokens());
  cache.Free(r.id());
}

// A source whose key `bad` cannot be given.
class FailingKeys : public CountingKeys {
 public:
  FailingKeys(std::span<const BlockHash> keys, std::size_t bad)
      : CountingKeys(keys), bad_(bad) {}
  void Read(std::size_t first, std::span<BlockHash> out) const override {
    if (first <= bad_ && bad_ < first + out.size()) {
      throw std::invalid_argument("key " + std::to_string(bad_));
    }
    CountingKeys::Read(first, out);
  }

 private:
  std::size_t bad_;
};

TEST(LookupKeysTest, AWarmLongPromptIsFoundFromAFewOfItsKeys) {
  constexpr std::uint32_t kTokens = 65536;  // 4,096 keys
  CacheManager cache = FullAttention(kTokens / 16 + 8);
  const std::vector<TokenId> prompt = Range(0, kTokens);
  Serve(cache, Request({.id = RequestId{1}}, prompt, cache.key_scheme()));

  const Request again({.id = RequestId{2}}, prompt, cache.key_scheme());
  const CountingKeys keys(again.keys());
  const CacheHit hit = cache.LookupKeys(RequestId{2}, kTokens, keys);
  const CacheHit built = cache.Lookup(again);
  EXPECT_EQ(hit.num_tokens, kTokens - 16);  // the last block recomputes
  EXPECT_EQ(hit.blocks, built.blocks);
  EXPECT_EQ(hit.origin.key, built.origin.key);
  // The first and the deepest keys, and the chunks around them.
  EXPECT_LE(keys.num_read(), 64u);

  // The hit adopts into the request built with that id and those keys.
  const Request admitted = Request::KeyedByCaller(
      {.id = RequestId{2}}, kTokens, {again.keys().begin(), again.keys().end()},
      cache.key_scheme());
  EXPECT_TRUE(cache.Allocate(admitted, {.num_new_tokens = 16, .hit = &hit}));
}

TEST(LookupKeysTest, APartlyCachedPromptBisects) {
  CacheManager cache = FullAttention(512);
  Serve(cache,
        Request({.id = RequestId{1}}, Range(0, 3000), cache.key_scheme()));
  std::vector<TokenId> prompt = Range(0, 6000);
  const Request r({.id = RequestId{2}}, prompt, cache.key_scheme());
  const CountingKeys keys(r.keys());
  const CacheHit hit = cache.LookupKeys(RequestId{2}, 6000, keys);
  EXPECT_EQ(hit.num_tokens, 2992u);
  EXPECT_EQ(hit.blocks, cache.Lookup(r).blocks);
  EXPECT_LT(keys.num_read(), r.keys().size() / 2);
}

TEST(LookupKeysTest, AKeyTheSourceCannotGiveFailsTheLookupAlone) {
  CacheManager cache = FullAttention(72);
  const std::vector<TokenId> prompt = Range(0, 1024);  // 64 keys
  Serve(cache, Request({.id = RequestId{1}}, prompt, cache.key_scheme()));
  const Request r({.id = RequestId{2}}, prompt, cache.key_scheme());
  const std::vector<BlockId> free_queue = cache.FreeQueue();
  const std::size_t entries = cache.num_cached_entries();
  // The lookup probes the deepest key it may hit (the 63rd): one that
  // cannot be read fails it, and nothing changes.
  EXPECT_THROW(cache.LookupKeys(RequestId{2}, 1024, FailingKeys(r.keys(), 62)),
               std::invalid_argument);
  EXPECT_EQ(cache.FreeQueue(), free_queue);
  EXPECT_EQ(cache.num_cached_entries(), entries);
  // One between the first and the deepest is never read.
  EXPECT_EQ(cache.LookupKeys(RequestId{2}, 1024, FailingKeys(r.keys(), 20))
                .num_tokens,
            1008u);
}

TEST(LookupKeysTest, KeysThatDoNotMatchTheTokensAreRefused) {
  CacheManager cache = FullAttention(8);
  const std::vector<BlockHash> keys(3);
  try {
    cache.LookupKeys(RequestId{1}, 64, CountingKeys(keys));
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_THAT(e.what(), HasSubstr("64 tokens have 4 complete hash units of "
                                    "16, but the source has 3 keys"));
  }
  EXPECT_THROW(cache.LookupKeys(RequestId{1}, kMaxTokensPerRequest + 1,
                                CountingKeys(keys)),
               UsageError);
}

// A source that looks another request up each time it is read, as a
// caller's source calling back into the cache may.
class ReenteringKeys : public CountingKeys {
 public:
  ReenteringKeys(std::span<const BlockHash> keys, const CacheManager& cache,
                 const Request& other)
      : CountingKeys(keys), cache_(cache), other_(other) {}
  void Read(std::size_t first, std::span<BlockHash> out) const override {
    const CountingKeys inner(other_.keys());
    inner_hits_.push_back(
        cache_.LookupKeys(other_.id(), other_.num_tokens(), inner).num_tokens);
    CountingKeys::Read(first, out);
  }
  const std::vector<std::uint32_t>& inner_hits() const { return inner_hits_; }

 private:
  const CacheManager& cache_;
  const Request& other_;
  mutable std::vector<std::uint32_t> inner_hits_;
};

TEST(LookupKeysTest, ALookupMadeWhileAnotherReadsKeysKeepsItsOwnKeys) {
  // Each lookup reads its keys into a buffer its thread reuses; the inner
  // one, made while the outer holds it, must take another. Both prompts
  // are cached to the same length, so both bisect through the same keys'
  // places (other keys), and the outer one probes keys of chunks it read
  // before inner lookups ran.
  CacheManager cache = FullAttention(2048);
  Serve(cache,
        Request({.id = RequestId{1}}, Range(0, 3000), cache.key_scheme()));
  Serve(cache,
        Request({.id = RequestId{2}}, Range(50000, 53000), cache.key_scheme()));
  const Request outer({.id = RequestId{3}}, Range(0, 8000), cache.key_scheme());
  const Request inner({.id = RequestId{4}}, Range(50000, 58000),
                      cache.key_scheme());
  const ReenteringKeys keys(outer.keys(), cache, inner);
  const CacheHit hit = cache.LookupKeys(outer.id(), outer.num_tokens(), keys);
  const CacheHit built = cache.Lookup(outer);
  EXPECT_EQ(hit.num_tokens, built.num_tokens);
  EXPECT_EQ(hit.blocks, built.blocks);
  EXPECT_EQ(hit.origin.key, built.origin.key);
  ASSERT_GT(keys.inner_hits().size(), 2u);
  for (std::uint32_t n : keys.inner_hits()) {
    EXPECT_EQ(n, cache.Lookup(inner).num_tokens);
  }
  // And the reused buffer is free again.
  const CountingKeys again(outer.keys());
  EXPECT_EQ(cache.LookupKeys(outer.id(), outer.num_tokens(), again).blocks,
            built.blocks);
}

}  // namespace
}  // namespace hkv
