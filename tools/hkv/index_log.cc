#include "index_log.h"

#include <fmt/core.h>

#include <cstdio>

namespace hkv::cli {

void Log::Say(std::string_view line) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const Clock::time_point now = Clock::now();
  if (now - window_start_ >= kWindow) {
    if (held_back_ > 0) {
      fmt::print(stderr, "hkv index: {} more lines held back\n", held_back_);
    }
    window_start_ = now;
    lines_in_window_ = 0;
    held_back_ = 0;
  }
  if (lines_in_window_ >= kLinesPerWindow) {
    ++held_back_;
    return;
  }
  ++lines_in_window_;
  fmt::print(stderr, "hkv index: {}\n", line);
}

void Log::Always(std::string_view line) {
  const std::lock_guard<std::mutex> lock(mutex_);
  fmt::print(stderr, "hkv index: {}\n", line);
}

}  // namespace hkv::cli
