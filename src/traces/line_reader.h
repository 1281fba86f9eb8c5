// Reading text input within the documented limits: opening a file with an
// error that says why it cannot be read, and splitting a stream into lines
// of bounded length, so that no input (a huge line, /dev/zero) makes the
// readers allocate without bound.
//
// Thread-compatible: a LineReader reads one stream from one thread.
//
// Example:
//   Result<std::ifstream> in = internal::OpenForReading(path);
//   if (!in) return tl::unexpected(in.error());
//   internal::LineReader lines(*in, kMaxTraceLineBytes);
//   while (lines.Next() == internal::LineReader::Status::kLine) {
//     Use(lines.line());
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <istream>
#include <optional>
#include <string>
#include <string_view>

#include "hkv/result.h"

namespace hkv::internal {

// `path` opened for reading. kIoError naming the path and the reason: it
// does not exist, is a directory, or cannot be opened (the system's
// reason).
[[nodiscard]] Result<std::ifstream> OpenForReading(
    const std::filesystem::path& path);

// The lines of a stream, each without its '\n' and a '\r' before it (CRLF
// files), the first without a UTF-8 byte order mark. The last line may
// lack its '\n'. Reads at most max_bytes + 1 bytes of a line before
// refusing it, whatever its length.
class LineReader {
 public:
  enum class Status {
    kLine,     // line() holds the next line
    kEnd,      // no more input
    kTooLong,  // the line has more than max_bytes bytes (its '\n' not counted)
    kIoError,  // the stream failed
  };

  // REQUIRES: `in` outlives the reader; max_bytes >= 1.
  LineReader(std::istream& in, std::uint64_t max_bytes);
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Reads the next line. After kEnd, kTooLong or kIoError it keeps
  // returning that status.
  Status Next();

  // The line of the last kLine, valid until the next call.
  std::string_view line() const { return line_; }
  // 1-based number of the line the last Next() read or refused.
  std::size_t line_number() const { return line_number_; }

  // "longer than N bytes (the limit per line)", for kTooLong errors.
  std::string TooLongProblem() const;

 private:
  std::istream& in_;
  std::string buffer_;  // max_bytes + 1 bytes: a full buffer means too long
  std::string_view line_;
  std::size_t line_number_ = 0;
  Status done_ = Status::kLine;  // kLine until the first final status
};

// How many requests a trace reader reads: the first `limit` when that is
// within kMaxRequestsPerWorkload (`stops`: the reading ends there), else up
// to kMaxRequestsPerWorkload, one more being an error.
struct RequestQuota {
  std::size_t requests = 0;
  bool stops = false;

  // "more than N requests (the limit per workload)", for the request after
  // a quota that does not stop.
  std::string TooManyProblem() const;
};
RequestQuota QuotaFor(std::optional<std::size_t> limit);

}  // namespace hkv::internal
