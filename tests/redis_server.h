// A redis-server of the test's own on 127.0.0.1 at a free port, for the
// Redis store's tests: started from PATH, keeping nothing on disk
// (--save "" --appendonly no), and always killed and reaped by the
// destructor. The server dies with the test process too (PR_SET_PDEATHSIG),
// so a crashed test leaves none running.
//
// Thread-compatible.
//
// Example:
//   RedisServer server;
//   ASSERT_TRUE(server.Start());
//   auto store = MakeRedisStore({.port = server.port()});
//   server.Kill();     // the store's calls now fail
//   ASSERT_TRUE(server.Restart());  // same port, empty
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hkv::testing {

// A port on 127.0.0.1 that nothing listened on a moment ago.
std::uint16_t FreePort();

// A socket listening on 127.0.0.1 that never accepts nor answers on its own:
// connections complete into its backlog, then hear nothing (a hung server).
class SilentListener {
 public:
  SilentListener();
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;
  ~SilentListener();

  [[nodiscard]] std::uint16_t port() const { return port_; }
  // Accepts and closes the connections waiting; returns how many there were.
  int TakeConnections();

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
};

class RedisServer {
 public:
  RedisServer() = default;
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  ~RedisServer();

  // Starts a server at a free port with `extra_args` added to its command
  // line (e.g. {"--requirepass", "secret"}) and waits, at most 5 s, until
  // it answers PING. Returns false, and fails the current test naming why,
  // when redis-server is not on PATH or does not come up.
  // REQUIRES: not running.
  bool Start(std::vector<std::string> extra_args = {});
  // Kills the server (SIGKILL) and reaps it; nothing if not running.
  void Kill();
  // Kills the server and starts a new one, empty, on the same port.
  bool Restart();
  // Sends one inline command (e.g. "RPUSH a-list x") and returns the first
  // line of the reply ("+OK", ":1", "-ERR ..."), or "" without one.
  [[nodiscard]] std::string Send(std::string_view command) const;

  [[nodiscard]] std::uint16_t port() const { return port_; }

 private:
  // Starts the server at port_ and waits for it; false if it exits first.
  bool Launch();
  // Whether the server answers PING, with PONG or an error.
  [[nodiscard]] bool Answers() const;

  std::string program_;  // redis-server's path
  std::vector<std::string> extra_args_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace hkv::testing
