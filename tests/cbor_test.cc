// The CBOR token encoder's vector path against its one-value-at-a-time
// path, and keying many plain units at once (src/core/plain_keys.h) against
// HashUnit unit by unit.
#include "core/cbor.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "core/plain_keys.h"
#include "hkv/keys.h"

namespace hkv {
namespace {

// Values around every width boundary of a CBOR argument, or anything.
rc::Gen<std::uint32_t> TokenValue() {
  return rc::gen::oneOf(rc::gen::elementOf(std::vector<std::uint32_t>{
                            0, 1, 23, 24, 25, 255, 256, 257, 65535, 65536,
                            65537, 151935, 0xffffffffu}),
                        rc::gen::inRange<std::uint32_t>(0, 300),
                        rc::gen::inRange<std::uint32_t>(0, 151936),
                        rc::gen::arbitrary<std::uint32_t>());
}

std::vector<std::uint8_t> Encoded(std::span<const std::uint32_t> values,
                                  bool scalar) {
  std::vector<std::uint8_t> out(internal::CborWriter::kMaxHeadBytes +
                                5 * values.size() +
                                internal::CborWriter::kArraySpareBytes);
  internal::CborWriter writer(out.data());
  if (scalar) {
    writer.UnsignedArrayScalar(values);
  } else {
    writer.UnsignedArray(values);
  }
  out.resize(writer.size());
  return out;
}

TEST(CborTest, TokensOfEveryWidthEncodeCanonically) {
  const std::vector<std::uint32_t> values = {0,     23,    24,     255, 256,
                                             65535, 65536, 151935, 7};
  const std::vector<std::uint8_t> expected = {
      0x89, 0x00, 0x17, 0x18, 0x18, 0x18, 0xff, 0x19, 0x01, 0x00, 0x19, 0xff,
      0xff, 0x1a, 0x00, 0x01, 0x00, 0x00, 0x1a, 0x00, 0x02, 0x51, 0x7f, 0x07};
  EXPECT_EQ(Encoded(values, false), expected);
  EXPECT_EQ(Encoded(values, true), expected);
}

RC_GTEST_PROP(CborTest, TheVectorPathWritesTheScalarPathsBytes, ()) {
  const auto values =
      *rc::gen::container<std::vector<std::uint32_t>>(TokenValue());
  RC_ASSERT(Encoded(values, false) == Encoded(values, true));
}

RC_GTEST_PROP(CborTest, PlainUnitsKeyAsHashUnitChainsThem, ()) {
  const KeyFunction function =
      *rc::gen::element(KeyFunction::kSha256Cbor, KeyFunction::kXxh3_128Cbor);
  const auto unit = *rc::gen::inRange<std::uint32_t>(1, 70);
  const auto tokens = *rc::gen::container<std::vector<TokenId>>(TokenValue());
  const Result<KeyScheme> scheme =
      MakeKeyScheme({.function = function, .hash_unit = unit, .seed = "seed"});
  RC_ASSERT(scheme.has_value());
  std::vector<BlockHash> keys = {scheme->seed_key};  // a parent already held
  internal::AppendPlainUnitKeys(*scheme, keys.back(), tokens, keys);
  RC_ASSERT(keys.size() == 1 + tokens.size() / unit);
  BlockHash parent = scheme->seed_key;
  const std::span<const TokenId> all(tokens);
  for (std::size_t k = 0; k + 1 < keys.size(); ++k) {
    parent = HashUnit(*scheme, parent, all.subspan(k * unit, unit), {});
    RC_ASSERT(keys[k + 1] == parent);
  }
}

// Long prompts: keying encodes units a batch at a time (a few kilobytes of
// tokens), or for xxh3 at short units in a ring a few units ahead of the
// digest (plain_keys.h), so these cross many batches and turns of the ring,
// at units that do and do not fill whole vector steps.
RC_GTEST_PROP(CborTest, LongPromptsKeyAsHashUnitChainsThem, ()) {
  const KeyFunction function =
      *rc::gen::element(KeyFunction::kSha256Cbor, KeyFunction::kXxh3_128Cbor);
  const auto unit =
      *rc::gen::element<std::uint32_t>(1, 7, 8, 16, 32, 33, 40, 48, 256, 1000);
  const auto length = *rc::gen::inRange<std::size_t>(0, 12000);
  std::mt19937 random(*rc::gen::arbitrary<std::uint32_t>());
  const auto widest =
      *rc::gen::element<std::uint32_t>(24, 300, 151936, 0xffffffffu);
  std::vector<TokenId> tokens(length);
  for (TokenId& token : tokens) {
    token = static_cast<TokenId>(random() % widest);
  }
  const Result<KeyScheme> scheme =
      MakeKeyScheme({.function = function, .hash_unit = unit, .seed = "seed"});
  RC_ASSERT(scheme.has_value());
  std::vector<BlockHash> keys;
  internal::AppendPlainUnitKeys(*scheme, scheme->seed_key, tokens, keys);
  RC_ASSERT(keys.size() == tokens.size() / unit);
  BlockHash parent = scheme->seed_key;
  const std::span<const TokenId> all(tokens);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    parent = HashUnit(*scheme, parent, all.subspan(k * unit, unit), {});
    RC_ASSERT(keys[k] == parent);
  }
}

}  // namespace
}  // namespace hkv
