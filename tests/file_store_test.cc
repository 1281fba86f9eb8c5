// The file store: one file per object, written to a temporary name and
// renamed into place; what a killed writer or a full disk leaves behind;
// objects surviving a reopen; the capacity, oldest files removed first.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "hkv/object_store.h"

namespace hkv {
namespace {

namespace fs = std::filesystem;

class FileStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "hkv-file-store-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::unique_ptr<ObjectStore> Open(std::uint64_t capacity = std::uint64_t{1}
                                                             << 40,
                                    FsyncPolicy fsync = FsyncPolicy::kNone) {
    Result<std::unique_ptr<ObjectStore>> store = OpenFileStore(
        {.directory = dir_, .fsync = fsync, .capacity_bytes = capacity});
    EXPECT_TRUE(store.has_value()) << store.error().message;
    return store ? std::move(*store) : nullptr;
  }

  // Writes a file into the directory behind the store's back.
  void WriteRaw(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << bytes;
  }
  std::string ReadRaw(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  // Every entry of the directory, dot files included, sorted.
  std::vector<std::string> Entries() const {
    std::vector<std::string> names;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  // The store's listing, sorted.
  static std::vector<std::string> Listed(ObjectStore& store,
                                         std::string_view prefix = "") {
    Result<std::vector<std::string>> names = store.List(prefix, 1000);
    EXPECT_TRUE(names.has_value()) << names.error().message;
    if (!names) return {};
    std::sort(names->begin(), names->end());
    return *names;
  }

  std::string dir_;
};

using Names = std::vector<std::string>;

TEST_F(FileStoreTest, RoundTripsAnObjectAsOneFileOfThatName) {
  std::unique_ptr<ObjectStore> store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->kind(), "file");
  const std::string object("\0payload\xff", 9);
  ASSERT_EQ(store->Put("hkv-0a", object), StoreStatus::kOk);
  EXPECT_EQ(Entries(), Names{"hkv-0a"});  // no temporary file left
  EXPECT_EQ(ReadRaw("hkv-0a"), object);
  const ObjectRead read = store->Get("hkv-0a");
  EXPECT_EQ(read.status, StoreStatus::kOk);
  EXPECT_EQ(read.bytes, object);
  EXPECT_EQ(store->Get("absent").status, StoreStatus::kAbsent);
  EXPECT_EQ(store->bytes_held(), 9u);
  const StoreCounters counters = store->counters();
  EXPECT_EQ(counters.objects_put, 1u);
  EXPECT_EQ(counters.bytes_put, 9u);
  EXPECT_EQ(counters.objects_read, 1u);
  EXPECT_EQ(counters.bytes_read, 9u);
  EXPECT_EQ(counters.errors, 0u);
}

TEST_F(FileStoreTest, SyncedPutsReplaceAndReadBack) {
  std::unique_ptr<ObjectStore> store = Open(1000, FsyncPolicy::kObject);
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->Put("a", "first"), StoreStatus::kOk);
  ASSERT_EQ(store->Put("a", "second!"), StoreStatus::kOk);
  EXPECT_EQ(store->Get("a").bytes, "second!");
  EXPECT_EQ(store->bytes_held(), 7u);
  EXPECT_EQ(Entries(), Names{"a"});
}

TEST_F(FileStoreTest, ObjectsSurviveAReopen) {
  std::unique_ptr<ObjectStore> store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->Put("hkv-1", "one"), StoreStatus::kOk);
  ASSERT_EQ(store->Put("hkv-2", "two!"), StoreStatus::kOk);
  store.reset();
  std::unique_ptr<ObjectStore> reopened = Open();
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(Listed(*reopened), (Names{"hkv-1", "hkv-2"}));
  EXPECT_EQ(reopened->Get("hkv-1").bytes, "one");
  EXPECT_EQ(reopened->Get("hkv-2").bytes, "two!");
  EXPECT_EQ(reopened->bytes_held(), 7u);
}

TEST_F(FileStoreTest, OpenRemovesWhatAWriterKilledBeforeItsRenameLeft) {
  WriteRaw("a", "whole");
  WriteRaw(".tmp-4242-7", "half of a new");
  std::unique_ptr<ObjectStore> store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Entries(), Names{"a"});
  EXPECT_EQ(Listed(*store), Names{"a"});
  EXPECT_EQ(store->Get(".tmp-4242-7").status, StoreStatus::kError);
  EXPECT_EQ(store->Get("a").bytes, "whole");
  EXPECT_EQ(store->bytes_held(), 5u);
}

TEST_F(FileStoreTest, TruncatedOrGarbledFilesAreReturnedAsOnDisk) {
  std::unique_ptr<ObjectStore> store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->Put("a", std::string(100, 'a')), StoreStatus::kOk);
  ASSERT_EQ(store->Put("b", std::string(100, 'b')), StoreStatus::kOk);
  fs::resize_file(dir_ + "/a", 10);
  WriteRaw("b", "garbage");
  EXPECT_EQ(store->Get("a").bytes, std::string(10, 'a'));
  EXPECT_EQ(store->Get("b").bytes, "garbage");
}

