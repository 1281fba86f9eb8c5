// hkv/group_kind.h: one table of the kinds' names.
#include "hkv/group_kind.h"

#include <gtest/gtest.h>

#include <set>
#include <string_view>

namespace hkv {
namespace {

TEST(GroupKindTest, EveryKindHasOneEntryAndItsNamesParseBack) {
  std::set<std::string_view> names;
  for (const GroupKindNames& k : kGroupKinds) {
    EXPECT_EQ(&NamesOf(k.kind), &k);
    EXPECT_EQ(GroupKindName(k.kind), k.name);
    EXPECT_EQ(ParseGroupKind(k.name), k.kind) << k.name;
    EXPECT_EQ(ParseGroupKind(k.alias), k.kind) << k.alias;
    EXPECT_TRUE(names.insert(k.name).second) << k.name;
    EXPECT_TRUE(names.insert(k.alias).second) << k.alias;
  }
  EXPECT_EQ(GroupKindName(GroupKind::kRecurrent), "recurrent");
  EXPECT_EQ(NamesOf(GroupKind::kRecurrent).event_name, "mamba");
  EXPECT_EQ(NamesOf(GroupKind::kChunkedLocal).event_name,
            "chunked_local_attention");
}

TEST(GroupKindTest, OtherNamesAreNotKinds) {
  EXPECT_EQ(ParseGroupKind(""), std::nullopt);
  EXPECT_EQ(ParseGroupKind("Full"), std::nullopt);
  EXPECT_EQ(ParseGroupKind("mla"), std::nullopt);
}

}  // namespace
}  // namespace hkv
