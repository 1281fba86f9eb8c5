// The state snapshot behind the "refused calls change nothing" tests: equal
// for equal states, different after any call that changes what later calls
// observe.
#include "cache/state_snapshot.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace hkv::internal {
namespace {

using ::hkv::testing::Range;

CacheConfig Config() {
  return {.groups = {{.block_size = 4}},
          .num_blocks = 10,
          .keys = {.hash_unit = 2},
          .events = KvEventMode::kEnabled};
}

TEST(StateSnapshotTest, EqualStatesGiveEqualSnapshots) {
  CacheCore a(Config());
  CacheCore b(Config());
  EXPECT_EQ(StateSnapshot(a), StateSnapshot(b));
  for (CacheCore* core : {&a, &b}) {
    const Request r({.id = RequestId{3}}, Range(0, 10), core->key_scheme());
    ASSERT_TRUE(core->Allocate(r, {.num_new_tokens = 10}));
    core->Commit(r, 10);
  }
  EXPECT_EQ(StateSnapshot(a), StateSnapshot(b));
}

// Every mutating call of a scheduler step shows in the snapshot.
TEST(StateSnapshotTest, EveryMutatingCallChangesIt) {
  CacheCore core(Config());
  std::string last = StateSnapshot(core);
  const auto changed = [&] {
    std::string now = StateSnapshot(core);
    const bool differs = now != last;
    last = std::move(now);
    return differs;
  };
  const Request r0({.id = RequestId{0}}, Range(0, 7), core.key_scheme());
  ASSERT_TRUE(core.Allocate(r0, {.num_new_tokens = 7}));
  EXPECT_TRUE(changed()) << "allocate";
  core.Commit(r0, 7);
  EXPECT_TRUE(changed()) << "commit (keys, events)";
  EXPECT_FALSE(core.TakeEvents().empty());
  EXPECT_TRUE(changed()) << "events taken";
  core.Free(r0.id());
  EXPECT_TRUE(changed()) << "free";
  // A hit inside a block is copied on write: queued, taken, unpinned.
  const Request r1({.id = RequestId{1}}, Range(0, 9), core.key_scheme());
  const CacheHit hit = core.Lookup(r1);
  ASSERT_EQ(hit.num_tokens, 6u);
  EXPECT_FALSE(changed()) << "a lookup is pure";
  ASSERT_TRUE(core.Allocate(r1, {.num_new_tokens = 3, .hit = &hit}));
  EXPECT_TRUE(changed()) << "adopt";
  EXPECT_EQ(core.TakeCopies().size(), 1u);
  EXPECT_TRUE(changed()) << "copies taken";
  core.FinishStep();
  EXPECT_TRUE(changed()) << "pins released";
  EXPECT_EQ(core.TakeStats().requests, 2u);
  EXPECT_TRUE(changed()) << "stats taken";
}

// The free queue's order decides what is evicted next: it is part of the
// state even when the same blocks are free.
TEST(StateSnapshotTest, FreeQueueOrderCounts) {
  CacheCore a(Config());
  CacheCore b(Config());
  for (CacheCore* core : {&a, &b}) {
    for (std::uint64_t id : {1u, 2u}) {
      const Request r({.id = RequestId{id}}, Range(0, 4), core->key_scheme());
      ASSERT_TRUE(core->Allocate(r, {.num_new_tokens = 4}));
    }
  }
  a.Free(RequestId{1});
  a.Free(RequestId{2});
  b.Free(RequestId{2});
  b.Free(RequestId{1});
  EXPECT_NE(StateSnapshot(a), StateSnapshot(b));
}

}  // namespace
}  // namespace hkv::internal
