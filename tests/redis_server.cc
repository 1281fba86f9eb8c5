#include "redis_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

namespace hkv::testing {
namespace {

constexpr auto kStartLimit = std::chrono::seconds(5);
constexpr int kPortAttempts = 5;

// The first executable `name` in PATH's folders, or "".
std::string FindOnPath(std::string_view name) {
  const char* path = std::getenv("PATH");
  std::string_view rest = path == nullptr ? "/usr/bin:/bin" : path;
  while (!rest.empty()) {
    const std::size_t colon = std::min(rest.find(':'), rest.size());
    std::string candidate(rest.substr(0, colon));
    rest.remove_prefix(std::min(colon + 1, rest.size()));
    candidate += "/";
    candidate += name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

sockaddr_in Loopback(std::uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

// A socket closed when it goes out of scope.
class Socket {
 public:
  Socket() : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {}
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  [[nodiscard]] int fd() const { return fd_; }

 private:
  int fd_;
};

// The server's first reply line to `command` on a new connection, or "".
std::string Exchange(const Socket& socket, std::uint16_t port,
                     std::string_view command) {
  const timeval limit{.tv_sec = 0, .tv_usec = 200'000};
  setsockopt(socket.fd(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  setsockopt(socket.fd(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
  const sockaddr_in address = Loopback(port);
  if (connect(socket.fd(), reinterpret_cast<const sockaddr*>(&address),
              sizeof(address)) != 0)
    return "";
  const std::string line = std::string(command) + "\r\n";
  if (send(socket.fd(), line.data(), line.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(line.size()))
    return "";
  std::string reply;
  char byte = 0;
  while (reply.size() < 4096 && recv(socket.fd(), &byte, 1, 0) == 1) {
    if (byte == '\n') break;
    if (byte != '\r') reply += byte;
  }
  return reply;
}

}  // namespace

std::uint16_t FreePort() {
  const Socket socket;
  sockaddr_in address = Loopback(0);
  socklen_t size = sizeof(address);
  if (bind(socket.fd(), reinterpret_cast<const sockaddr*>(&address),
           sizeof(address)) != 0 ||
      getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&address), &size) !=
          0)
    return 0;
  return ntohs(address.sin_port);
}

SilentListener::SilentListener()
    : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) {
  sockaddr_in address = Loopback(0);
  socklen_t size = sizeof(address);
  if (bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) ==
          0 &&
      listen(fd_, 16) == 0 &&
      getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size) == 0)
    port_ = ntohs(address.sin_port);
}

SilentListener::~SilentListener() {
  if (fd_ >= 0) close(fd_);
}

int SilentListener::TakeConnections() {
  int taken = 0;
  for (int fd; (fd = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) {
    close(fd);
    ++taken;
  }
  return taken;
}

RedisServer::~RedisServer() { Kill(); }

bool RedisServer::Start(std::vector<std::string> extra_args) {
  program_ = FindOnPath("redis-server");
  if (program_.empty()) {
    ADD_FAILURE() << "redis-server is not on PATH (Debian: apt-get install "
                     "redis-server); the Redis store tests need it";
    return false;
  }
  extra_args_ = std::move(extra_args);
  // Another process may take the free port before the server binds it.
  for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
    port_ = FreePort();
    if (port_ != 0 && Launch()) return true;
  }
  ADD_FAILURE() << program_ << " did not come up on 127.0.0.1 in "
                << kPortAttempts << " attempts";
  return false;
}

void RedisServer::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

bool RedisServer::Restart() {
  Kill();
  if (Launch()) return true;
  ADD_FAILURE() << program_ << " did not come up again on port " << port_;
  return false;
}

std::string RedisServer::Send(std::string_view command) const {
  return Exchange(Socket(), port_, command);
}

bool RedisServer::Launch() {
  std::vector<std::string> args = {program_,
                                   "--port",
                                   std::to_string(port_),
                                   "--bind",
                                   "127.0.0.1",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--daemonize",
                                   "no",
                                   "--loglevel",
                                   "warning"};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ == 0) {
    // Only async-signal-safe calls from here to exec.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(1);
    const int null = open("/dev/null", O_RDWR);
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);
    closefrom(STDERR_FILENO + 1);
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (pid_ < 0) return false;
  const auto deadline = std::chrono::steady_clock::now() + kStartLimit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;  // exited: most likely the port was taken
      return false;
    }
    if (Answers()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  Kill();
  return false;
}

bool RedisServer::Answers() const {
  const std::string reply = Send("PING");
  return !reply.empty() && (reply[0] == '+' || reply[0] == '-');
}

}  // namespace hkv::testing
