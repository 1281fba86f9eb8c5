// MakeRedisStore: objects as Redis string values under their names, reached
// through one lazily made, automatically remade hiredis connection
// (tiers/redis_connection.h).
#include <hiredis/hiredis.h>

#include <algorithm>
#include <array>
#include <string>
#include <unordered_set>
#include <utility>

#include "hkv/object_store.h"
#include "tiers/redis_connection.h"

namespace hkv {
namespace {

using internal::RedisArgs;
using internal::RedisConnection;

// Far above any KV-cache object: a larger object is refused before it is
// sent, a larger reply after it is read (hiredis 0.14 buffers a reply whole
// before handing it over, so what it holds is what the server sent for the
// object asked for).
constexpr std::size_t kMaxObjectBytes = std::size_t{1} << 30;
// SCAN's COUNT: how many keys the server looks at per round trip.
constexpr std::string_view kScanCount = "512";
// How much of a server's error reply goes into an Error's message.
constexpr std::size_t kMaxMessageBytes = 200;

struct Item {
  std::string_view name;
  std::string_view bytes;
};

// Where a List is: SCAN's cursor ("0" at the start and the end) and the
// names found so far (SCAN may return a key twice).
struct ScanState {
  std::string cursor = "0";
  std::vector<std::string> names;
  std::unordered_set<std::string> seen;
};

bool IsString(const redisReply& reply) {
  return reply.type == REDIS_REPLY_STRING || reply.type == REDIS_REPLY_STATUS;
}

std::string_view Text(const redisReply& reply) {
  return {reply.str, reply.len};
}

ObjectRead ReadOf(const redisReply& reply) {
  if (reply.type == REDIS_REPLY_NIL) return {.status = StoreStatus::kAbsent};
  if (reply.type != REDIS_REPLY_STRING || reply.len > kMaxObjectBytes)
    return {.status = StoreStatus::kError};
  return {.status = StoreStatus::kOk, .bytes = std::string(Text(reply))};
}

class RedisStore final : public ObjectStore {
 public:
  explicit RedisStore(const RedisStoreOptions& options)
      : redis_(options),
        where_("redis " + options.host + ":" + std::to_string(options.port)) {}

  [[nodiscard]] std::string_view kind() const override { return "redis"; }

  StoreStatus Put(std::string_view name, std::string_view object) override {
    const std::array<Item, 1> item = {{{name, object}}};
    return SetAll(item)[0];
  }

  std::vector<StoreStatus> PutMany(
      std::span<const NamedObject> objects) override {
    std::vector<Item> items;
    items.reserve(objects.size());
    for (const NamedObject& object : objects)
      items.push_back({object.name, object.bytes});
    return SetAll(items);
  }

  ObjectRead Get(std::string_view name) override {
    const std::array<std::string_view, 1> one = {name};
    return std::move(GetAll(one)[0]);
  }

  std::vector<ObjectRead> GetMany(std::span<const std::string> names) override {
    const std::vector<std::string_view> views(names.begin(), names.end());
    return GetAll(views);
  }

  StoreStatus Erase(std::string_view name) override;
  [[nodiscard]] Result<std::vector<std::string>> List(
      std::string_view prefix, std::size_t limit) override;

  [[nodiscard]] StoreCounters counters() const override {
    StoreCounters counters = counters_;
    counters.reconnects = redis_.reconnects();
    return counters;
  }

  [[nodiscard]] std::uint64_t bytes_held() const override { return 0; }

 private:
  // One SET per item, pipelined; items with a bad name or size are not sent.
  std::vector<StoreStatus> SetAll(std::span<const Item> items);
  // One GET per name, pipelined; bad names are not sent.
  std::vector<ObjectRead> GetAll(std::span<const std::string_view> names);
  // One SCAN step: advances the cursor, adds up to `limit` names in all.
  Result<void> Scan(ScanState& state, std::string_view pattern,
                    std::size_t limit);
  StoreStatus Count(StoreStatus status) {
    if (status == StoreStatus::kError) ++counters_.errors;
    return status;
  }
  tl::unexpected<Error> IoError(std::string_view why) {
    ++counters_.errors;
    return Fail(ErrorCode::kIoError, where_ + ": " + std::string(why));
  }

  RedisConnection redis_;
  std::string where_;  // "redis HOST:PORT", for messages
  StoreCounters counters_;
};

std::vector<StoreStatus> RedisStore::SetAll(std::span<const Item> items) {
  std::vector<StoreStatus> statuses(items.size(), StoreStatus::kError);
  std::vector<RedisArgs> commands;
  std::vector<std::size_t> sent;  // the item of each command
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!ValidObjectName(items[i].name) ||
        items[i].bytes.size() > kMaxObjectBytes)
      continue;
    commands.push_back({"SET", items[i].name, items[i].bytes});
    sent.push_back(i);
  }
  if (!commands.empty()) {
    if (auto replies = redis_.RoundTrip(commands)) {
      for (std::size_t j = 0; j < sent.size(); ++j) {
        if ((*replies)[j]->type != REDIS_REPLY_STATUS) continue;
        statuses[sent[j]] = StoreStatus::kOk;
        ++counters_.objects_put;
        counters_.bytes_put += items[sent[j]].bytes.size();
      }
    }
  }
  for (StoreStatus status : statuses) Count(status);
  return statuses;
}

