// Thin POSIX helpers for the file store: calls that retry on EINTR, loop over
// short reads and writes, and report failure as an errno value (0 = done)
// rather than throwing.
//
// Thread-safe (no state).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace hkv::internal {

// Owns a file descriptor (-1 = none) and closes it on destruction.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Close(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Closes now. Returns the errno of a failed close, 0 otherwise (also when
  // there was nothing to close).
  int Close();

 private:
  int fd_;
};

// openat(2), retried on EINTR; O_CLOEXEC is added. Returns -1 with errno set
// on failure.
int OpenAt(int dir_fd, const char* name, int flags, mode_t mode = 0);

// Writes all of `bytes` to `fd`. Returns 0 or the errno of the failing write
// (EFBIG, ENOSPC, EIO, ...).
int WriteAll(int fd, std::string_view bytes);

// Reads `fd` from its offset to the end into `out` (replacing its contents).
// Returns 0 or the errno of the failing read. `size_hint` presizes `out`.
int ReadAll(int fd, std::size_t size_hint, std::string& out);

// Calls `visit(name, d_type)` for each entry of the directory open as
// `dir_fd` ("." and ".." included) until it returns false; the directory is
// read through a descriptor of its own. Returns 0 or the errno of the
// failing open or read.
int ReadDirectory(int dir_fd,
                  const std::function<bool(const char*, unsigned char)>& visit);

// fsync(2), retried on EINTR. Returns 0 or its errno.
int Fsync(int fd);

// The text of an errno value, as strerror gives it.
std::string ErrnoText(int error);

}  // namespace hkv::internal
