#include "progress.h"

#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

namespace hkv::cli {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// "12 s", "3 min 05 s", "1 h 02 min".
std::string Duration(double seconds) {
  const auto s = static_cast<long long>(seconds + 0.5);
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {:02} s", s / 60, s % 60);
  return fmt::format("{} h {:02} min", s / 3600, s / 60 % 60);
}

class Reporter {
 public:
  explicit Reporter(bool terminal) : terminal_(terminal) {}

  void Report(const std::string& label, std::size_t done, std::size_t total) {
    const Clock::time_point now = Clock::now();
    if (label != label_) {  // a new run
      EndLine();
      label_ = label;
      run_start_ = now;
      last_line_ = Clock::time_point{};
    }
    if (Seconds(now - start_) < 1.0) return;
    const bool finished = done >= total;
    if (!terminal_ && !finished && Seconds(now - last_line_) < 10.0) return;
    last_line_ = now;
    const double elapsed = Seconds(now - run_start_);
    std::string eta = "?";
    if (done > 0 && !finished) {
      eta = Duration(elapsed * static_cast<double>(total - done) /
                     static_cast<double>(done));
    }
    const std::string counts = fmt::format(
        "{}/{} requests, {} so far{}", done, total, Duration(elapsed),
        finished ? "" : ", about " + eta + " left");
    if (terminal_) {
      constexpr std::size_t kWidth = 24;
      const std::size_t filled = total == 0 ? kWidth : kWidth * done / total;
      fmt::print(stderr, "\r\033[K{} [{}{}] {}", label,
                 std::string(filled, '#'), std::string(kWidth - filled, ' '),
                 counts);
      open_line_ = true;
      if (finished) EndLine();
    } else {
      fmt::print(stderr, "{}: {}\n", label, counts);
    }
    std::fflush(stderr);
  }

  ~Reporter() { EndLine(); }
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;

 private:
  void EndLine() {
    if (open_line_) fmt::print(stderr, "\n");
    open_line_ = false;
  }

  const bool terminal_;
  const Clock::time_point start_ = Clock::now();
  std::string label_;
  Clock::time_point run_start_;
  Clock::time_point last_line_;
  bool open_line_ = false;
};

}  // namespace

SimProgress StderrProgress(bool quiet) {
  if (quiet) return {};
  auto reporter = std::make_shared<Reporter>(::isatty(STDERR_FILENO) == 1);
  return
      [reporter](const std::string& label, std::size_t done,
                 std::size_t total) { reporter->Report(label, done, total); };
}

}  // namespace hkv::cli
