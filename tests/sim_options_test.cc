#include "hkv/sim_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "hkv/experiment.h"

namespace hkv {
namespace {

using ::testing::HasSubstr;

// The flag an option has when its name says it all.
std::string DerivedFlag(std::string_view name) {
  std::string flag(name);
  std::replace(flag.begin(), flag.end(), '_', '-');
  return "--" + flag;
}

TEST(SimOptionsTest, FlagsAreTheNamesWithDashesButThreeExceptions) {
  std::set<std::string_view> names;
  for (const SimOption& option : SimOptions()) {
    EXPECT_TRUE(names.insert(option.name).second) << option.name;
    if (option.name == "duration_s") {
      EXPECT_EQ(option.Flag(), "--duration");
    } else if (option.name == "data_dir") {
      EXPECT_EQ(option.Flag(), "");
    } else if (option.name == "tiers") {
      EXPECT_EQ(option.Flag(), "--tier");  // repeatable: one tier each
    } else {
      EXPECT_EQ(option.Flag(), DerivedFlag(option.name));
    }
    EXPECT_FALSE(option.help.empty()) << option.name;
  }
  EXPECT_EQ(names.size(), 36u);
}

TEST(SimOptionsTest, FindsByNameNotByFlag) {
  ASSERT_NE(FindSimOption("time_scale"), nullptr);
  EXPECT_TRUE(FindSimOption("time_scale")->IsReal());
  EXPECT_TRUE(FindSimOption("num_blocks")->IsNumber());
  EXPECT_FALSE(FindSimOption("num_blocks")->IsReal());
  EXPECT_FALSE(FindSimOption("groups")->IsNumber());
  EXPECT_EQ(FindSimOption("time-scale"), nullptr);
  EXPECT_EQ(FindSimOption("json"), nullptr);  // the CLI's, not an option
}

TEST(SimOptionsTest, NumbersHaveRangesHoldingTheirDefaults) {
  for (const SimOption& option : SimOptions()) {
    if (!option.IsNumber()) continue;
    if (option.IsReal()) {
      EXPECT_LT(option.real.min, option.real.max) << option.name;
    } else {
      EXPECT_LT(option.min, option.max) << option.name;
    }
  }
  EXPECT_TRUE(CheckSimOptions(ExperimentOptions{}, OptionNames::kFlag));
}

TEST(SimOptionsTest, CheckNamesTheFlagOrTheKeyword) {
  const ExperimentOptions o{.duration_s = -1.0};
  Result<void> flag = CheckSimOptions(o, OptionNames::kFlag);
  ASSERT_FALSE(flag);
  EXPECT_EQ(flag.error().message,
            "--duration: -1 is not a number in (0, 1e+12]");
  Result<void> keyword = CheckSimOptions(o, OptionNames::kPython);
  ASSERT_FALSE(keyword);
  EXPECT_THAT(keyword.error().message, HasSubstr("duration_s: -1 "));
}

TEST(SimOptionsTest, TextChecksRefuseMalformedValues) {
  const SimOption& groups = *FindSimOption("groups");
  ASSERT_NE(groups.check, nullptr);
  EXPECT_TRUE(groups.check("full:16,recurrent:16"));
  EXPECT_FALSE(groups.check("bogus:16"));
  const SimOption& key_function = *FindSimOption("key_function");
  ASSERT_NE(key_function.check, nullptr);
  EXPECT_TRUE(key_function.check("sha256_cbor"));
  EXPECT_FALSE(key_function.check("md5"));
}

TEST(SimOptionsTest, VarySetsTheVariedOptionsByFlag) {
  ExperimentOptions o;
  ASSERT_TRUE(SetSimOption(o, "max-num-seqs", "1e3"));
  EXPECT_EQ(o.max_num_seqs, 1000u);
  ASSERT_TRUE(SetSimOption(o, "num-blocks", "64"));
  EXPECT_EQ(o.num_blocks, 64u);
  ASSERT_TRUE(SetSimOption(o, "budget-gib", "16.5"));
  EXPECT_EQ(o.budget_gib, 16.5);
  ASSERT_TRUE(SetSimOption(o, "geometry", "4096/256/256"));
  EXPECT_EQ(o.geometry, "4096/256/256");
  Result<void> range = SetSimOption(o, "tp", "0");
  ASSERT_FALSE(range);
  EXPECT_EQ(range.error().message,
            "--vary tp: \"0\" is not a whole number in [1, 4294967295]");
  Result<void> unvaried = SetSimOption(o, "seed", "2");
  ASSERT_FALSE(unvaried);
  EXPECT_THAT(unvaried.error().message, HasSubstr("cannot vary \"seed\""));
  EXPECT_FALSE(SetSimOption(o, "max_num_seqs", "1"));  // a name, no flag
}

}  // namespace
}  // namespace hkv
