#include "traces/line_reader.h"

#include <cerrno>
#include <cstring>
#include <system_error>

#include "check.h"
#include "hkv/limits.h"

namespace hkv::internal {

Result<std::ifstream> OpenForReading(const std::filesystem::path& path) {
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status)) {
    return Fail(ErrorCode::kIoError,
                "cannot read " + path.string() + ": is a directory");
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno != 0 ? errno : ENOENT;
    return Fail(ErrorCode::kIoError,
                "cannot open " + path.string() + ": " + std::strerror(error));
  }
  return in;
}

LineReader::LineReader(std::istream& in, std::uint64_t max_bytes) : in_(in) {
  HKV_REQUIRE(max_bytes >= 1, "a line limit of 0 bytes");
  buffer_.resize(static_cast<std::size_t>(max_bytes) + 1);
}

LineReader::Status LineReader::Next() {
  if (done_ != Status::kLine) return done_;
  // getline stores at most buffer size - 1 bytes and fails on a longer line
  // without reading past that.
  in_.getline(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  auto count = static_cast<std::size_t>(in_.gcount());
  if (in_.bad()) return done_ = Status::kIoError;
  if (count == 0 && in_.eof()) return done_ = Status::kEnd;
  ++line_number_;
  if (in_.fail() && !in_.eof()) return done_ = Status::kTooLong;
  if (!in_.eof()) --count;  // gcount counted the '\n' it dropped
  std::string_view line(buffer_.data(), count);
  if (line_number_ == 1 && line.starts_with("\xEF\xBB\xBF")) {
    line.remove_prefix(3);
  }
  if (line.ends_with('\r')) line.remove_suffix(1);
  line_ = line;
  return Status::kLine;
}

std::string LineReader::TooLongProblem() const {
  return "longer than " + std::to_string(buffer_.size() - 1) +
         " bytes (the limit per line)";
}

RequestQuota QuotaFor(std::optional<std::size_t> limit) {
  if (limit && *limit <= kMaxRequestsPerWorkload) return {*limit, true};
  return {kMaxRequestsPerWorkload, false};
}

std::string RequestQuota::TooManyProblem() const {
  return "more than " + std::to_string(requests) +
         " requests (the limit per workload)";
}

}  // namespace hkv::internal
