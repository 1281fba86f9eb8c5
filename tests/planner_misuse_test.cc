// Model files and planner inputs with impossible numbers: every one is an
// error naming the field (or the figure that does not fit), never a plan
// built from a wrapped or truncated value.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "hkv/geometry.h"
#include "hkv/limits.h"
#include "hkv/model.h"
#include "hkv/planner.h"

namespace hkv {
namespace {

using ::testing::HasSubstr;

constexpr std::uint64_t kMax64 = std::numeric_limits<std::uint64_t>::max();
constexpr PlanOptions kOptions{.budget_bytes = std::uint64_t{1} << 40,
                               .context_tokens = 4096};

// A one-layer model file whose layer has `fields` besides its kind.
std::string OneLayer(const std::string& kind, const std::string& fields) {
  return R"({"name": "m", "layers": [{"kind": ")" + kind + "\", " + fields +
         "}]}";
}

std::string ParseError(const std::string& text) {
  Result<ModelSpec> model = ParseModelJson(text);
  if (model) return "(parsed)";
  EXPECT_EQ(model.error().code, ErrorCode::kInvalidArgument);
  return model.error().message;
}

TEST(PlannerMisuseTest, CountMinusOneIsRefusedNamingTheField) {
  EXPECT_THAT(
      ParseError(
          OneLayer("mla", R"("count": -1, "record_bytes_per_token": 8)")),
      HasSubstr("layers[0].count: must be an integer from 0 to 4294967295, "
                "got -1"));
}

TEST(PlannerMisuseTest, CountOf1e30IsRefusedNotConverted) {
  EXPECT_THAT(
      ParseError(
          OneLayer("mla", R"("count": 1e30, "record_bytes_per_token": 8)")),
      HasSubstr("layers[0].count: must be an integer from 0 to 4294967295, "
                "got 1e+30"));
  EXPECT_THAT(ParseError(OneLayer(
                  "mla", R"("count": 2.5, "record_bytes_per_token": 8)")),
              HasSubstr("got 2.5"));
  EXPECT_THAT(ParseError(OneLayer("mla", R"("count": 4294967296)")),
              HasSubstr("layers[0].count: must be an integer from 0 to "
                        "4294967295, got 4294967296"));
  EXPECT_THAT(ParseError(OneLayer("mla", R"("count": 1e400)")),
              HasSubstr("number overflow parsing '1e400'"));
}

// The model fuzzer's reproducers and their siblings: every integer field
// of the loader refuses a value beyond its type (2^32 + 1 became 1 layer)
// and a float beyond it (1e30 went through a float-to-integer cast),
// naming the field.
TEST(PlannerMisuseTest, EveryIntegerFieldRefusesValuesBeyondItsType) {
  const std::string kU32 = "must be an integer from 0 to 4294967295, got ";
  const std::string kU64 =
      "must be an integer from 0 to 18446744073709551615, got ";
  struct Case {
    std::string json;  // "%" is where the number goes
    std::string field;
    bool wide;  // a 64-bit field
  };
  const std::string layer = R"({"name": "m", "layers": [{"kind": "full", )";
  std::vector<Case> cases = {
      {R"({"name": "m", "kernel_block": %, "layers": []})", "kernel_block",
       false},
      {R"({"name": "m", "stride_alignment": %, "layers": []})",
       "stride_alignment", true},
      {R"({"name": "m", "layers": [], "draft": {"speculative_tokens": %}})",
       "draft.speculative_tokens", false},
      {layer + R"("state": [{"shape": [3, %]}]}]})",
       "layers[0].state[0].shape[1]", true},
      {layer + R"("state": [{"shape": [3], "tp_dim": %}]}]})",
       "layers[0].state[0].tp_dim", false}};
  for (const char* key :
       {"count", "kv_heads", "head_size", "head_size_v", "window", "chunk"}) {
    cases.push_back({layer + "\"" + key + "\": %}]}",
                     std::string("layers[0].") + key, false});
  }
  for (const char* key : {"record_bytes_per_token", "tail_bytes_per_token",
                          "record_alignment", "state_bytes"}) {
    cases.push_back({layer + "\"" + key + "\": %}]}",
                     std::string("layers[0].") + key, true});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.field);
    const std::size_t at = c.json.find('%');
    const auto with = [&](const std::string& number) {
      return ParseError(std::string(c.json).replace(at, 1, number));
    };
    const std::string want = c.field + ": " + (c.wide ? kU64 : kU32);
    EXPECT_THAT(with("1e30"), HasSubstr(want + "1e+30"));
    EXPECT_THAT(with("-1"), HasSubstr(want + "-1"));
    if (c.wide) {
      EXPECT_THAT(with("18446744073709551616"), HasSubstr(want));
    } else {
      EXPECT_THAT(with("4294967297"), HasSubstr(want + "4294967297"));
    }
  }
}