std::vector<ObjectRead> RedisStore::GetAll(
    std::span<const std::string_view> names) {
  std::vector<ObjectRead> reads(names.size(), {.status = StoreStatus::kError});
  std::vector<RedisArgs> commands;
  std::vector<std::size_t> sent;  // the name of each command
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!ValidObjectName(names[i])) continue;
    commands.push_back({"GET", names[i]});
    sent.push_back(i);
  }
  std::vector<RedisArgs> removals;  // values of another type: not objects
  if (!commands.empty()) {
    if (auto replies = redis_.RoundTrip(commands)) {
      for (std::size_t j = 0; j < sent.size(); ++j) {
        const redisReply& reply = *(*replies)[j];
        reads[sent[j]] = ReadOf(reply);
        const bool wrong_type = reply.type == REDIS_REPLY_ERROR &&
                                Text(reply).starts_with("WRONGTYPE");
        const bool too_large =
            reply.type == REDIS_REPLY_STRING && reply.len > kMaxObjectBytes;
        if (wrong_type || too_large) {
          removals.push_back({"DEL", names[sent[j]]});
          reads[sent[j]].status = StoreStatus::kAbsent;
        }
      }
    }
  }
  // A list, a hash or a set, or a value over the object limit, under an
  // object name can never be read as one: it is removed (counted as
  // evicted), not failed on every later read.
  if (!removals.empty() && redis_.RoundTrip(removals))
    counters_.evicted_objects += removals.size();
  for (const ObjectRead& read : reads) {
    if (Count(read.status) != StoreStatus::kOk) continue;
    ++counters_.objects_read;
    counters_.bytes_read += read.bytes.size();
  }
  return reads;
}

StoreStatus RedisStore::Erase(std::string_view name) {
  if (!ValidObjectName(name)) return Count(StoreStatus::kError);
  const std::array<RedisArgs, 1> del = {{{"DEL", name}}};
  const auto replies = redis_.RoundTrip(del);
  const bool ok = replies && (*replies)[0]->type == REDIS_REPLY_INTEGER;
  return Count(ok ? StoreStatus::kOk : StoreStatus::kError);
}

Result<std::vector<std::string>> RedisStore::List(std::string_view prefix,
                                                  std::size_t limit) {
  if (!prefix.empty() && !ValidObjectName(prefix)) {
    ++counters_.errors;
    return Fail(ErrorCode::kInvalidArgument,
                where_ + ": \"" + std::string(prefix.substr(0, 128)) +
                    "\" is not a name prefix ([0-9a-z_-], at most 128)");
  }
  // Names hold no glob characters ([0-9a-z_-]), so the prefix needs no
  // escaping in the pattern.
  const std::string pattern = std::string(prefix) + "*";
  ScanState state;
  while (state.names.size() < limit) {
    if (Result<void> step = Scan(state, pattern, limit); !step)
      return tl::unexpected(std::move(step.error()));
    if (state.cursor == "0") break;
  }
  return std::move(state.names);
}

Result<void> RedisStore::Scan(ScanState& state, std::string_view pattern,
                              std::size_t limit) {
  const std::array<RedisArgs, 1> scan = {
      {{"SCAN", state.cursor, "MATCH", pattern, "COUNT", kScanCount}}};
  const auto replies = redis_.RoundTrip(scan);
  if (!replies) return IoError("no answer to SCAN");
  const redisReply& reply = *(*replies)[0];
  if (reply.type == REDIS_REPLY_ERROR)
    return IoError(Text(reply).substr(0, kMaxMessageBytes));
  if (reply.type != REDIS_REPLY_ARRAY || reply.elements != 2 ||
      !IsString(*reply.element[0]) ||
      reply.element[1]->type != REDIS_REPLY_ARRAY)
    return IoError("a malformed answer to SCAN");
  state.cursor = std::string(Text(*reply.element[0]));
  const redisReply& keys = *reply.element[1];
  for (std::size_t i = 0; i < keys.elements && state.names.size() < limit;
       ++i) {
    // Keys that are not object names are some other program's: skipped.
    if (!IsString(*keys.element[i])) continue;
    std::string name(Text(*keys.element[i]));
    if (ValidObjectName(name) && state.seen.insert(name).second)
      state.names.push_back(std::move(name));
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<ObjectStore>> MakeRedisStore(
    const RedisStoreOptions& options) {
  if (options.host.empty())
    return Fail(ErrorCode::kInvalidArgument, "redis store: the host is empty");
  if (options.port == 0)
    return Fail(ErrorCode::kInvalidArgument, "redis store: port 0");
  if (options.timeout.count() <= 0)
    return Fail(ErrorCode::kInvalidArgument,
                "redis store: the timeout must be positive (0 waits forever)");
  if (options.reconnect_interval.count() < 0)
    return Fail(ErrorCode::kInvalidArgument,
                "redis store: the reconnect interval is negative");
  return std::unique_ptr<ObjectStore>(std::make_unique<RedisStore>(options));
}

}  // namespace hkv
