// One hiredis connection to a Redis server, made lazily and remade after a
// failure: the plumbing under MakeRedisStore (hkv/object_store.h).
//
// An I/O or protocol error (a refused connection, a command past the
// timeout, a closed socket, a malformed reply) frees the connection; the
// next attempt waits until `reconnect_interval` has passed since that
// failure, and calls in between fail at once without touching the network.
// A server's error reply (NOAUTH, OOM, WRONGTYPE) is a reply like any other:
// the connection stays.
//
// Thread-compatible: one caller at a time. SIGPIPE is blocked in the calling
// thread while it writes, so a server that vanishes mid-write cannot kill
// the process.
//
// Example:
//   RedisConnection redis({.host = "127.0.0.1", .port = 6379});
//   const RedisArgs get[] = {{"GET", "hkv-0123"}};
//   if (std::optional<std::vector<RedisReply>> replies = redis.RoundTrip(get))
//     use((*replies)[0]->type);
#pragma once

#include <hiredis/hiredis.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "hkv/object_store.h"

namespace hkv::internal {

struct RedisReplyFree {
  void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
using RedisReply = std::unique_ptr<redisReply, RedisReplyFree>;

// A command's words, e.g. {"SET", name, bytes}; binary safe.
using RedisArgs = std::vector<std::string_view>;

class RedisConnection {
 public:
  explicit RedisConnection(RedisStoreOptions options);
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Sends `commands` in one round trip (pipelined) and returns one reply
  // each, in order. Returns std::nullopt after an I/O or protocol error (the
  // connection is dropped) or, without touching the network, while a failed
  // connection waits out reconnect_interval.
  // REQUIRES: `commands` is not empty.
  std::optional<std::vector<RedisReply>> RoundTrip(
      std::span<const RedisArgs> commands);

  // Connections made after the first one.
  std::uint64_t reconnects() const { return reconnects_; }

 private:
  struct ContextFree {
    void operator()(redisContext* context) const { redisFree(context); }
  };

  // The live connection, connecting if the interval allows; nullptr if none.
  redisContext* Connect();
  // Frees the connection after a failure and starts the interval.
  void Fail();
  // Queues `commands` and reads their replies; std::nullopt on an error.
  std::optional<std::vector<RedisReply>> Exchange(
      redisContext& context, std::span<const RedisArgs> commands);

  RedisStoreOptions options_;
  std::unique_ptr<redisContext, ContextFree> context_;  // null: not connected
  // Set by a failure: no connection attempt before it.
  std::optional<std::chrono::steady_clock::time_point> retry_at_;
  bool connected_once_ = false;
  std::uint64_t reconnects_ = 0;
};

}  // namespace hkv::internal