TEST_F(FileStoreTest, AFullDiskFailsThePutAndKeepsTheOldObject) {
  std::unique_ptr<ObjectStore> store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->Put("a", "old"), StoreStatus::kOk);
  // Files may grow to 4 KiB: the write past it fails with EFBIG (SIGXFSZ
  // ignored). Nothing is checked until both are restored.
  rlimit old_limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  rlimit small = old_limit;
  small.rlim_cur = 4096;
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  const int set = ::setrlimit(RLIMIT_FSIZE, &small);
  const StoreStatus status = store->Put("a", std::string(64 << 10, 'n'));
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_EQ(set, 0);
  EXPECT_EQ(status, StoreStatus::kError);
  EXPECT_EQ(store->counters().errors, 1u);
  EXPECT_EQ(store->counters().objects_put, 1u);
  EXPECT_EQ(Entries(), Names{"a"});  // the temporary file is gone
  EXPECT_EQ(store->Get("a").bytes, "old");
  EXPECT_EQ(store->bytes_held(), 3u);
}

TEST_F(FileStoreTest, ADirectoryThatCannotBeMadeIsAnIoError) {
  WriteRaw("plain", "a regular file");
  const std::string below_a_file = dir_ + "/plain/store";
  Result<std::unique_ptr<ObjectStore>> store =
      OpenFileStore({.directory = below_a_file});
  ASSERT_FALSE(store.has_value());
  EXPECT_EQ(store.error().code, ErrorCode::kIoError);
  EXPECT_NE(store.error().message.find(below_a_file), std::string::npos)
      << store.error().message;
  EXPECT_NE(store.error().message.find("Not a directory"), std::string::npos)
      << store.error().message;
  Result<std::unique_ptr<ObjectStore>> on_a_file =
      OpenFileStore({.directory = dir_ + "/plain"});
  ASSERT_FALSE(on_a_file.has_value());
  EXPECT_EQ(on_a_file.error().code, ErrorCode::kIoError);
  EXPECT_EQ(OpenFileStore({.directory = ""}).error().code,
            ErrorCode::kInvalidArgument);
}

TEST_F(FileStoreTest, MissingParentsAreCreated) {
  Result<std::unique_ptr<ObjectStore>> store =
      OpenFileStore({.directory = dir_ + "/x/y/z"});
  ASSERT_TRUE(store.has_value()) << store.error().message;
  ASSERT_EQ((*store)->Put("a", "1"), StoreStatus::kOk);
  EXPECT_TRUE(fs::is_regular_file(dir_ + "/x/y/z/a"));
}

TEST_F(FileStoreTest, PastTheCapacityTheOldestFilesAreRemoved) {
  std::unique_ptr<ObjectStore> store = Open(10);
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->Put("a", "aaaa"), StoreStatus::kOk);
  ASSERT_EQ(store->Put("b", "bbbb"), StoreStatus::kOk);
  ASSERT_EQ(store->Get("a").status, StoreStatus::kOk);  // reads do not count
  ASSERT_EQ(store->Put("c", "cccc"), StoreStatus::kOk);
  EXPECT_EQ(Entries(), (Names{"b", "c"}));
  EXPECT_EQ(store->bytes_held(), 8u);
  EXPECT_EQ(store->counters().evicted_objects, 1u);
  EXPECT_EQ(store->counters().evicted_bytes, 4u);
  // Larger than the capacity: refused, nothing removed.
  EXPECT_EQ(store->Put("d", std::string(11, 'd')), StoreStatus::kError);
  EXPECT_EQ(Entries(), (Names{"b", "c"}));
  EXPECT_EQ(store->counters().errors, 1u);
  EXPECT_EQ(store->counters().evicted_objects, 1u);
}

