// The tier chain: write-through, reads from the first valid copy, refused
// objects counted and dropped, the directory relearned after a restart.
#include "hkv/tier_chain.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "redis_server.h"
#include "tier_test_util.h"

namespace hkv {
namespace {

using testing::ChainOf;

BlockHash KeyOf(std::uint8_t seed) {
  BlockHash key;
  key.bytes.fill(seed);
  return key;
}

ObjectGroup GroupAt(std::uint8_t seed) {
  return {
      .key = KeyOf(seed),
      .end_tokens = 256u * seed,
      .parts = {{.group = GroupId{0}, .bytes = "page " + std::to_string(seed)},
                {.group = GroupId{1}, .bytes = "state"}}};
}

std::size_t Defects(const TierCounters& c, ObjectDefect defect) {
  return c.defects[static_cast<std::size_t>(defect)];
}

struct TempDir {
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "hkv-chain-XXXXXX").string();
    path = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

TEST(TierChainTest, StoresThroughEveryTierAndLoadsTheGroup) {
  TierChain chain = ChainOf(MakeHostStore(1 << 20), MakeHostStore(1 << 20));
  const ObjectGroup group = GroupAt(1);
  EXPECT_EQ(chain.Store({&group, 1}), 1u);
  const KnownGroup* known = chain.Find(group.key);
  ASSERT_NE(known, nullptr);
  EXPECT_EQ(known->end_tokens, 256u);
  EXPECT_EQ(known->groups, (std::vector<GroupId>{GroupId{0}, GroupId{1}}));
  const auto loaded = chain.Load(std::vector<BlockHash>{group.key, KeyOf(2)});
  ASSERT_TRUE(loaded[0].has_value());
  EXPECT_EQ(*loaded[0], group);
  EXPECT_FALSE(loaded[1].has_value());
  const std::vector<TierCounters> c = chain.counters();
  EXPECT_EQ(c[0].groups_stored, 1u);
  EXPECT_EQ(c[1].groups_stored, 1u);
  EXPECT_EQ(c[0].groups_loaded, 1u);
  EXPECT_EQ(c[1].groups_loaded, 0u);         // the first tier answered
  EXPECT_EQ(c[0].absent + c[1].absent, 2u);  // KeyOf(2), in both
}

TEST(TierChainTest, KnownKeysListsTheDirectory) {
  TierChain chain = ChainOf(MakeHostStore(1 << 20));
  EXPECT_TRUE(chain.KnownKeys().empty());
  const std::vector<ObjectGroup> groups = {GroupAt(1), GroupAt(2)};
  EXPECT_EQ(chain.Store(groups), 2u);
  chain.Drop(KeyOf(1));
  EXPECT_EQ(chain.KnownKeys(), (std::vector<BlockHash>{KeyOf(2)}));
}

TEST(TierChainTest, AFlippedByteIsDroppedAndCounted) {
  std::unique_ptr<ObjectStore> host = MakeHostStore(1 << 20);
  ObjectStore* raw = host.get();
  TierChain chain = ChainOf(std::move(host));
  const ObjectGroup group = GroupAt(1);
  chain.Store({&group, 1});
  const std::string name = ObjectName(chain.namespace_digest(), group.key);
  std::string bytes = raw->Get(name).bytes;
  bytes[bytes.size() - 2] ^= 0x10;  // inside the last part
  ASSERT_EQ(raw->Put(name, bytes), StoreStatus::kOk);
  EXPECT_FALSE(chain.Load(std::vector<BlockHash>{group.key})[0].has_value());
  EXPECT_EQ(Defects(chain.counters()[0], ObjectDefect::kBadChecksum), 1u);
  EXPECT_EQ(raw->Get(name).status, StoreStatus::kAbsent);  // dropped
  EXPECT_EQ(chain.Find(group.key), nullptr);               // forgotten
}

TEST(TierChainTest, AnObjectOfTheWrongSizeIsACountedMiss) {
  std::unique_ptr<ObjectStore> host = MakeHostStore(1 << 20);
  ObjectStore* raw = host.get();
  TierChain chain = ChainOf(std::move(host));
  const ObjectGroup group = GroupAt(1);
  chain.Store({&group, 1});
  const std::string name = ObjectName(chain.namespace_digest(), group.key);
  const std::string bytes = raw->Get(name).bytes;
  ASSERT_EQ(raw->Put(name, bytes.substr(0, bytes.size() - 3)),
            StoreStatus::kOk);
  EXPECT_FALSE(chain.Load(std::vector<BlockHash>{group.key})[0].has_value());
  EXPECT_EQ(Defects(chain.counters()[0], ObjectDefect::kWrongSize), 1u);
}

// Two tenants' chains: an object of one under the other's name for the same
// key (a collision, or a store shared by mistake) is refused, not served.
TEST(TierChainTest, AKeyCollisionAcrossNamespacesIsACountedMiss) {
  std::unique_ptr<ObjectStore> store_b = MakeHostStore(1 << 20);
  ObjectStore* raw_b = store_b.get();
  TierChain a = ChainOf(MakeHostStore(1 << 20));
  std::vector<std::unique_ptr<ObjectStore>> stores;
  stores.push_back(std::move(store_b));
  TierChain b({.ns = {.model = "test-model",
                      .geometry = "test",
                      .salt_domain = "tenant-b"}},
              std::move(stores));
  const ObjectGroup group = GroupAt(1);
  const std::string bytes = EncodeObjectGroup(group, a.namespace_digest());
  ASSERT_EQ(raw_b->Put(ObjectName(b.namespace_digest(), group.key), bytes),
            StoreStatus::kOk);
  EXPECT_EQ(b.Refresh().value_or(99), 0u);  // refused on the header
  EXPECT_FALSE(b.Load(std::vector<BlockHash>{group.key})[0].has_value());
  EXPECT_GE(Defects(b.counters()[0], ObjectDefect::kWrongNamespace), 1u);
}

TEST(TierChainTest, ALowerTierHitIsCopiedIntoTheTiersAbove) {
  std::unique_ptr<ObjectStore> upper = MakeHostStore(1 << 20);
  std::unique_ptr<ObjectStore> lower = MakeHostStore(1 << 20);
  ObjectStore* raw_upper = upper.get();
  ObjectStore* raw_lower = lower.get();
  TierChain chain = ChainOf(std::move(upper), std::move(lower));
  const ObjectGroup group = GroupAt(4);
  const std::string name = ObjectName(chain.namespace_digest(), group.key);
  raw_lower->Put(name, EncodeObjectGroup(group, chain.namespace_digest()));
  EXPECT_EQ(chain.Refresh().value_or(0), 1u);
  ASSERT_NE(chain.Find(group.key), nullptr);
  EXPECT_EQ(chain.Load(std::vector<BlockHash>{group.key})[0], group);
  EXPECT_EQ(raw_upper->Get(name).status, StoreStatus::kOk);
}

TEST(TierChainTest, AFileTierIsRelearnedAfterARestart) {
  TempDir dir;
  const ObjectGroup group = GroupAt(2);
  {
    Result<std::unique_ptr<ObjectStore>> files =
        OpenFileStore({.directory = dir.path, .fsync = FsyncPolicy::kObject});
    ASSERT_TRUE(files.has_value());
    TierChain chain = ChainOf(std::move(*files));
    ASSERT_EQ(chain.Store({&group, 1}), 1u);
  }
  Result<std::unique_ptr<ObjectStore>> files =
      OpenFileStore({.directory = dir.path});
  ASSERT_TRUE(files.has_value());
  TierChain restarted = ChainOf(std::move(*files));
  EXPECT_EQ(restarted.Find(group.key), nullptr);
  EXPECT_EQ(restarted.Refresh().value_or(0), 1u);
  EXPECT_EQ(restarted.Load(std::vector<BlockHash>{group.key})[0], group);
}

TEST(TierChainTest, ARedisAnsweringErrorsIsCountedAndMissed) {
  hkv::testing::RedisServer server;
  ASSERT_TRUE(server.Start({"--requirepass", "secret"}));
  Result<std::unique_ptr<ObjectStore>> redis =
      MakeRedisStore({.port = server.port()});
  ASSERT_TRUE(redis.has_value());
  TierChain chain = ChainOf(std::move(*redis));
  const ObjectGroup group = GroupAt(3);
  EXPECT_EQ(chain.Store({&group, 1}), 0u);
  EXPECT_EQ(chain.Find(group.key), nullptr);
  EXPECT_FALSE(chain.Load(std::vector<BlockHash>{group.key})[0].has_value());
  EXPECT_FALSE(chain.Refresh().has_value());
  EXPECT_GE(chain.counters()[0].store_errors, 2u);
}

TEST(TierChainTest, TheDirectoryForgetsTheLeastRecentPastItsBound) {
  std::vector<std::unique_ptr<ObjectStore>> stores;
  stores.push_back(MakeHostStore(1 << 20));
  TierChain chain({.ns = {.model = "m", .geometry = "g", .salt_domain = ""},
                   .max_directory_entries = 2},
                  std::move(stores));
  const std::vector<ObjectGroup> groups = {GroupAt(1), GroupAt(2)};
  chain.Store(groups);
  chain.Load(std::vector<BlockHash>{KeyOf(1)});  // 1 is now the more recent
  const ObjectGroup third = GroupAt(3);
  chain.Store({&third, 1});
  EXPECT_NE(chain.Find(KeyOf(1)), nullptr);
  EXPECT_EQ(chain.Find(KeyOf(2)), nullptr);
  EXPECT_NE(chain.Find(KeyOf(3)), nullptr);
  EXPECT_EQ(chain.num_known_groups(), 2u);
}

TEST(TierChainTest, RefusesAnEmptyChain) {
  EXPECT_THROW(TierChain({}, {}), UsageError);
}

}  // namespace
}  // namespace hkv