// JSON has no NaN: the parser refuses it, and says where.
TEST(PlannerMisuseTest, NaNIsRefused) {
  const std::string error = ParseError(OneLayer("mla", R"("count": NaN)"));
  EXPECT_THAT(error, HasSubstr("model description"));
  EXPECT_THAT(error, HasSubstr("count"));
}

TEST(PlannerMisuseTest, WrongJsonTypesAreRefusedNamingTheField) {
  EXPECT_THAT(ParseError(OneLayer("mla", R"("count": "3")")),
              HasSubstr("layers[0].count: must be an integer from 0 to "
                        "4294967295, got a string"));
  EXPECT_THAT(ParseError(R"({"layers": 5})"),
              HasSubstr("layers: must be a list, got a number"));
  EXPECT_THAT(ParseError(R"({"layers": [5]})"),
              HasSubstr("layers[0]: must be an object, got a number"));
  EXPECT_THAT(ParseError(R"({"layers": [{"kind": 1}]})"),
              HasSubstr("layers[0].kind: must be a string, got a number"));
  EXPECT_THAT(ParseError(R"({"draft": [], "layers": []})"),
              HasSubstr("draft: must be an object, got a list"));
  EXPECT_THAT(ParseError(R"([1, 2])"),
              HasSubstr("model description: must be an object, got a list"));
  EXPECT_THAT(ParseError(OneLayer("recurrent", R"("state": [{"shape": [2],
                  "speculative_rows": 1}])")),
              HasSubstr("layers[0].state[0].speculative_rows: must be true or "
                        "false, got a number"));
  EXPECT_THAT(
      ParseError(OneLayer("recurrent", R"("state": [{"shape": [2, -3]}])")),
      HasSubstr("layers[0].state[0].shape[1]: must be an integer from "
                "0 to 18446744073709551615, got -3"));
  EXPECT_THAT(ParseError(R"({"name": 7, "layers": []})"),
              HasSubstr("name: must be a string, got a number"));
}

// 2^64 - 1 is a valid uint64: it parses, and the stride it rounds to fits
// no budget. (It used to wrap the stride to 0 and divide by it.)
TEST(PlannerMisuseTest, StrideAlignmentOf2To64Minus1IsInfeasible) {
  Result<ModelSpec> model = ParseModelJson(
      R"({"name": "m", "layout": "split",
          "stride_alignment": 18446744073709551615,
          "layers": [{"kind": "full", "kv_heads": 1, "head_size": 8},
                     {"kind": "recurrent", "state_bytes": 64}]})");
  ASSERT_TRUE(model) << model.error().message;
  EXPECT_EQ(model->stride_alignment, kMax64);
  Result<Plan> plan = PlanCapacity(*model, {16, 16, 16}, kOptions);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().code, ErrorCode::kInfeasible);
  EXPECT_THAT(plan.error().message,
              HasSubstr("rounded up to stride_alignment 18446744073709551615"));
}

// [2^32, 2^32, 2^32] x 2 B is 2^97 B: refused, not planned as its low 64
// bits (0).
TEST(PlannerMisuseTest, StateOfShape2To32CubedIsRefused) {
  Result<ModelSpec> model = ParseModelJson(OneLayer(
      "recurrent",
      R"("state": [{"shape": [4294967296, 4294967296, 4294967296]}])"));
  ASSERT_TRUE(model) << model.error().message;
  Result<Plan> plan = PlanCapacity(*model, {16, 16, 16}, kOptions);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(plan.error().message,
              HasSubstr("layer 0: a state tensor of shape [4294967296, "
                        "4294967296, 4294967296] x 2 B exceeds 2^64 - 1 B"));
  EXPECT_FALSE(
      StateBytes({{.shape = {kMax64}, .speculative_rows = true}}, 1, 1));
}

TEST(PlannerMisuseTest, ZeroDimensionsAndTooManyLayersAreRefused) {
  EXPECT_THAT(
      ParseError(OneLayer("recurrent", R"("state": [{"shape": [0, 4]}])")),
      HasSubstr("layer 0: a state tensor's dimensions must be positive"));
  EXPECT_THAT(
      ParseError(OneLayer(
          "mla", R"("count": 4294967295, "record_bytes_per_token": 8)")),
      HasSubstr("4294967295 layers (counts summed, draft included) exceed the "
                "limit of 65536"));
  // Two buckets that would merge past 2^32 - 1 layers.
  ModelSpec two{.name = "two",
                .layers = {{.kind = LayerKind::kMla,
                            .count = 40'000,
                            .record_bytes_per_token = 8},
                           {.kind = LayerKind::kMla,
                            .count = 40'000,
                            .record_bytes_per_token = 8}}};
  Result<void> valid = two.Validate();
  ASSERT_FALSE(valid);
  EXPECT_THAT(valid.error().message, HasSubstr("80000 layers"));
}