// Sets a file's modification time to `seconds` after the epoch.
void SetMtime(const std::string& path, std::int64_t seconds) {
  const timespec times[2] = {{.tv_sec = seconds, .tv_nsec = 0},
                             {.tv_sec = seconds, .tv_nsec = 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST_F(FileStoreTest, FilesFoundAtOpenAreEvictedOldestModifiedFirst) {
  WriteRaw("aaa-new", "1234");
  WriteRaw("zzz-old", "5678");
  SetMtime(dir_ + "/aaa-new", 2'000'000'000);
  SetMtime(dir_ + "/zzz-old", 1'000'000'000);
  std::unique_ptr<ObjectStore> store = Open(10);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->bytes_held(), 8u);
  ASSERT_EQ(store->Put("c", "cccc"), StoreStatus::kOk);
  EXPECT_EQ(Entries(), (Names{"aaa-new", "c"}));
  store.reset();
  // Reopened with less room, the store removes the oldest to fit at once.
  SetMtime(dir_ + "/c", 1'500'000'000);
  store = Open(4);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Entries(), Names{"aaa-new"});
  EXPECT_EQ(store->counters().evicted_objects, 1u);
  EXPECT_EQ(store->bytes_held(), 4u);
}

TEST_F(FileStoreTest, AFileLargerThanTheCapacityIsRemovedAloneAtOpen) {
  // Forty objects and one file no read could take: opening keeps the
  // forty (it used to evict every one of them to make room for it).
  for (int i = 0; i < 40; ++i) WriteRaw("obj-" + std::to_string(i), "1234");
  WriteRaw("huge", std::string(1000, 'x'));
  std::unique_ptr<ObjectStore> store = Open(400);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Entries().size(), 40u);
  EXPECT_EQ(store->bytes_held(), 160u);
  EXPECT_EQ(store->counters().evicted_objects, 1u);
  EXPECT_EQ(store->counters().evicted_bytes, 1000u);
  EXPECT_EQ(store->Get("obj-7").bytes, "1234");
}

TEST_F(FileStoreTest, AFileGrownPastTheCapacityBehindItsBackIsAbsent) {
  std::unique_ptr<ObjectStore> store = Open(100);
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->Put("a", "123"), StoreStatus::kOk);
  ASSERT_EQ(store->Put("b", "456"), StoreStatus::kOk);
  WriteRaw("a", std::string(101, 'x'));
  EXPECT_EQ(store->Get("a").status, StoreStatus::kAbsent);
  EXPECT_EQ(Entries(), Names{"b"});
  EXPECT_EQ(store->bytes_held(), 3u);
  EXPECT_EQ(store->counters().errors, 0u);
}

TEST_F(FileStoreTest, ListNamesOnlyRegularFiles) {
  std::unique_ptr<ObjectStore> store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->Put("obj-a", "1"), StoreStatus::kOk);
  ASSERT_EQ(::mkfifo((dir_ + "/obj-fifo").c_str(), 0600), 0);
  fs::create_symlink(dir_ + "/obj-a", dir_ + "/obj-link");
  fs::create_directory(dir_ + "/obj-dir");
  // None of them could be read as an object, so none is listed (a refresh
  // would count an error for each, every time).
  EXPECT_EQ(Listed(*store, "obj-"), Names{"obj-a"});
  EXPECT_EQ(store->Get("obj-link").status, StoreStatus::kError);
}

TEST_F(FileStoreTest, EraseRemovesTheFileAndIsOkWhenAbsent) {
  std::unique_ptr<ObjectStore> store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->Put("a", "123"), StoreStatus::kOk);
  EXPECT_EQ(store->Erase("a"), StoreStatus::kOk);
  EXPECT_EQ(store->Erase("a"), StoreStatus::kOk);
  EXPECT_TRUE(Entries().empty());
  EXPECT_EQ(store->Get("a").status, StoreStatus::kAbsent);
  EXPECT_EQ(store->bytes_held(), 0u);
}

TEST_F(FileStoreTest, AFileRemovedBehindTheStoresBackIsAbsent) {
  std::unique_ptr<ObjectStore> store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->Put("a", "123"), StoreStatus::kOk);
  fs::remove(dir_ + "/a");
  EXPECT_EQ(store->Get("a").status, StoreStatus::kAbsent);
  EXPECT_EQ(store->bytes_held(), 0u);
  EXPECT_EQ(store->counters().errors, 0u);
}

TEST_F(FileStoreTest, ListSkipsDotFilesDirectoriesAndForeignNames) {
  std::unique_ptr<ObjectStore> store = Open();
  ASSERT_NE(store, nullptr);
  for (const char* name : {"hkv-1", "hkv-2", "other"}) {
    ASSERT_EQ(store->Put(name, "x"), StoreStatus::kOk);
  }
  WriteRaw(".hidden", "x");
  WriteRaw("UPPER", "x");
  fs::create_directory(dir_ + "/hkv-dir");
  EXPECT_EQ(Listed(*store), (Names{"hkv-1", "hkv-2", "other"}));
  EXPECT_EQ(Listed(*store, "hkv-"), (Names{"hkv-1", "hkv-2"}));
  EXPECT_EQ(store->List("hkv-", 1)->size(), 1u);
  EXPECT_TRUE(store->List("", 0)->empty());
}

TEST_F(FileStoreTest, NamesOutsideTheAlphabetAreRefused) {
  std::unique_ptr<ObjectStore> store = Open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Put("../escape", "x"), StoreStatus::kError);
  EXPECT_EQ(store->Put("a/b", "x"), StoreStatus::kError);
  EXPECT_EQ(store->Get("..").status, StoreStatus::kError);
  EXPECT_EQ(store->Erase("."), StoreStatus::kError);
  EXPECT_EQ(store->counters().errors, 4u);
  EXPECT_TRUE(Entries().empty());
  EXPECT_FALSE(fs::exists(fs::path(dir_).parent_path() / "escape"));
}

}  // namespace
}  // namespace hkv
