// Recurrent kernels that export the prompt's checkpoint from inside a chunk
// (spec §3.4.4 step 8, §3.4.5; vectors V-81 ... V-85).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace hkv {
namespace {

using ::hkv::testing::Concat;
using ::hkv::testing::Range;
using ::hkv::testing::Table;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

GroupSpec Exporting(std::uint32_t block, std::uint32_t speculative = 0) {
  return {.kind = GroupKind::kRecurrent,
          .block_size = block,
          .speculative_blocks = speculative,
          .checkpoint_blocks = 1};
}

class CheckpointExportTest : public ::testing::Test {
 protected:
  void Build(GroupSpec attention, std::uint32_t block, std::uint32_t unit,
             std::optional<std::uint32_t> retention = std::nullopt) {
    cache_ = std::make_unique<internal::CacheCore>(
        CacheConfig{.groups = {attention, Exporting(block)},
                    .num_blocks = 64,
                    .keys = {.hash_unit = unit},
                    .retention_interval = retention});
  }
  Request Make(std::uint64_t id, const std::vector<TokenId>& tokens) {
    return Request({.id = RequestId{id}}, tokens, cache_->key_scheme());
  }
  // Computes [done, done + n) of `r` in one step.
  NewBlocks Step(const Request& r, std::uint32_t done, std::uint32_t n) {
    std::optional<NewBlocks> placed =
        cache_->Allocate(r, {.num_computed_tokens = done, .num_new_tokens = n});
    EXPECT_TRUE(placed.has_value());
    cache_->Commit(r, done + n);
    cache_->FinishStep();
    return placed ? *placed : NewBlocks{};
  }
  // The position the recurrent group's block at `index` is keyed at (0:
  // none).
  std::uint32_t KeyedAt(const Request& r, std::uint32_t index) const {
    return cache_->pool().primary_num_tokens(Table(*cache_, r.id(), 1)[index]);
  }
  bool StateKeyed(const Request& r, std::uint32_t position) const {
    const std::uint32_t unit = r.key_scheme().hash_unit;
    return cache_->pool()
        .FindCached(
            {.hash = r.keys()[position / unit - 1], .group = GroupId{1}})
        .has_value();
  }

  std::unique_ptr<internal::CacheCore> cache_;
};

TEST_F(CheckpointExportTest, V81_StateAtTheCheckpointFromInsideTheChunk) {
  Build({.block_size = 16}, 32, 16);
  const Request r = Make(0, Range(0, 120));
  const NewBlocks placed = Step(r, 0, 120);
  const std::vector<BlockId> table = Table(*cache_, r.id(), 1);
  ASSERT_EQ(table.size(), 4u);
  EXPECT_EQ(table[0], kNullBlock);
  EXPECT_EQ(table[1], kNullBlock);
  EXPECT_THAT(placed.state_exports,
              ElementsAre(StateExport{
                  .group = GroupId{1}, .block = table[2], .position = 112}));
  EXPECT_EQ(KeyedAt(r, 2), 112u);
  EXPECT_FALSE(StateKeyed(r, 96));
  cache_->Free(r.id());
  EXPECT_EQ(cache_->Lookup(Make(1, Range(0, 120))).num_tokens, 112u);
}

TEST_F(CheckpointExportTest, V82_CoarseCheckpointOneBlockBelow) {
  for (const auto& [prompt, checkpoint] :
       {std::pair{120u, 96u}, {104u, 96u}, {96u, 64u}}) {
    Build({.block_size = 32}, 32, 32, 0);
    const Request r = Make(0, Range(0, prompt));
    const NewBlocks placed = Step(r, 0, prompt);
    ASSERT_EQ(placed.state_exports.size(), 1u) << prompt;
    EXPECT_EQ(placed.state_exports[0].position, checkpoint);
    EXPECT_TRUE(StateKeyed(r, checkpoint)) << prompt;
    cache_->Free(r.id());
    EXPECT_EQ(cache_->Lookup(Make(1, Range(0, prompt))).num_tokens, checkpoint)
        << prompt;
  }
}

TEST_F(CheckpointExportTest, V83_ExportedInTheLastChunk) {
  Build({.block_size = 32}, 32, 32, 0);
  const Request r = Make(0, Range(0, 240));
  EXPECT_THAT(Step(r, 0, 128).state_exports, IsEmpty());
  const NewBlocks last = Step(r, 128, 112);
  ASSERT_EQ(last.state_exports.size(), 1u);
  EXPECT_EQ(last.state_exports[0].position, 224u);
  cache_->Free(r.id());
  const Request follower = Make(1, Concat(Range(0, 240), Range(5000, 5040)));
  EXPECT_EQ(cache_->Lookup(follower).num_tokens, 224u);
}

// V-84: only the prompt's last chunk reserves the export (the reference
// also reserves one in earlier chunks under dense retention; hkv keys
// nothing there, so it takes no block for it).
TEST_F(CheckpointExportTest, V84_TheLastChunkReservesTheCheckpoint) {
  for (const std::optional<std::uint32_t> retention :
       {std::optional<std::uint32_t>{}, std::optional<std::uint32_t>{0}}) {
    Build({.block_size = 16}, 32, 16, retention);
    const Request r = Make(0, Range(0, 240));
    const NewBlocks first = Step(r, 0, 128);
    EXPECT_EQ(first.blocks[0].size() + first.blocks[1].size(), 128 / 16 + 1);
    EXPECT_THAT(first.state_exports, IsEmpty());
    const NewBlocks last = Step(r, 128, 112);
    EXPECT_EQ(last.blocks[1].size(), 2u);  // the export and the end state
    ASSERT_EQ(last.state_exports.size(), 1u);
    EXPECT_EQ(last.state_exports[0].position, 224u);
    EXPECT_TRUE(StateKeyed(r, 224));
  }
}

TEST_F(CheckpointExportTest, V85_EagleCheckpointOneUnitLower) {
  cache_ = std::make_unique<internal::CacheCore>(CacheConfig{
      .groups = {{.block_size = 32, .speculation = Speculation::kEagle},
                 Exporting(32, 3)},
      .num_blocks = 64,
      .keys = {.hash_unit = 32}});
  const Request r = Make(0, Range(0, 104));
  const NewBlocks placed = Step(r, 0, 104);
  ASSERT_EQ(placed.state_exports.size(), 1u);
  EXPECT_EQ(placed.state_exports[0].position, 64u);
  EXPECT_EQ(KeyedAt(r, 2), 64u);
  EXPECT_FALSE(StateKeyed(r, 96));
}

TEST(CheckpointExportConfigTest, OnlyAlignedRecurrentGroupsExportOne) {
  CacheConfig config{.groups = {{.block_size = 16, .checkpoint_blocks = 1}},
                     .num_blocks = 8,
                     .keys = {.hash_unit = 16}};
  Result<void> valid = config.Validate();
  ASSERT_FALSE(valid.has_value());
  EXPECT_THAT(
      valid.error().message,
      ::testing::HasSubstr("checkpoint_blocks needs a recurrent group"));
  config.groups[0] = Exporting(16);
  config.groups[0].checkpoint_blocks = 2;
  valid = config.Validate();
  ASSERT_FALSE(valid.has_value());
  EXPECT_THAT(valid.error().message, ::testing::HasSubstr("at most one"));
}

}  // namespace
}  // namespace hkv