// Byte facts whose products exceed 64 bits saturate: no budget holds them.
TEST(PlannerMisuseTest, HugeByteFactsAreInfeasibleNotWrapped) {
  const ModelSpec model{.name = "wide",
                        .layers = {{.num_kv_heads = 0xffffffffu,
                                    .head_size = 0xffffffffu,
                                    .head_size_v = 0xffffffffu}}};
  EXPECT_EQ(AttentionBytesPerToken(0xffffffffu, 0xffffffffu, 0xffffffffu, 4),
            kMax64);
  Result<Plan> plan = PlanCapacity(model, {16, 16, 16}, kOptions);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().code, ErrorCode::kInfeasible);
  EXPECT_EQ(MlaPageBytes({.block = 16, .record_bytes_per_token = kMax64 / 2}),
            kMax64);
  EXPECT_EQ(RoundUp(5, kMax64), kMax64);
  EXPECT_EQ(RoundUp(kMax64 - 1, std::uint64_t{1} << 63), kMax64);
}

TEST(PlannerMisuseTest, BlocksBeyond32BitsAreRefused) {
  const ModelSpec full{.name = "full",
                       .layers = {{.num_kv_heads = 1, .head_size = 8}}};
  Result<Plan> sharded = PlanCapacity(
      full, {16, 16, 0},
      {.dcp = 1u << 31, .budget_bytes = 1u << 30, .context_tokens = 4096});
  ASSERT_FALSE(sharded);
  EXPECT_THAT(sharded.error().message,
              HasSubstr("target block 16 x dcp 2147483648 = 34359738368 "
                        "tokens exceeds 2^32 - 1"));
  // The coupled rule would grow a 1 B/token attention block to 2^46 tokens.
  const ModelSpec coupled{
      .name = "coupled",
      .layers = {{.num_kv_heads = 1, .head_size = 1, .dtype_bytes = 1},
                 {.kind = LayerKind::kRecurrent,
                  .state_bytes = std::uint64_t{1} << 50}}};
  Result<Plan> grown = PlanCapacity(coupled, {16, 16, 16}, kOptions);
  ASSERT_FALSE(grown);
  EXPECT_EQ(grown.error().code, ErrorCode::kInfeasible);
  EXPECT_THAT(grown.error().message,
              HasSubstr("attention block of 1125899906842624 tokens"));
  // Blocks of 65537 and 65539 tokens: their lcm is above 2^32 - 1.
  const ModelSpec split{
      .name = "split",
      .layers = {{.num_kv_heads = 1, .head_size = 8},
                 {.kind = LayerKind::kRecurrent, .state_bytes = 64}},
      .layout = Layout::kSplit};
  Result<Plan> coprime = PlanCapacity(split, {65537, 65539, 1}, kOptions);
  ASSERT_FALSE(coprime);
  EXPECT_THAT(coprime.error().message, HasSubstr("least common multiple"));
}

TEST(PlannerMisuseTest, FormulasDoNotWrapOrDivideByZero) {
  // No attention bytes: nothing to grow (it divided by zero).
  EXPECT_EQ(CoupledAttentionBlock({.block = 32, .state_bytes = 100}), 32u);
  // ceil((2^32 - 1) / 2) groups (the sum wrapped to 0).
  EXPECT_EQ(UniformGroupCounts({0xffffffffu, 2}).front(), 2147483648u);
  EXPECT_THROW(BlocksPerRequest({.block = 0, .context_tokens = 16}),
               UsageError);
}

TEST(PlannerMisuseTest, ContextBeyondTheTokensPerRequestLimitIsRefused) {
  const ModelSpec full{.name = "full",
                       .layers = {{.num_kv_heads = 1, .head_size = 8}}};
  Result<Plan> plan = PlanCapacity(
      full, {16, 16, 16},
      {.budget_bytes = 1u << 30, .context_tokens = kMaxTokensPerRequest + 1});
  ASSERT_FALSE(plan);
  EXPECT_THAT(plan.error().message,
              HasSubstr("context 16777217 tokens exceeds the limit of 16777216 "
                        "tokens per request"));
}

}  // namespace
}  // namespace hkv
