// The host store: objects in memory, least recently read or written evicted
// first to stay within the capacity; refused calls change nothing. Also the
// name rule and the default PutMany/GetMany every store inherits.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <list>
#include <string>
#include <utility>
#include <vector>

#include "hkv/object_store.h"

namespace hkv {
namespace {

std::string Bytes(std::size_t size, char fill) {
  return std::string(size, fill);
}

std::vector<std::string> Listed(ObjectStore& store) {
  Result<std::vector<std::string>> names = store.List("", 1000);
  EXPECT_TRUE(names.has_value());
  if (!names) return {};
  std::sort(names->begin(), names->end());
  return *names;
}

StoreStatus StatusOfGet(ObjectStore& store, std::string_view name) {
  return store.Get(name).status;
}

TEST(HostStoreTest, NamesAreOneTo128OfDigitsLowercaseUnderscoreAndDash) {
  EXPECT_TRUE(ValidObjectName("0"));
  EXPECT_TRUE(ValidObjectName("hkv-0123_abcdefghijklmnopqrstuvwxyz-9"));
  EXPECT_TRUE(ValidObjectName(std::string(128, 'z')));
  EXPECT_FALSE(ValidObjectName(""));
  EXPECT_FALSE(ValidObjectName(std::string(129, 'z')));
  for (const char* name : {"Abc", "a b", "a.b", "a/b", ".tmp-1", "..", "a\n",
                           "caf\xc3\xa9", "a:b"}) {
    EXPECT_FALSE(ValidObjectName(name)) << name;
  }
}

TEST(HostStoreTest, RoundTripsAndCounts) {
  std::unique_ptr<ObjectStore> store = MakeHostStore(100);
  EXPECT_EQ(store->kind(), "host");
  const std::string object("\0bytes\xff", 7);
  EXPECT_EQ(store->Put("a", object), StoreStatus::kOk);
  const ObjectRead read = store->Get("a");
  EXPECT_EQ(read.status, StoreStatus::kOk);
  EXPECT_EQ(read.bytes, object);
  EXPECT_EQ(StatusOfGet(*store, "b"), StoreStatus::kAbsent);
  const StoreCounters counters = store->counters();
  EXPECT_EQ(counters.objects_put, 1u);
  EXPECT_EQ(counters.bytes_put, 7u);
  EXPECT_EQ(counters.objects_read, 1u);
  EXPECT_EQ(counters.bytes_read, 7u);
  EXPECT_EQ(counters.errors, 0u);  // an absent object is no error
  EXPECT_EQ(store->bytes_held(), 7u);
}

TEST(HostStoreTest, EvictsTheLeastRecentlyReadOrWrittenFirst) {
  std::unique_ptr<ObjectStore> store = MakeHostStore(10);
  ASSERT_EQ(store->Put("a", Bytes(4, 'a')), StoreStatus::kOk);
  ASSERT_EQ(store->Put("b", Bytes(4, 'b')), StoreStatus::kOk);
  ASSERT_EQ(StatusOfGet(*store, "a"), StoreStatus::kOk);  // b is now oldest
  ASSERT_EQ(store->Put("c", Bytes(4, 'c')), StoreStatus::kOk);
  EXPECT_EQ(Listed(*store), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(store->counters().evicted_objects, 1u);
  EXPECT_EQ(store->counters().evicted_bytes, 4u);
  EXPECT_EQ(store->bytes_held(), 8u);
  // a (read before c was written) goes next; one eviction makes room.
  ASSERT_EQ(store->Put("d", Bytes(6, 'd')), StoreStatus::kOk);
  EXPECT_EQ(Listed(*store), (std::vector<std::string>{"c", "d"}));
  EXPECT_EQ(store->counters().evicted_objects, 2u);
  EXPECT_EQ(store->counters().evicted_bytes, 8u);
  EXPECT_EQ(store->bytes_held(), 10u);
  // An object of exactly the capacity fits, alone.
  ASSERT_EQ(store->Put("e", Bytes(10, 'e')), StoreStatus::kOk);
  EXPECT_EQ(Listed(*store), (std::vector<std::string>{"e"}));
  EXPECT_EQ(store->counters().evicted_bytes, 18u);
}

TEST(HostStoreTest, RefusesOversizeObjectsAndBadNamesChangingNothing) {
  std::unique_ptr<ObjectStore> store = MakeHostStore(8);
  ASSERT_EQ(store->Put("a", Bytes(4, 'a')), StoreStatus::kOk);
  ASSERT_EQ(store->Put("b", Bytes(4, 'b')), StoreStatus::kOk);
  EXPECT_EQ(store->Put("c", Bytes(9, 'c')), StoreStatus::kError);
  EXPECT_EQ(store->Put("a", Bytes(9, 'x')), StoreStatus::kError);
  EXPECT_EQ(store->Put("Bad", "x"), StoreStatus::kError);
  EXPECT_EQ(store->Put(std::string(129, 'a'), "x"), StoreStatus::kError);
  EXPECT_EQ(StatusOfGet(*store, "a.b"), StoreStatus::kError);
  EXPECT_EQ(store->Erase(""), StoreStatus::kError);
  const StoreCounters counters = store->counters();
  EXPECT_EQ(counters.errors, 6u);
  EXPECT_EQ(counters.objects_put, 2u);
  EXPECT_EQ(counters.evicted_objects, 0u);
  EXPECT_EQ(store->bytes_held(), 8u);
  EXPECT_EQ(store->Get("a").bytes, Bytes(4, 'a'));
  EXPECT_EQ(store->Get("b").bytes, Bytes(4, 'b'));
}

TEST(HostStoreTest, ReplacingAnObjectFreesItsOldBytesAndMakesItNewest) {
  std::unique_ptr<ObjectStore> store = MakeHostStore(10);
  ASSERT_EQ(store->Put("a", Bytes(6, 'a')), StoreStatus::kOk);
  ASSERT_EQ(store->Put("b", Bytes(4, 'b')), StoreStatus::kOk);
  // 4 + 5 fits once the old 6 bytes are gone: no eviction.
  ASSERT_EQ(store->Put("a", Bytes(5, 'x')), StoreStatus::kOk);
  EXPECT_EQ(store->counters().evicted_objects, 0u);
  EXPECT_EQ(store->bytes_held(), 9u);
  EXPECT_EQ(store->Get("a").bytes, Bytes(5, 'x'));
  ASSERT_EQ(store->Put("b", Bytes(4, 'y')), StoreStatus::kOk);  // b newest
  ASSERT_EQ(store->Put("c", Bytes(2, 'c')), StoreStatus::kOk);
  EXPECT_EQ(Listed(*store), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(store->counters().evicted_bytes, 5u);
}

TEST(HostStoreTest, EraseFreesTheBytesAndIsOkWhenAbsent) {
  std::unique_ptr<ObjectStore> store = MakeHostStore(10);
  ASSERT_EQ(store->Put("a", Bytes(6, 'a')), StoreStatus::kOk);
  EXPECT_EQ(store->Erase("a"), StoreStatus::kOk);
  EXPECT_EQ(store->Erase("a"), StoreStatus::kOk);
  EXPECT_EQ(StatusOfGet(*store, "a"), StoreStatus::kAbsent);
  EXPECT_EQ(store->bytes_held(), 0u);
  EXPECT_EQ(store->counters().evicted_objects, 0u);
  EXPECT_EQ(store->counters().errors, 0u);
}

TEST(HostStoreTest, ListsByPrefixUpToTheLimit) {
  std::unique_ptr<ObjectStore> store = MakeHostStore(100);
  for (const char* name : {"hkv-1", "hkv-2", "hkv-3", "other"}) {
    ASSERT_EQ(store->Put(name, "x"), StoreStatus::kOk);
  }
  Result<std::vector<std::string>> all = store->List("hkv-", 10);
  ASSERT_TRUE(all.has_value());
  std::sort(all->begin(), all->end());
  EXPECT_EQ(*all, (std::vector<std::string>{"hkv-1", "hkv-2", "hkv-3"}));
  Result<std::vector<std::string>> two = store->List("hkv-", 2);
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->size(), 2u);
  EXPECT_TRUE(store->List("", 0)->empty());
}

TEST(HostStoreTest, PutManyAndGetManyAnswerOneStatusEachInOrder) {
  std::unique_ptr<ObjectStore> store = MakeHostStore(100);
  const std::vector<NamedObject> objects = {
      {"a", "1"}, {"Bad", "2"}, {"c", "3"}};
  EXPECT_EQ(store->PutMany(objects),
            (std::vector<StoreStatus>{StoreStatus::kOk, StoreStatus::kError,
                                      StoreStatus::kOk}));
  const std::vector<std::string> names = {"c", "b", "a"};
  const std::vector<ObjectRead> reads = store->GetMany(names);
  ASSERT_EQ(reads.size(), 3u);
  EXPECT_EQ(reads[0].status, StoreStatus::kOk);
  EXPECT_EQ(reads[0].bytes, "3");
  EXPECT_EQ(reads[1].status, StoreStatus::kAbsent);
  EXPECT_EQ(reads[2].bytes, "1");
}

// The reference: names and bytes, least recently used first.
class LruModel {
 public:
  explicit LruModel(std::size_t capacity) : capacity_(capacity) {}

  StoreStatus Put(const std::string& name, const std::string& bytes) {
    if (bytes.size() > capacity_) return StoreStatus::kError;
    Erase(name);
    while (held() + bytes.size() > capacity_) {
      entries_.pop_front();
      ++evicted_;
    }
    entries_.emplace_back(name, bytes);
    return StoreStatus::kOk;
  }
  ObjectRead Get(const std::string& name) {
    const auto it = Find(name);
    if (it == entries_.end()) return {};
    entries_.splice(entries_.end(), entries_, it);
    return {.status = StoreStatus::kOk, .bytes = it->second};
  }
  void Erase(const std::string& name) {
    if (const auto it = Find(name); it != entries_.end()) entries_.erase(it);
  }

  std::uint64_t held() const {
    std::uint64_t held = 0;
    for (const auto& entry : entries_) held += entry.second.size();
    return held;
  }
  std::uint64_t evicted() const { return evicted_; }
  std::vector<std::string> names() const {
    std::vector<std::string> names;
    for (const auto& entry : entries_) names.push_back(entry.first);
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  using Entries = std::list<std::pair<std::string, std::string>>;
  Entries::iterator Find(const std::string& name) {
    return std::find_if(entries_.begin(), entries_.end(),
                        [&](const auto& entry) { return entry.first == name; });
  }

  std::size_t capacity_;
  Entries entries_;
  std::uint64_t evicted_ = 0;
};

RC_GTEST_PROP(HostStoreTest, MatchesAnLruModel, ()) {
  constexpr std::size_t kCapacity = 12;
  std::unique_ptr<ObjectStore> store = MakeHostStore(kCapacity);
  LruModel model(kCapacity);
  const int steps = *rc::gen::inRange(1, 60);
  for (int step = 0; step < steps; ++step) {
    const std::string name(1, *rc::gen::inRange('a', 'e'));
    switch (*rc::gen::inRange(0, 3)) {
      case 0: {
        const auto size = *rc::gen::inRange<std::size_t>(0, kCapacity + 2);
        const std::string bytes(size, static_cast<char>('0' + step % 10));
        RC_ASSERT(store->Put(name, bytes) == model.Put(name, bytes));
        break;
      }
      case 1: {
        const ObjectRead read = store->Get(name);
        const ObjectRead expected = model.Get(name);
        RC_ASSERT(read.status == expected.status);
        RC_ASSERT(read.bytes == expected.bytes);
        break;
      }
      default:
        RC_ASSERT(store->Erase(name) == StoreStatus::kOk);
        model.Erase(name);
    }
    RC_ASSERT(store->bytes_held() == model.held());
    RC_ASSERT(store->counters().evicted_objects == model.evicted());
    RC_ASSERT(Listed(*store) == model.names());
  }
}

}  // namespace
}  // namespace hkv
