// Extra keys as spec §2.4 has them: one vector per kind, written out by hand
// as the CBOR bytes of [parent, [tokens], extra] (each byte group decoded in
// a comment) and hashed here with OpenSSL, independently of hkv's encoder.
// All vectors use the seed "0" and 4-token units.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <initializer_list>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/cache_manager.h"
#include "hkv/keys.h"
#include "hkv/request.h"

namespace hkv {
namespace {

// SHA-256 of the CBOR text string "0" (0x61 0x30): the parent of unit 0.
const std::string kSeed =
    "4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e";

// Tags (text strings: head 0x60 + length, then UTF-8):
//   646c6f7261                    text(4)  "lora"
//   626d6d                        text(2)  "mm"
//   6a63616368655f73616c74        text(10) "cache_salt"
//   6d70726f6d70745f656d62656473  text(13) "prompt_embeds"

// The hex parts, one per byte group, joined.
std::string Cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view part : parts) out += part;
  return out;
}

std::string Hex(std::span<const std::uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

std::vector<std::uint8_t> Bytes(std::string_view hex) {
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<std::uint8_t>(
        std::stoul(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

// SHA-256 straight from OpenSSL, in hex.
std::string Sha256(std::span<const std::uint8_t> data) {
  std::vector<std::uint8_t> digest(32);
  unsigned int size = 0;
  EXPECT_EQ(EVP_Digest(data.data(), data.size(), digest.data(), &size,
                       EVP_sha256(), nullptr),
            1);
  return Hex(digest);
}
std::string Sha256OfHex(std::string_view hex) { return Sha256(Bytes(hex)); }

KeyScheme Scheme() {
  return *MakeKeyScheme({.hash_unit = 4, .seed = std::string("0")});
}

std::vector<TokenId> Iota(TokenId from, TokenId to) {
  std::vector<TokenId> v(to - from);
  std::iota(v.begin(), v.end(), from);
  return v;
}

// The CBOR hkv digests for unit k of `request`.
std::string UnitInput(const Request& request, std::uint32_t k) {
  const KeyScheme& s = request.key_scheme();
  const BlockHash& parent = k == 0 ? s.seed_key : request.keys()[k - 1];
  const std::uint32_t start = k * s.hash_unit;
  return Hex(UnitKeyInput(s, parent, request.tokens().subspan(start, 4),
                          UnitExtraKeys(request.extras(), start, start + 4)));
}

// Checks unit k's CBOR against `cbor` and its key against SHA-256(cbor).
void ExpectUnit(const Request& request, std::uint32_t k,
                const std::string& cbor) {
  SCOPED_TRACE("unit " + std::to_string(k));
  EXPECT_EQ(UnitInput(request, k), cbor);
  ASSERT_GT(request.keys().size(), k);
  EXPECT_EQ(request.keys()[k].Hex(), Sha256OfHex(cbor));
}

TEST(KeysExtraTest, SeedIsSha256OfTextZero) {
  EXPECT_EQ(Scheme().seed_key.Hex(), Sha256OfHex("6130"));  // text(1) "0"
  EXPECT_EQ(Scheme().seed_key.Hex(), kSeed);
}

TEST(KeysExtraTest, LoraTupleOnEveryUnit) {
  const Request r(
      {.id = RequestId{1}, .extras = {.lora_name = "x", .lora_path = "/a/x"}},
      Iota(1, 9), Scheme());
  ExpectUnit(r, 0,
             Cat({
                 "83",          // array(3): [parent, tokens, extra]
                 "5820",        // bytes(32):
                 kSeed,         //   the seed key
                 "8401020304",  // array(4): 1, 2, 3, 4
                 "81"           // array(1): extra
                 "83"           //   array(3):
                 "646c6f7261"   //     "lora"
                 "6178"         //     text(1) "x"
                 "642f612f78",  //     text(4) "/a/x"
             }));
  ExpectUnit(r, 1,
             Cat({
                 "835820",           // array(3), bytes(32):
                 r.keys()[0].Hex(),  //   K0
                 "8405060708"        // array(4): 5, 6, 7, 8
                 "81"                // array(1): extra, the same tuple
                 "83646c6f72616178642f612f78",
             }));
}

TEST(KeysExtraTest, LoraWithoutPathHasAnEmptyPath) {
  const Request r({.id = RequestId{1}, .extras = {.lora_name = "x"}},
                  Iota(1, 5), Scheme());
  ExpectUnit(r, 0,
             Cat({
                 "835820",     // [bytes(32)
                 kSeed,        //   seed key,
                 "8401020304"  //  [1, 2, 3, 4],
                 "8183"        //  [[
                 "646c6f7261"  //    "lora",
                 "6178"        //    "x",
                 "60",         //    text(0) ""]]]
             }));
}

// "img" covers [2, 7): unit 0 sees it at +2, unit 1 at -2 (it started in
// unit 0). "vid" covers [6, 12): it continues past unit 1 (+2) into unit 2
// (-2). Unit 3 has no item: its extra is null.
TEST(KeysExtraTest, MultimodalOffsetsRelativeToTheUnit) {
  const Request r({.id = RequestId{1},
                   .extras = {.multimodal = {{"img", 2, 5}, {"vid", 6, 6}}}},
                  Iota(0, 16), Scheme());
  ExpectUnit(r, 0,
             Cat({
                 "835820",     // [bytes(32)
                 kSeed,        //   seed key,
                 "8400010203"  //  [0, 1, 2, 3],
                 "81"          //  [
                 "83626d6d"    //   ["mm",
                 "63696d67"    //    text(3) "img",
                 "02",         //    2]]]
             }));
  ExpectUnit(r, 1,
             Cat({
                 "835820",           // [bytes(32)
                 r.keys()[0].Hex(),  //   K0,
                 "8404050607"        //  [4, 5, 6, 7],
                 "82"                //  [
                 "83626d6d"          //   ["mm",
                 "63696d67"          //    "img",
                 "21"                //    -2 (major 1, argument 1)],
                 "83626d6d"          //   ["mm",
                 "63766964"          //    text(3) "vid",
                 "02",               //    2]]]
             }));
  ExpectUnit(r, 2,
             Cat({
                 "835820",           // [bytes(32)
                 r.keys()[1].Hex(),  //   K1,
                 "8408090a0b"        //  [8, 9, 10, 11],
                 "81"                //  [
                 "83626d6d"          //   ["mm",
                 "63766964"          //    "vid",
                 "21",               //    -2]]]
             }));
  ExpectUnit(r, 3,
             Cat({
                 "835820",           // [bytes(32)
                 r.keys()[2].Hex(),  //   K2,
                 "840c0d0e0f"        //  [12, 13, 14, 15],
                 "f6",               //  null]
             }));
}

TEST(KeysExtraTest, CacheSaltOnTheFirstUnitOnly) {
  const Request r({.id = RequestId{1}, .extras = {.cache_salt = "x"}},
                  Iota(1, 9), Scheme());
  ExpectUnit(r, 0,
             Cat({
                 "835820",                 // [bytes(32)
                 kSeed,                    //   seed key,
                 "8401020304"              //  [1, 2, 3, 4],
                 "81"                      //  [
                 "82"                      //   [
                 "6a63616368655f73616c74"  //    "cache_salt",
                 "6178",                   //    "x"]]]
             }));
  ExpectUnit(r, 1,
             Cat({
                 "835820",           // [bytes(32)
                 r.keys()[0].Hex(),  //   K0,
                 "8405060708"        //  [5, 6, 7, 8],
                 "f6",               //  null]
             }));
}

// The extra of a unit whose rows digest to `digest`.
std::string EmbedsExtra(std::string_view digest) {
  return Cat({
      "81"                            // [
      "82"                            //  [
      "6d70726f6d70745f656d62656473"  //   "prompt_embeds",
      "5820",                         //   bytes(32)
      digest,                         //     digest]]
  });
}

// Three bytes per token; unit k digests bytes [12k, 12k + 12). Unit 2 lies
// past the prompt (output tokens): it digests no bytes.
TEST(KeysExtraTest, PromptEmbedsDigestTheUnitsRows) {
  std::vector<std::uint8_t> embeds(24);
  std::iota(embeds.begin(), embeds.end(), std::uint8_t{0});
  Request r(
      {.id = RequestId{1},
       .extras = {.prompt_embeds = {.bytes = embeds, .bytes_per_token = 3}}},
      Iota(1, 9), Scheme());
  r.AppendTokens(Iota(9, 13));
  ExpectUnit(r, 0,
             Cat({
                 "835820",      // [bytes(32)
                 kSeed,         //   seed key,
                 "8401020304",  //  [1, 2, 3, 4],
                 EmbedsExtra(Sha256OfHex("000102030405060708090a0b")),
             }));
  ExpectUnit(r, 1,
             Cat({
                 "835820",           // [bytes(32)
                 r.keys()[0].Hex(),  //   K0,
                 "8405060708",       //  [5, 6, 7, 8],
                 EmbedsExtra(Sha256OfHex("0c0d0e0f1011121314151617")),
             }));
  // The SHA-256 of no bytes.
  ExpectUnit(r, 2,
             Cat({
                 "835820",           // [bytes(32)
                 r.keys()[1].Hex(),  //   K1,
                 "84090a0b0c",       //  [9, 10, 11, 12],
                 EmbedsExtra("e3b0c44298fc1c149afbf4c8996fb924"
                             "27ae41e4649b934ca495991b7852b855"),
             }));
}

// Every kind at once, in the spec's order: lora, mm, cache_salt,
// prompt_embeds.
TEST(KeysExtraTest, AllKindsInTheSpecsOrder) {
  const std::vector<std::uint8_t> embeds = Bytes("1011121314151617");
  const Request r(
      {.id = RequestId{1},
       .extras = {.lora_name = "x",
                  .lora_path = "/a/x",
                  .multimodal = {{"img", 2, 4}},
                  .cache_salt = "s",
                  .prompt_embeds = {.bytes = embeds, .bytes_per_token = 1}}},
      Iota(0, 8), Scheme());
  ExpectUnit(r, 0,
             Cat({
                 "835820",                         // [bytes(32)
                 kSeed,                            //   seed key,
                 "8400010203"                      //  [0, 1, 2, 3],
                 "84"                              //  [
                 "83646c6f72616178642f612f78"      //   ["lora", "x", "/a/x"],
                 "83626d6d63696d6702"              //   ["mm", "img", 2],
                 "826a63616368655f73616c746173"    //   ["cache_salt", "s"],
                 "826d70726f6d70745f656d62656473"  //   ["prompt_embeds",
                 "5820",                           //    bytes(32)
                 Sha256OfHex("10111213"),          //      digest]]]
             }));
  ExpectUnit(r, 1,
             Cat({
                 "835820",                         // [bytes(32)
                 r.keys()[0].Hex(),                //   K0,
                 "8404050607"                      //  [4, 5, 6, 7],
                 "83"                              //  [
                 "83646c6f72616178642f612f78"      //   ["lora", "x", "/a/x"],
                 "83626d6d63696d6721"              //   ["mm", "img", -2],
                 "826d70726f6d70745f656d62656473"  //   ["prompt_embeds",
                 "5820",                           //    bytes(32)
                 Sha256OfHex("14151617"),          //      digest]]]
             }));
}

// The bug the tags fix: untagged, a salt "x" and an adapter "x" wrote the
// same first unit, so a salted request read an adapter's blocks.
TEST(KeysExtraTest, SaltAndLoraOfOneNameNeverShareAKey) {
  const std::vector<TokenId> tokens = Iota(0, 12);
  const Request salted({.id = RequestId{1}, .extras = {.cache_salt = "x"}},
                       tokens, Scheme());
  const Request lora({.id = RequestId{2}, .extras = {.lora_name = "x"}}, tokens,
                     Scheme());
  const Request image(
      {.id = RequestId{3}, .extras = {.multimodal = {{"x", 0, 4}}}}, tokens,
      Scheme());
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_NE(salted.keys()[k], lora.keys()[k]) << k;
    EXPECT_NE(salted.keys()[k], image.keys()[k]) << k;
    EXPECT_NE(lora.keys()[k], image.keys()[k]) << k;
  }
}

// Through the CacheManager, in both directions: what one request cached is
// no hit for the other.
TEST(KeysExtraTest, SaltedRequestNeverHitsAnAdaptersBlocks) {
  const std::vector<TokenId> prompt = Iota(0, 40);
  const KeyExtras salt_x = {.cache_salt = "x"}, lora_x = {.lora_name = "x"};
  for (const auto& [writer, reader] :
       {std::pair{salt_x, lora_x}, std::pair{lora_x, salt_x}}) {
    Result<CacheManager> cache =
        CacheManager::Create({.groups = {{.block_size = 16}}, .num_blocks = 8});
    ASSERT_TRUE(cache.has_value());
    const Request w({.id = RequestId{1}, .extras = writer}, prompt,
                    cache->key_scheme());
    ASSERT_TRUE(cache->Allocate(w, {.num_new_tokens = 40}));
    cache->Commit(w, 40);
    cache->Free(w.id());
    const Request same({.id = RequestId{2}, .extras = writer}, prompt,
                       cache->key_scheme());
    EXPECT_EQ(cache->Lookup(same).num_tokens, 32u);  // the writer's blocks
    const Request other({.id = RequestId{3}, .extras = reader}, prompt,
                        cache->key_scheme());
    EXPECT_EQ(cache->Lookup(other).num_tokens, 0u);
  }
}

TEST(KeysExtraTest, BadExtrasAreRefusedNamingTheField) {
  const auto error = [](const KeyExtras& extras) {
    return extras.Validate().error().message;
  };
  using ::testing::HasSubstr;
  EXPECT_THAT(error({.lora_path = "/a"}), HasSubstr("lora_path"));
  EXPECT_THAT(error({.multimodal = {{"b", 8, 1}, {"a", 2, 1}}}),
              HasSubstr("not sorted by offset (item 1"));
  EXPECT_THAT(error({.multimodal = {{"a", 4294967295u, 2}}}),
              HasSubstr("multimodal item 0 ends past"));
  EXPECT_THAT(
      error({.prompt_embeds = {.bytes = {1, 2, 3}, .bytes_per_token = 2}}),
      HasSubstr("prompt_embeds: 3 bytes"));
  EXPECT_THAT(error({.prompt_embeds = {.bytes = {1}}}),
              HasSubstr("prompt_embeds"));
  EXPECT_TRUE(KeyExtras{}.Validate().has_value());
  EXPECT_THROW(Request({.id = RequestId{1}, .extras = {.lora_path = "/a"}},
                       Iota(0, 4), Scheme()),
               UsageError);
}

}  // namespace
}  // namespace hkv
