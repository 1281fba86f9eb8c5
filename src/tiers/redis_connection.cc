#include "tiers/redis_connection.h"

#include <pthread.h>
#include <sys/time.h>

#include <array>
#include <csignal>
#include <ctime>
#include <utility>

#include "check.h"

namespace hkv::internal {
namespace {

// The most words a command of the store has (SCAN c MATCH p COUNT n).
constexpr std::size_t kMaxArgs = 6;

timeval ToTimeval(std::chrono::milliseconds duration) {
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(duration);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(duration - seconds);
  return timeval{.tv_sec = static_cast<time_t>(seconds.count()),
                 .tv_usec = static_cast<suseconds_t>(micros.count())};
}

// Blocks SIGPIPE in this thread for its lifetime and discards one that a
// write to a closed socket raised meanwhile (what libpq does): hiredis
// writes with write(2), which cannot be told MSG_NOSIGNAL.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    pthread_sigmask(SIG_BLOCK, &Pipe(), &old_mask_);
    was_pending_ = Pending();
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;
  ~SigpipeBlock() {
    if (!was_pending_ && Pending()) {
      const timespec no_wait{};
      sigtimedwait(&Pipe(), nullptr, &no_wait);
    }
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }

 private:
  static const sigset_t& Pipe() {
    static const sigset_t pipe = [] {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, SIGPIPE);
      return set;
    }();
    return pipe;
  }
  static bool Pending() {
    sigset_t pending;
    sigpending(&pending);
    return sigismember(&pending, SIGPIPE) == 1;
  }

  sigset_t old_mask_{};
  bool was_pending_ = false;
};

// Queues one command; false when hiredis cannot (out of memory).
bool Append(redisContext& context, const RedisArgs& args) {
  HKV_DCHECK(!args.empty() && args.size() <= kMaxArgs);
  std::array<const char*, kMaxArgs> words{};
  std::array<std::size_t, kMaxArgs> lengths{};
  for (std::size_t i = 0; i < args.size(); ++i) {
    words[i] = args[i].data();
    lengths[i] = args[i].size();
  }
  return redisAppendCommandArgv(&context, static_cast<int>(args.size()),
                                words.data(), lengths.data()) == REDIS_OK;
}

}  // namespace

RedisConnection::RedisConnection(RedisStoreOptions options)
    : options_(std::move(options)) {}

std::optional<std::vector<RedisReply>> RedisConnection::RoundTrip(
    std::span<const RedisArgs> commands) {
  HKV_DCHECK(!commands.empty());
  redisContext* context = Connect();
  if (context == nullptr) return std::nullopt;
  std::optional<std::vector<RedisReply>> replies;
  {
    const SigpipeBlock block;
    replies = Exchange(*context, commands);
  }
  if (!replies) Fail();
  return replies;
}

std::optional<std::vector<RedisReply>> RedisConnection::Exchange(
    redisContext& context, std::span<const RedisArgs> commands) {
  for (const RedisArgs& args : commands) {
    if (!Append(context, args)) return std::nullopt;
  }
  std::vector<RedisReply> replies;
  replies.reserve(commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) {
    void* reply = nullptr;
    if (redisGetReply(&context, &reply) != REDIS_OK || reply == nullptr)
      return std::nullopt;
    replies.emplace_back(static_cast<redisReply*>(reply));
  }
  return replies;
}

redisContext* RedisConnection::Connect() {
  if (context_) return context_.get();
  if (retry_at_ && std::chrono::steady_clock::now() < *retry_at_)
    return nullptr;
  const timeval timeout = ToTimeval(options_.timeout);
  context_.reset(
      redisConnectWithTimeout(options_.host.c_str(), options_.port, timeout));
  if (!context_ || context_->err != 0 ||
      redisSetTimeout(context_.get(), timeout) != REDIS_OK) {
    Fail();
    return nullptr;
  }
  retry_at_.reset();
  if (connected_once_) ++reconnects_;
  connected_once_ = true;
  return context_.get();
}

void RedisConnection::Fail() {
  context_.reset();
  retry_at_ = std::chrono::steady_clock::now() + options_.reconnect_interval;
}

}  // namespace hkv::internal
