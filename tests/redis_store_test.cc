// MakeRedisStore against a redis-server of the test's own (redis_server.h):
// what each call answers, and how the store rides out a killed, restarted,
// refusing, hung or absent server.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "hkv/object_store.h"
#include "redis_server.h"

namespace hkv {
namespace {

using std::chrono::milliseconds;
using ::testing::Each;
using ::testing::ElementsAreArray;
using testing::FreePort;
using testing::RedisServer;
using testing::SilentListener;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAreArray;

constexpr milliseconds kTimeout{100};
constexpr milliseconds kInterval{50};
// Slack over a bound for a loaded test machine.
constexpr milliseconds kSlack{250};

std::unique_ptr<ObjectStore> OpenStore(std::uint16_t port,
                                       milliseconds interval = kInterval) {
  Result<std::unique_ptr<ObjectStore>> store = MakeRedisStore(
      {.port = port, .timeout = kTimeout, .reconnect_interval = interval});
  EXPECT_TRUE(store.has_value()) << store.error().message;
  return store ? std::move(*store) : nullptr;
}

// How long `call` took.
template <typename Call>
milliseconds Timed(Call&& call) {
  const auto start = std::chrono::steady_clock::now();
  call();
  return std::chrono::duration_cast<milliseconds>(
      std::chrono::steady_clock::now() - start);
}

std::string Bytes(std::size_t size, unsigned seed) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i)
    bytes[i] = static_cast<char>((i * 31 + seed) % 256);
  return bytes;
}

std::vector<NamedObject> Objects(std::string_view prefix, std::size_t count,
                                 std::size_t size) {
  std::vector<NamedObject> objects;
  for (std::size_t i = 0; i < count; ++i)
    objects.push_back({std::string(prefix) + std::to_string(i),
                       Bytes(size + i, static_cast<unsigned>(i))});
  return objects;
}

class RedisStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start());
    store_ = OpenStore(server_.port());
    ASSERT_NE(store_, nullptr);
  }

  ObjectRead Get(std::string_view name) { return store_->Get(name); }
  StoreStatus Put(std::string_view name, std::string_view bytes) {
    return store_->Put(name, bytes);
  }
  void WaitOutInterval() {
    std::this_thread::sleep_for(kInterval + milliseconds(10));
  }

  RedisServer server_;
  std::unique_ptr<ObjectStore> store_;
};

