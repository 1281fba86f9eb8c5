// Where an offload tier keeps its objects: named byte strings in host
// memory, in a directory, or in a Redis server. A store knows nothing of what
// an object holds (hkv/object_group.h encodes and checks that); it promises
// only that a reader sees a whole object that was put, or none.
//
// Names are at most 128 characters of [0-9a-z_-] (what TierChain makes),
// safe as file names and Redis keys; a store refuses others (kError).
//
// Thread-compatible: one caller at a time per store.
//
// Example:
//   std::unique_ptr<ObjectStore> host = MakeHostStore(64 << 20);
//   host->Put("hkv-0123-abcd", bytes);
//   ObjectRead read = host->Get("hkv-0123-abcd");
//   if (read.status == StoreStatus::kOk) use(read.bytes);
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/result.h"

namespace hkv {

enum class StoreStatus {
  kOk,
  kAbsent,  // Get: no object of that name
  kError,   // the store failed (I/O, a full disk, a lost connection, a
            // refused name or size); nothing was changed by a failed Put
};

struct ObjectRead {
  StoreStatus status = StoreStatus::kAbsent;
  std::string bytes = {};  // the whole object when kOk
};

struct NamedObject {
  std::string name;
  std::string bytes;
};

// What a store did since it was made; plain counters.
struct StoreCounters {
  std::uint64_t objects_put = 0;
  std::uint64_t bytes_put = 0;
  std::uint64_t objects_read = 0;  // Get answered kOk
  std::uint64_t bytes_read = 0;
  std::uint64_t errors = 0;           // calls that answered kError
  std::uint64_t evicted_objects = 0;  // dropped to make room (LRU)
  std::uint64_t evicted_bytes = 0;
  std::uint64_t reconnects = 0;  // Redis: connections re-established
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;
  // "host", "file" or "redis".
  virtual std::string_view kind() const = 0;
  // Publishes `object` under `name`, replacing any: a reader sees the old
  // whole object or the new whole one, never a mix or a prefix. After
  // kError the old one is still there, except where the store cannot know:
  // a Redis SET sent before the connection failed, or a file renamed into
  // place before its directory's fsync failed (then the new whole one).
  virtual StoreStatus Put(std::string_view name, std::string_view object) = 0;
  // Several at once (one pipelined round trip on Redis); one status each,
  // in order.
  virtual std::vector<StoreStatus> PutMany(
      std::span<const NamedObject> objects);
  virtual ObjectRead Get(std::string_view name) = 0;
  virtual std::vector<ObjectRead> GetMany(std::span<const std::string> names);
  // kOk also when there was none.
  virtual StoreStatus Erase(std::string_view name) = 0;
  // The names held that start with `prefix`, at most `limit` of them (a
  // restart's rebuild, a shared store's scan); kIoError when the store
  // cannot answer.
  [[nodiscard]] virtual Result<std::vector<std::string>> List(
      std::string_view prefix, std::size_t limit) = 0;
  virtual StoreCounters counters() const = 0;
  // Bytes held; 0 when the store cannot say cheaply (Redis).
  virtual std::uint64_t bytes_held() const = 0;
};

// Whether `name` is one a store accepts (see above).
bool ValidObjectName(std::string_view name);

// Host memory bounded by `capacity_bytes`: least recently read or written
// objects are evicted (counted) to make room; an object larger than the
// capacity is refused (kError). Nothing survives the process.
std::unique_ptr<ObjectStore> MakeHostStore(std::uint64_t capacity_bytes);

enum class FsyncPolicy {
  kNone,    // rename only: a crash may lose recent objects, never tear one
  kObject,  // fsync the object before the rename and the directory after:
            // an object Put returned kOk for survives a crash
};

struct FileStoreOptions {
  std::string directory;  // created if missing
  FsyncPolicy fsync = FsyncPolicy::kNone;
  // Bytes the store may hold; past them the oldest written files are
  // removed (reads do not refresh them). An empty directory is
  // kInvalidArgument.
  std::uint64_t capacity_bytes = std::uint64_t{1} << 40;
};

// One file per object in `directory`, written to a temporary name and
// renamed into place, so a crash leaves a whole object or none; temporary
// files a killed writer left are removed on open. Objects survive a
// restart: open lists them. kIoError when the directory cannot be made or
// read.
[[nodiscard]] Result<std::unique_ptr<ObjectStore>> OpenFileStore(
    const FileStoreOptions& options);

struct RedisStoreOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  // Every command's limit; a store past it answers kError.
  std::chrono::milliseconds timeout{200};
  // After a failure, the least time before the next connection attempt
  // (calls in between answer kError at once).
  std::chrono::milliseconds reconnect_interval{500};
};

// A Redis server reached with hiredis; objects are string values. A lost
// server turns calls into kError (counted) and is re-connected to on a
// later call. Connects lazily: creating never fails for an unreachable
// server; kInvalidArgument for an empty host, port 0, a timeout of 0 or
// less (0 would wait forever) or a negative reconnect interval. A host
// name's DNS lookup is not bounded by the timeout: give an address.
[[nodiscard]] Result<std::unique_ptr<ObjectStore>> MakeRedisStore(
    const RedisStoreOptions& options);

}  // namespace hkv
