#include "tiers/posix_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace hkv::internal {

int UniqueFd::Close() {
  if (fd_ < 0) return 0;
  // Never retried: Linux releases the descriptor even when close fails.
  const int result = ::close(fd_);
  fd_ = -1;
  return result == 0 ? 0 : errno;
}

int OpenAt(int dir_fd, const char* name, int flags, mode_t mode) {
  int fd;
  do {
    fd = ::openat(dir_fd, name, flags | O_CLOEXEC, mode);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

int WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t written = ::write(fd, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
  return 0;
}

int ReadAll(int fd, std::size_t size_hint, std::string& out) {
  // One spare byte: the read that finds the end of a file of the hinted size
  // needs no room of its own.
  out.resize(size_hint + 1);
  std::size_t filled = 0;
  while (true) {
    if (filled == out.size()) out.resize(out.size() * 2);
    const ssize_t got = ::read(fd, out.data() + filled, out.size() - filled);
    if (got < 0) {
      if (errno == EINTR) continue;
      out.clear();
      return errno;
    }
    if (got == 0) break;
    filled += static_cast<std::size_t>(got);
  }
  out.resize(filled);
  return 0;
}

int ReadDirectory(
    int dir_fd, const std::function<bool(const char*, unsigned char)>& visit) {
  const int fd = OpenAt(dir_fd, ".", O_RDONLY | O_DIRECTORY);
  if (fd < 0) return errno;
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    const int error = errno;
    ::close(fd);
    return error;
  }
  int error = 0;
  while (true) {
    errno = 0;
    const dirent* entry = ::readdir(dir);
    if (entry == nullptr) {
      error = errno;
      break;
    }
    if (!visit(entry->d_name, entry->d_type)) break;
  }
  ::closedir(dir);
  return error;
}

int Fsync(int fd) {
  int result;
  do {
    result = ::fsync(fd);
  } while (result != 0 && errno == EINTR);
  return result == 0 ? 0 : errno;
}

std::string ErrnoText(int error) {
  return std::generic_category().message(error);
}

}  // namespace hkv::internal