TEST(RedisStoreOptionsTest, RefusesAnEmptyHostPortZeroAndNoTimeout) {
  EXPECT_EQ(MakeRedisStore({.host = ""}).error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(MakeRedisStore({.port = 0}).error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(MakeRedisStore({.timeout = milliseconds(0)}).error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(
      MakeRedisStore({.reconnect_interval = milliseconds(-1)}).error().code,
      ErrorCode::kInvalidArgument);
  // Connecting is lazy: an unreachable server is no error yet.
  EXPECT_TRUE(MakeRedisStore({.port = FreePort()}).has_value());
}

TEST(RedisStoreNamesTest, RefusesBadNamesWithoutTouchingTheNetwork) {
  SilentListener listener;
  ASSERT_NE(listener.port(), 0);
  std::unique_ptr<ObjectStore> store = OpenStore(listener.port());
  ASSERT_NE(store, nullptr);
  const std::string too_long(129, 'a');
  for (std::string_view name : {"Upper", "a/b", "a b", "a:b", "a*"}) {
    EXPECT_EQ(store->Put(name, "x"), StoreStatus::kError) << name;
    EXPECT_EQ(store->Get(name).status, StoreStatus::kError) << name;
    EXPECT_EQ(store->Erase(name), StoreStatus::kError) << name;
  }
  EXPECT_EQ(store->Put(too_long, "x"), StoreStatus::kError);
  EXPECT_THAT(store->PutMany(std::vector<NamedObject>{{"Bad", "x"}}),
              Each(StoreStatus::kError));
  EXPECT_EQ(store->GetMany(std::vector<std::string>{"Bad"})[0].status,
            StoreStatus::kError);
  EXPECT_EQ(store->List("hkv-*", 10).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(store->counters().errors, 5u * 3 + 4);
  EXPECT_EQ(listener.TakeConnections(), 0);
}

TEST_F(RedisStoreTest, GetReturnsWhatPutStored) {
  EXPECT_EQ(store_->kind(), "redis");
  ASSERT_EQ(Put("hkv-a", "hello"), StoreStatus::kOk);
  EXPECT_EQ(Get("hkv-a").bytes, "hello");
  ASSERT_EQ(Put("hkv-a", "bye"), StoreStatus::kOk);
  const ObjectRead read = Get("hkv-a");
  EXPECT_EQ(read.status, StoreStatus::kOk);
  EXPECT_EQ(read.bytes, "bye");
  const StoreCounters counters = store_->counters();
  EXPECT_EQ(counters.objects_put, 2u);
  EXPECT_EQ(counters.bytes_put, 8u);
  EXPECT_EQ(counters.objects_read, 2u);
  EXPECT_EQ(counters.bytes_read, 8u);
  EXPECT_EQ(counters.errors, 0u);
  EXPECT_EQ(counters.reconnects, 0u);
  EXPECT_EQ(store_->bytes_held(), 0u);
}

TEST_F(RedisStoreTest, BytesAreBinarySafe) {
  const std::string every_byte = Bytes(256, 0) + std::string(3, '\0');
  const std::string mebibyte = Bytes(std::size_t{1} << 20, 7);
  ASSERT_EQ(Put("hkv-bytes", every_byte), StoreStatus::kOk);
  ASSERT_EQ(Put("hkv-mib", mebibyte), StoreStatus::kOk);
  ASSERT_EQ(Put("hkv-empty", ""), StoreStatus::kOk);
  EXPECT_EQ(Get("hkv-bytes").bytes, every_byte);
  EXPECT_EQ(Get("hkv-mib").bytes, mebibyte);
  const ObjectRead empty = Get("hkv-empty");
  EXPECT_EQ(empty.status, StoreStatus::kOk);
  EXPECT_EQ(empty.bytes, "");
}

TEST_F(RedisStoreTest, MissingAndErasedNamesAreAbsent) {
  EXPECT_EQ(Get("hkv-missing").status, StoreStatus::kAbsent);
  EXPECT_EQ(store_->Erase("hkv-missing"), StoreStatus::kOk);
  ASSERT_EQ(Put("hkv-gone", "x"), StoreStatus::kOk);
  EXPECT_EQ(store_->Erase("hkv-gone"), StoreStatus::kOk);
  EXPECT_EQ(Get("hkv-gone").status, StoreStatus::kAbsent);
  EXPECT_EQ(store_->counters().errors, 0u);
}

TEST_F(RedisStoreTest, AKeyOfAnotherTypeIsRemovedAsAbsentOnce) {
  ASSERT_EQ(server_.Send("RPUSH hkv-list x"), ":1");
  EXPECT_EQ(Get("hkv-list").status, StoreStatus::kAbsent);
  EXPECT_EQ(server_.Send("EXISTS hkv-list"), ":0");
  EXPECT_EQ(Get("hkv-list").status, StoreStatus::kAbsent);
  EXPECT_EQ(Put("hkv-next", "x"), StoreStatus::kOk);
  EXPECT_EQ(store_->counters().errors, 0u);
  EXPECT_EQ(store_->counters().evicted_objects, 1u);
  EXPECT_EQ(store_->counters().reconnects, 0u);
}

TEST_F(RedisStoreTest, PipelinedCallsAnswerAsSingleCalls) {
  std::vector<NamedObject> objects = Objects("hkv-many-", 40, 1000);
  objects.insert(objects.begin() + 20, {"Bad name", "x"});
  std::vector<StoreStatus> expected_puts(objects.size(), StoreStatus::kOk);
  expected_puts[20] = StoreStatus::kError;
  EXPECT_THAT(store_->PutMany(objects), ElementsAreArray(expected_puts));

  std::vector<std::string> names = {"hkv-absent"};
  for (const NamedObject& object : objects) names.push_back(object.name);
  const std::vector<ObjectRead> many = store_->GetMany(names);
  ASSERT_EQ(many.size(), names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    const ObjectRead single = Get(names[i]);
    EXPECT_EQ(many[i].status, single.status) << names[i];
    EXPECT_EQ(many[i].bytes, single.bytes) << names[i];
  }
  EXPECT_EQ(many[0].status, StoreStatus::kAbsent);
  EXPECT_EQ(many[1].bytes, objects[0].bytes);
  EXPECT_EQ(store_->counters().objects_put, 40u);
  EXPECT_EQ(store_->counters().errors, 3u);  // the bad name, thrice
}

TEST_F(RedisStoreTest, ListReturnsNamesWithThePrefixUpToTheLimit) {
  std::vector<std::string> expected;
  for (const NamedObject& object : Objects("hkv-a-", 30, 1)) {
    ASSERT_EQ(Put(object.name, object.bytes), StoreStatus::kOk);
    expected.push_back(object.name);
  }
  ASSERT_THAT(store_->PutMany(Objects("hkv-b-", 5, 1)), Each(StoreStatus::kOk));
  // Another program's keys, not object names: never listed.
  ASSERT_EQ(server_.Send("SET hkv-a-:other x"), "+OK");
  ASSERT_EQ(server_.Send("SET Foreign x"), "+OK");

  Result<std::vector<std::string>> all_a = store_->List("hkv-a-", 1000);
  ASSERT_TRUE(all_a.has_value()) << all_a.error().message;
  EXPECT_THAT(*all_a, UnorderedElementsAreArray(expected));
  Result<std::vector<std::string>> some = store_->List("hkv-a-", 7);
  ASSERT_TRUE(some.has_value());
  EXPECT_EQ(some->size(), 7u);
  EXPECT_THAT(*some, Each(StartsWith("hkv-a-")));
  std::sort(some->begin(), some->end());
  EXPECT_EQ(std::unique(some->begin(), some->end()), some->end());
  EXPECT_EQ(store_->List("", 1000).value().size(), 35u);
  EXPECT_TRUE(store_->List("hkv-a-", 0).value().empty());
  EXPECT_TRUE(store_->List("hkv-c-", 10).value().empty());
}

TEST_F(RedisStoreTest, AKilledServerTurnsCallsIntoQuickErrors) {
  const std::vector<NamedObject> before = Objects("hkv-before-", 10, 65536);
  for (const NamedObject& object : before)
    ASSERT_EQ(Put(object.name, object.bytes), StoreStatus::kOk);
  server_.Kill();
  const std::vector<NamedObject> big = Objects("hkv-big-", 4, 1 << 20);
  const std::vector<NamedObject> after = Objects("hkv-after-", 10, 65536);
  std::size_t failed = 0;
  const auto tally = [&failed](bool error) { failed += error ? 1u : 0u; };
  const milliseconds elapsed = Timed([&] {
    // Megabytes into a closed socket: EPIPE, and a SIGPIPE that must not
    // end the process.
    for (StoreStatus status : store_->PutMany(big))
      tally(status == StoreStatus::kError);
    for (const NamedObject& object : after)
      tally(Put(object.name, object.bytes) == StoreStatus::kError);
    tally(Get("hkv-before-0").status == StoreStatus::kError);
    tally(!store_->List("hkv-", 10).has_value());
  });
  EXPECT_EQ(failed, 4u + 10 + 1 + 1);
  EXPECT_LT(elapsed, kTimeout + kSlack);
  const StoreCounters counters = store_->counters();
  EXPECT_EQ(counters.errors, failed);
  EXPECT_EQ(counters.objects_put, before.size());
}

TEST_F(RedisStoreTest, ARestartedServerIsReconnectedToAfterTheInterval) {
  ASSERT_EQ(Put("hkv-old", "old"), StoreStatus::kOk);
  server_.Kill();
  EXPECT_EQ(Put("hkv-lost", "x"), StoreStatus::kError);
  ASSERT_TRUE(server_.Restart());
  WaitOutInterval();
  EXPECT_EQ(Put("hkv-new", "new"), StoreStatus::kOk);
  EXPECT_EQ(store_->counters().reconnects, 1u);
  // The server kept nothing: old names are absent, never wrong data.
  EXPECT_EQ(Get("hkv-old").status, StoreStatus::kAbsent);
  EXPECT_EQ(Get("hkv-lost").status, StoreStatus::kAbsent);
  EXPECT_EQ(Get("hkv-new").bytes, "new");
  EXPECT_EQ(store_->counters().errors, 1u);
}

TEST(RedisStoreFaultTest, AServerAnsweringErrorsKeepsTheConnection) {
  RedisServer server;
  ASSERT_TRUE(server.Start({"--requirepass", "secret"}));
  // No interval: a dropped connection would be remade, and counted, at once.
  std::unique_ptr<ObjectStore> store =
      OpenStore(server.port(), milliseconds(0));
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Put("hkv-a", "x"), StoreStatus::kError);
  EXPECT_EQ(store->Get("hkv-a").status, StoreStatus::kError);
  EXPECT_EQ(store->Erase("hkv-a"), StoreStatus::kError);
  EXPECT_THAT(store->PutMany(Objects("hkv-m-", 3, 10)),
              Each(StoreStatus::kError));
  const std::vector<std::string> names = {"hkv-m-0", "hkv-m-1", "hkv-m-2"};
  for (const ObjectRead& read : store->GetMany(names))
    EXPECT_EQ(read.status, StoreStatus::kError);
  const Result<std::vector<std::string>> list = store->List("hkv-", 10);
  ASSERT_FALSE(list.has_value());
  EXPECT_EQ(list.error().code, ErrorCode::kIoError);
  EXPECT_THAT(list.error().message, ::testing::HasSubstr("NOAUTH"));
  EXPECT_EQ(store->counters().errors, 3u + 3 + 3 + 1);
  EXPECT_EQ(store->counters().reconnects, 0u);
}

TEST(RedisStoreFaultTest, AHungServerTimesOutAndIsNotRetriedWithinTheInterval) {
  SilentListener listener;
  ASSERT_NE(listener.port(), 0);
  std::unique_ptr<ObjectStore> store =
      OpenStore(listener.port(), milliseconds(10'000));
  ASSERT_NE(store, nullptr);
  StoreStatus status = StoreStatus::kOk;
  const milliseconds waited = Timed([&] { status = store->Put("hkv-a", "x"); });
  EXPECT_EQ(status, StoreStatus::kError);
  EXPECT_GE(waited, kTimeout - milliseconds(5));
  EXPECT_LT(waited, kTimeout + kSlack);
  EXPECT_EQ(listener.TakeConnections(), 1);
  // Within the interval: an answer at once, and no connection attempt.
  const milliseconds gated = Timed([&] { status = store->Put("hkv-a", "x"); });
  EXPECT_EQ(status, StoreStatus::kError);
  EXPECT_LT(gated, milliseconds(20));
  EXPECT_EQ(listener.TakeConnections(), 0);
  EXPECT_EQ(store->counters().errors, 2u);
}

TEST(RedisStoreFaultTest, AnUnreachablePortFailsWithinTheTimeout) {
  std::unique_ptr<ObjectStore> store = OpenStore(FreePort());
  ASSERT_NE(store, nullptr);
  const milliseconds elapsed = Timed([&] {
    EXPECT_EQ(store->Put("hkv-a", "x"), StoreStatus::kError);
    EXPECT_EQ(store->Get("hkv-a").status, StoreStatus::kError);
    EXPECT_EQ(store->List("hkv-", 10).error().code, ErrorCode::kIoError);
  });
  EXPECT_LT(elapsed, kTimeout + kSlack);
  EXPECT_EQ(store->counters().errors, 3u);
  EXPECT_EQ(store->counters().reconnects, 0u);
}

}  // namespace
}  // namespace hkv
