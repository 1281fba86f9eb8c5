#include "hkv/keys.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <numeric>

#include "core/digest.h"
#include "hkv/request.h"

namespace hkv {
namespace {

std::string Hex(std::span<const std::uint8_t> bytes) {
  std::string out;
  for (std::uint8_t b : bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

std::vector<TokenId> Iota(TokenId from, TokenId to) {
  std::vector<TokenId> v(to - from);
  std::iota(v.begin(), v.end(), from);
  return v;
}

KeyScheme Scheme(KeyFunction function, std::uint32_t unit = 16) {
  return *MakeKeyScheme({.function = function, .hash_unit = unit, .seed = "0"});
}

constexpr char kSeedKey[] =
    "4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e";

TEST(KeysTest, SeedKeyIsSha256OfCborTextString) {
  EXPECT_EQ(SeedKey(KeyFunction::kSha256Cbor, "0").Hex(), kSeedKey);
}

TEST(KeysTest, FirstUnitCborInputMatchesReference) {
  const KeyScheme scheme = Scheme(KeyFunction::kSha256Cbor);
  EXPECT_EQ(
      Hex(UnitKeyInput(scheme, scheme.seed_key, Iota(0, 16), {})),
      "8358204e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e"
      "90000102030405060708090a0b0c0d0e0ff6");
}

TEST(KeysTest, Sha256ChainMatchesReference) {
  const KeyScheme scheme = Scheme(KeyFunction::kSha256Cbor);
  const BlockHash first = HashUnit(scheme, scheme.seed_key, Iota(0, 16), {});
  EXPECT_EQ(first.Hex(),
            "d830de3d42c00f25a2949b5d12d98642664a44872c1614c5b0147556276afc9c");
  EXPECT_EQ(HashUnit(scheme, first, Iota(16, 32), {}).Hex(),
            "fedd9e4abebebbe6f6cf96b682f08d316063fe2f22a5c552192dd62904fcccac");
}

// The reference value is XXH3-128 over the same CBOR bytes as the SHA-256
// vector above (whose parent is the SHA-256 seed key).
TEST(KeysTest, Xxh3DigestOfReferenceInputMatches) {
  const KeyScheme sha = Scheme(KeyFunction::kSha256Cbor);
  const std::vector<std::uint8_t> input =
      UnitKeyInput(sha, sha.seed_key, Iota(0, 16), {});
  EXPECT_EQ(internal::Xxh3_128(input).Hex(16),
            "c201e2aa47f60ea5035664f8edea325c");
}

// An xxh3 chain starts, as the reference's does, from the xxh3 digest of the
// seed, and its parents are 16-byte strings.
TEST(KeysTest, Xxh3ChainUsesSixteenByteParents) {
  const KeyScheme scheme = Scheme(KeyFunction::kXxh3_128Cbor);
  EXPECT_EQ(scheme.seed_key,
            internal::Xxh3_128(std::vector<std::uint8_t>{0x61, 0x30}));
  const std::vector<std::uint8_t> input =
      UnitKeyInput(scheme, scheme.seed_key, Iota(0, 16), {});
  EXPECT_EQ(Hex(std::span(input).first(2)), "8350");  // [bytes(16), ...
  EXPECT_EQ(input.size(), 2u + 16u + 1u + 16u + 1u);
  EXPECT_EQ(HashUnit(scheme, scheme.seed_key, Iota(0, 16), {}),
            internal::Xxh3_128(input));
}

// The hand-written encoder agrees with nlohmann::json's CBOR writer, tagged
// tuples included.
TEST(KeysTest, CborInputAgreesWithJsonLibrary) {
  const KeyScheme scheme = Scheme(KeyFunction::kSha256Cbor);
  const std::vector<TokenId> tokens = {0,   23,    24,    255,
                                       256, 65535, 65536, 4294967295u};
  EmbedsDigest digest;
  std::iota(digest.begin(), digest.end(), std::uint8_t{0xa0});
  const std::vector<ExtraKey> extra = {
      ExtraKey::Lora("lora", "/adapters/lora"),
      ExtraKey::Multimodal("img", -300), ExtraKey::Multimodal("img2", 70000),
      ExtraKey::CacheSalt("salt"), ExtraKey::PromptEmbeds(digest)};
  const std::vector<std::uint8_t> parent(scheme.seed_key.bytes.begin(),
                                         scheme.seed_key.bytes.end());
  using nlohmann::json;
  const json expected = json::array(
      {json::binary(parent), tokens,
       json::array({json::array({"lora", "lora", "/adapters/lora"}),
                    json::array({"mm", "img", -300}),
                    json::array({"mm", "img2", 70000}),
                    json::array({"cache_salt", "salt"}),
                    json::array({"prompt_embeds",
                                 json::binary(std::vector<std::uint8_t>(
                                     digest.begin(), digest.end()))})})});
  EXPECT_EQ(UnitKeyInput(scheme, scheme.seed_key, tokens, extra),
            json::to_cbor(expected));
}

TEST(KeysTest, UnitExtraKeysFollowReferenceOrderAndOffsets) {
  // V-18's items: (offset 11, len 10, "aaa"), (30, 18, "bbb"), (48, 7, "ccc").
  const KeyExtras extras = {
      .lora_name = "lora-a",
      .lora_path = "/a",
      .multimodal = {{"aaa", 11, 10}, {"bbb", 30, 18}, {"ccc", 48, 7}},
      .cache_salt = "salt1"};
  const ExtraKey lora = ExtraKey::Lora("lora-a", "/a");
  using ::testing::ElementsAre;
  EXPECT_THAT(UnitExtraKeys(extras, 0, 16),
              ElementsAre(lora, ExtraKey::Multimodal("aaa", 11),
                          ExtraKey::CacheSalt("salt1")));
  EXPECT_THAT(UnitExtraKeys(extras, 16, 32),
              ElementsAre(lora, ExtraKey::Multimodal("aaa", -5),
                          ExtraKey::Multimodal("bbb", 14)));
  EXPECT_THAT(UnitExtraKeys(extras, 32, 48),
              ElementsAre(lora, ExtraKey::Multimodal("bbb", -2)));
  EXPECT_THAT(UnitExtraKeys(extras, 48, 64),
              ElementsAre(lora, ExtraKey::Multimodal("ccc", 0)));
  EXPECT_THAT(UnitExtraKeys(extras, 64, 80), ElementsAre(lora));
}

TEST(KeysTest, RequestKeysGrowIncrementallyAndMatchOneShot) {
  const KeyScheme scheme = Scheme(KeyFunction::kSha256Cbor, 4);
  const std::vector<TokenId> all = Iota(100, 130);
  Request grown({.id = RequestId{1}}, std::span(all).first(6), scheme);
  EXPECT_EQ(grown.keys().size(), 1u);
  grown.AppendTokens(std::span(all).subspan(6, 1));
  grown.AppendTokens(std::span(all).subspan(7));
  const Request whole({.id = RequestId{2}}, all, scheme);
  ASSERT_EQ(grown.keys().size(), 7u);
  EXPECT_TRUE(std::equal(grown.keys().begin(), grown.keys().end(),
                         whole.keys().begin()));
  EXPECT_EQ(grown.num_prompt_tokens(), 6u);
}

TEST(KeysTest, SaltIsolatesTheWholeChain) {
  const KeyScheme scheme = Scheme(KeyFunction::kSha256Cbor, 4);
  const std::vector<TokenId> tokens = Iota(0, 12);
  const Request plain({.id = RequestId{1}}, tokens, scheme);
  const Request salted({.id = RequestId{2}, .extras = {.cache_salt = "s"}},
                       tokens, scheme);
  for (std::size_t k = 0; k < 3; ++k)
    EXPECT_NE(plain.keys()[k], salted.keys()[k]);
}

TEST(KeysTest, RejectsZeroHashUnitAndUnknownFunction) {
  EXPECT_EQ(MakeKeyScheme({.hash_unit = 0}).error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_FALSE(ParseKeyFunction("md5").has_value());
  EXPECT_EQ(*ParseKeyFunction("xxh3_128_cbor"), KeyFunction::kXxh3_128Cbor);
}

TEST(KeysTest, TakesTheReferenceEnginesNamesAndSaysWhatToRun) {
  // The engine's xxhash_cbor is XXH3-128 over the same CBOR: hkv's
  // xxh3_128_cbor (its keys were checked against the engine's own
  // hash_block_tokens, python/tests/vllm_compat).
  EXPECT_EQ(*ParseKeyFunction("xxhash_cbor"), KeyFunction::kXxh3_128Cbor);
  EXPECT_EQ(*ParseKeyFunction("sha256_cbor"), KeyFunction::kSha256Cbor);
  for (const char* pickled : {"sha256", "xxhash"}) {
    const Result<KeyFunction> refused = ParseKeyFunction(pickled);
    ASSERT_FALSE(refused.has_value());
    EXPECT_NE(
        refused.error().message.find("--prefix-caching-hash-algo sha256_cbor"),
        std::string::npos);
  }
}

}  // namespace
}  // namespace hkv
