// The object group's encoding: a round trip, and every kind of torn,
// foreign or altered object refused with its defect named.
#include "hkv/object_group.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>

#include "hkv/result.h"

namespace hkv {
namespace {

const NamespaceDigest kNs =
    DigestNamespace({.model = "m", .geometry = "g", .salt_domain = ""});

BlockHash KeyOf(std::uint8_t seed) {
  BlockHash key;
  for (std::size_t i = 0; i < key.bytes.size(); ++i)
    key.bytes[i] = static_cast<std::uint8_t>(seed + i);
  return key;
}

ObjectGroup Sample() {
  return {.key = KeyOf(3),
          .end_tokens = 4864,
          .parts = {{.group = GroupId{0}, .bytes = "attention page"},
                    {.group = GroupId{2}, .bytes = std::string(1000, '\0')},
                    {.group = GroupId{5}, .bytes = "recurrent state"}}};
}

TEST(ObjectGroupTest, RoundTrips) {
  const ObjectGroup group = Sample();
  const std::string bytes = EncodeObjectGroup(group, kNs);
  const DecodedObject decoded = DecodeObjectGroup(bytes, kNs, group.key);
  ASSERT_EQ(decoded.defect, ObjectDefect::kNone);
  EXPECT_EQ(decoded.group, group);
  Result<ObjectSummary> summary = SummarizeObject(bytes, kNs);
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->end_tokens, 4864u);
  EXPECT_EQ(summary->groups,
            (std::vector<GroupId>{GroupId{0}, GroupId{2}, GroupId{5}}));
  EXPECT_EQ(summary->total_bytes, bytes.size());
}

TEST(ObjectGroupTest, NamesCarryTheNamespaceAndTheKey) {
  const std::string name = ObjectName(kNs, KeyOf(9));
  EXPECT_EQ(name.size(), 101u);
  EXPECT_TRUE(name.starts_with(ObjectNamePrefix(kNs)));
  EXPECT_EQ(KeyOfObjectName(kNs, name), KeyOf(9));
  const NamespaceDigest other =
      DigestNamespace({.model = "m", .geometry = "g", .salt_domain = "t2"});
  EXPECT_NE(other, kNs);
  EXPECT_EQ(KeyOfObjectName(other, name), std::nullopt);
  EXPECT_EQ(KeyOfObjectName(kNs, name.substr(0, 100) + "g"), std::nullopt);
}

TEST(ObjectGroupTest, NamespaceFieldsDoNotRunTogether) {
  EXPECT_NE(
      DigestNamespace({.model = "ab", .geometry = "c", .salt_domain = ""}),
      DigestNamespace({.model = "a", .geometry = "bc", .salt_domain = ""}));
}

TEST(ObjectGroupTest, ATruncatedOrPaddedObjectIsTheWrongSize) {
  const std::string bytes = EncodeObjectGroup(Sample(), kNs);
  for (std::size_t keep : {std::size_t{0}, std::size_t{20}, bytes.size() - 1}) {
    EXPECT_EQ(
        DecodeObjectGroup(bytes.substr(0, keep), kNs, Sample().key).defect,
        ObjectDefect::kWrongSize);
  }
  EXPECT_EQ(DecodeObjectGroup(bytes + "x", kNs, Sample().key).defect,
            ObjectDefect::kWrongSize);
}

TEST(ObjectGroupTest, AForeignNamespaceOrAnotherKeyIsRefused) {
  const std::string bytes = EncodeObjectGroup(Sample(), kNs);
  const NamespaceDigest tenant =
      DigestNamespace({.model = "m", .geometry = "g", .salt_domain = "t"});
  EXPECT_EQ(DecodeObjectGroup(bytes, tenant, Sample().key).defect,
            ObjectDefect::kWrongNamespace);
  EXPECT_EQ(DecodeObjectGroup(bytes, kNs, KeyOf(4)).defect,
            ObjectDefect::kWrongKey);
  EXPECT_FALSE(SummarizeObject(bytes, tenant).has_value());
}

// Any single flipped bit is caught: in the header by its checksum (or the
// fields it checks), in a part by the part's.
RC_GTEST_PROP(ObjectGroupTest, AnyFlippedBitIsRefused, ()) {
  const std::string bytes = EncodeObjectGroup(Sample(), kNs);
  const auto at = *rc::gen::inRange<std::size_t>(0, bytes.size());
  const auto bit = *rc::gen::inRange(0, 8);
  std::string flipped = bytes;
  flipped[at] = static_cast<char>(flipped[at] ^ (1 << bit));
  const DecodedObject decoded = DecodeObjectGroup(flipped, kNs, Sample().key);
  RC_ASSERT(decoded.defect != ObjectDefect::kNone);
  RC_ASSERT(decoded.group.parts.empty());
}

// Arbitrary bytes never decode, and never read out of bounds.
RC_GTEST_PROP(ObjectGroupTest, ArbitraryBytesAreRefused, ()) {
  const auto bytes =
      *rc::gen::container<std::string>(rc::gen::arbitrary<char>());
  RC_ASSERT(DecodeObjectGroup(bytes, kNs, Sample().key).defect !=
            ObjectDefect::kNone);
}

TEST(ObjectGroupTest, EncodingRefusesMalformedGroups) {
  ObjectGroup unordered = Sample();
  std::swap(unordered.parts[0], unordered.parts[1]);
  EXPECT_THROW((void)EncodeObjectGroup(unordered, kNs), UsageError);
  ObjectGroup empty = Sample();
  empty.parts.clear();
  EXPECT_THROW((void)EncodeObjectGroup(empty, kNs), UsageError);
  ObjectGroup at_zero = Sample();
  at_zero.end_tokens = 0;
  EXPECT_THROW((void)EncodeObjectGroup(at_zero, kNs), UsageError);
}

}  // namespace
}  // namespace hkv
