// `hkv index`'s log: one line per incident (a rejected batch, a gap, a
// restart, a bad query) on stderr, prefixed "hkv index: ", at most
// kLinesPerWindow lines per kWindow so that a flood of bad input cannot
// flood the log; how many were held back is said when lines flow again.
//
// Thread-safety: every member may be called from any thread.
//
// Example:
//   Log log;
//   log.Say("instance 2: rejected batch 7: " + error.message);
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string_view>

namespace hkv::cli {

class Log {
 public:
  static constexpr int kLinesPerWindow = 20;
  static constexpr std::chrono::seconds kWindow{10};

  Log() = default;
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;

  // Prints `line` unless the window's lines are spent.
  void Say(std::string_view line);
  // Prints `line` whatever the rate (startup and shutdown).
  void Always(std::string_view line);

 private:
  using Clock = std::chrono::steady_clock;

  std::mutex mutex_;
  Clock::time_point window_start_ = {};  // guarded by mutex_
  int lines_in_window_ = 0;              // guarded by mutex_
  std::uint64_t held_back_ = 0;          // guarded by mutex_
};

}  // namespace hkv::cli
