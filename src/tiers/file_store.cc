#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include "hkv/object_store.h"
#include "tiers/posix_io.h"
#include "tiers/recency_map.h"

namespace hkv {
namespace {

using internal::UniqueFd;

// Object names hold no '.', so no temporary name is ever an object's.
constexpr std::string_view kTempPrefix = ".tmp-";

// Unique among this process's writers (pid + a process-wide counter); the
// O_EXCL open guards against another process reusing the pid.
std::string NextTempName() {
  static std::atomic<std::uint64_t> counter{0};
  return std::string(kTempPrefix) + std::to_string(::getpid()) + "-" +
         std::to_string(counter.fetch_add(1));
}

struct FoundFile {
  std::string name;
  std::uint64_t size = 0;
  timespec mtime{};
};

bool OlderThan(const FoundFile& a, const FoundFile& b) {
  return std::tie(a.mtime.tv_sec, a.mtime.tv_nsec, a.name) <
         std::tie(b.mtime.tv_sec, b.mtime.tv_nsec, b.name);
}

// The objects in the directory, oldest modification first, having removed
// the temporary files of writers killed before their rename (best effort:
// one that stays is never listed or read anyway).
Result<std::vector<FoundFile>> ScanDirectory(int dir_fd,
                                             const std::string& path) {
  std::vector<FoundFile> found;
  int stat_error = 0;
  const int read_error =
      internal::ReadDirectory(dir_fd, [&](const char* name, unsigned char) {
        if (std::string_view(name).starts_with(kTempPrefix)) {
          ::unlinkat(dir_fd, name, 0);
          return true;
        }
        if (!ValidObjectName(name)) return true;
        struct stat st {};
        if (::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
          stat_error = errno == ENOENT ? 0 : errno;  // ENOENT: just removed
          return stat_error == 0;
        }
        if (S_ISREG(st.st_mode)) {
          found.push_back(
              {name, static_cast<std::uint64_t>(st.st_size), st.st_mtim});
        }
        return true;
      });
  if (const int error = read_error != 0 ? read_error : stat_error) {
    return Fail(ErrorCode::kIoError, "cannot read directory " + path + ": " +
                                         internal::ErrnoText(error));
  }
  std::sort(found.begin(), found.end(), OlderThan);
  return found;
}

class FileStore final : public ObjectStore {
 public:
  FileStore(const FileStoreOptions& options, UniqueFd dir)
      : options_(options), dir_(std::move(dir)) {}

  // Takes over the files found at open (oldest first), removing the oldest
  // while they exceed the capacity. A file larger than the capacity can
  // never be read (Get refuses it), so it is removed alone (counted as
  // evicted) instead of pushing every object out.
  void Adopt(const std::vector<FoundFile>& found) {
    for (const FoundFile& file : found) {
      if (file.size > options_.capacity_bytes) {
        RemoveUnreadable(file.name, file.size);
        continue;
      }
      files_.Put(file.name, file.size);
      bytes_held_ += file.size;
    }
    while (bytes_held_ > options_.capacity_bytes) EvictOldest();
  }

  std::string_view kind() const override { return "file"; }

  StoreStatus Put(std::string_view name, std::string_view object) override {
    if (!ValidObjectName(name) || object.size() > options_.capacity_bytes) {
      return Failed();
    }
    const std::optional<std::string> temp = WriteTemp(object);
    if (!temp) return Failed();
    const std::string path(name);
    if (::renameat(dir_.get(), temp->c_str(), dir_.get(), path.c_str()) != 0) {
      ::unlinkat(dir_.get(), temp->c_str(), 0);
      return Failed();
    }
    // The rename is done and cannot be undone: account for the new object
    // even when the directory's fsync fails (it is then not known durable).
    Account(name, object.size());
    if (options_.fsync == FsyncPolicy::kObject &&
        internal::Fsync(dir_.get()) != 0) {
      return Failed();
    }
    ++counters_.objects_put;
    counters_.bytes_put += object.size();
    return StoreStatus::kOk;
  }

  ObjectRead Get(std::string_view name) override {
    if (!ValidObjectName(name)) return {.status = Failed()};
    const std::string path(name);
    // Not a link, not a FIFO (which would block): only a regular file, of
    // at most the capacity, is read.
    UniqueFd fd(internal::OpenAt(dir_.get(), path.c_str(),
                                 O_RDONLY | O_NOFOLLOW | O_NONBLOCK));
    if (!fd.valid()) {
      if (errno != ENOENT) return {.status = Failed()};
      Forget(name);  // removed by someone else
      return {.status = StoreStatus::kAbsent};
    }
    struct stat st {};
    ObjectRead read{.status = StoreStatus::kOk};
    if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) &&
        static_cast<std::uint64_t>(st.st_size) > options_.capacity_bytes) {
      // Put there by another writer; it can never be read: gone.
      Forget(name);
      RemoveUnreadable(path, static_cast<std::uint64_t>(st.st_size));
      return {.status = StoreStatus::kAbsent};
    }
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
        internal::ReadAll(fd.get(), static_cast<std::size_t>(st.st_size),
                          read.bytes) != 0) {
      return {.status = Failed()};
    }
    ++counters_.objects_read;
    counters_.bytes_read += read.bytes.size();
    return read;
  }

  StoreStatus Erase(std::string_view name) override {
    if (!ValidObjectName(name)) return Failed();
    const std::string path(name);
    if (::unlinkat(dir_.get(), path.c_str(), 0) != 0 && errno != ENOENT) {
      return Failed();
    }
    Forget(name);
    return StoreStatus::kOk;
  }

  Result<std::vector<std::string>> List(std::string_view prefix,
                                        std::size_t limit) override {
    std::vector<std::string> names;
    const int error = internal::ReadDirectory(
        dir_.get(), [&](const char* name, unsigned char type) {
          if (names.size() == limit) return false;
          const std::string_view view(name);
          // Only what Get could read: regular files (DT_UNKNOWN: the file
          // system does not say; Get checks).
          if ((type == DT_REG || type == DT_UNKNOWN) && ValidObjectName(view) &&
              view.starts_with(prefix)) {
            names.emplace_back(view);
          }
          return true;
        });
    if (error != 0) {
      return Fail(ErrorCode::kIoError, "cannot list directory " +
                                           options_.directory + ": " +
                                           internal::ErrnoText(error));
    }
    return names;
  }

  StoreCounters counters() const override { return counters_; }
  std::uint64_t bytes_held() const override { return bytes_held_; }

 private:
  StoreStatus Failed() {
    ++counters_.errors;
    return StoreStatus::kError;
  }

  // Writes `object` to a new temporary file (synced under kObject) and
  // returns its name; std::nullopt, with nothing left behind, on failure.
  std::optional<std::string> WriteTemp(std::string_view object) {
    constexpr int kAttempts = 16;
    std::string temp;
    int raw_fd = -1;
    for (int attempt = 0; raw_fd < 0; ++attempt) {
      temp = NextTempName();
      raw_fd = internal::OpenAt(dir_.get(), temp.c_str(),
                                O_WRONLY | O_CREAT | O_EXCL, 0644);
      if (raw_fd < 0 && (errno != EEXIST || attempt + 1 == kAttempts)) {
        return std::nullopt;
      }
    }
    UniqueFd fd(raw_fd);
    int error = internal::WriteAll(fd.get(), object);
    if (error == 0 && options_.fsync == FsyncPolicy::kObject) {
      error = internal::Fsync(fd.get());
    }
    const int close_error = fd.Close();  // NFS may report write errors here
    if (error != 0 || close_error != 0) {
      ::unlinkat(dir_.get(), temp.c_str(), 0);
      return std::nullopt;
    }
    return temp;
  }

  // Records `name` as the newest object, of `size` bytes, removing the
  // oldest others while the store would exceed its capacity. The disk holds
  // up to one object more than the capacity between the rename and here.
  void Account(std::string_view name, std::uint64_t size) {
    Forget(name);
    while (bytes_held_ + size > options_.capacity_bytes) EvictOldest();
    files_.Put(name, size);
    bytes_held_ += size;
  }

  void Forget(std::string_view name) {
    if (const std::uint64_t* size = files_.Find(name)) {
      bytes_held_ -= *size;
      files_.Erase(name);
    }
  }

  // Removes a file too large to read, counted as evicted.
  void RemoveUnreadable(const std::string& name, std::uint64_t size) {
    ::unlinkat(dir_.get(), name.c_str(), 0);
    ++counters_.evicted_objects;
    counters_.evicted_bytes += size;
  }

  // REQUIRES: files_ is not empty. A file that cannot be removed is no
  // longer counted either way.
  void EvictOldest() {
    ::unlinkat(dir_.get(), files_.oldest_name().c_str(), 0);
    ++counters_.evicted_objects;
    counters_.evicted_bytes += files_.oldest_value();
    bytes_held_ -= files_.oldest_value();
    files_.PopOldest();
  }

  const FileStoreOptions options_;
  const UniqueFd dir_;  // the directory, for the *at calls
  // The objects this store knows of, oldest first (by mtime at open, then
  // by Put); bytes_held_ is the sum of their sizes, <= the capacity.
  internal::RecencyMap<std::uint64_t> files_;
  std::uint64_t bytes_held_ = 0;
  StoreCounters counters_;
};

}  // namespace

Result<std::unique_ptr<ObjectStore>> OpenFileStore(
    const FileStoreOptions& options) {
  const std::string& path = options.directory;
  if (path.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "file store: no directory given");
  }
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) {
    return Fail(ErrorCode::kIoError,
                "cannot create directory " + path + ": " + ec.message());
  }
  UniqueFd dir(
      internal::OpenAt(AT_FDCWD, path.c_str(), O_RDONLY | O_DIRECTORY));
  if (!dir.valid()) {
    const int error = errno;
    return Fail(ErrorCode::kIoError, "cannot open directory " + path + ": " +
                                         internal::ErrnoText(error));
  }
  Result<std::vector<FoundFile>> found = ScanDirectory(dir.get(), path);
  if (!found) return tl::unexpected<Error>(std::move(found.error()));
  auto store = std::make_unique<FileStore>(options, std::move(dir));
  store->Adopt(*found);
  return std::unique_ptr<ObjectStore>(std::move(store));
}

}  // namespace hkv
