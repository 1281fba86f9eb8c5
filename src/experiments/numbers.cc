#include "hkv/numbers.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace hkv {
namespace {

// Doubles hold every whole number up to 2^53 exactly.
constexpr double kExactWhole = 9007199254740992.0;

template <typename T>
bool Convert(std::string_view text, T& value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return !text.empty() && ec == std::errc() && ptr == end;
}

}  // namespace

std::string NumberText(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

std::string RangeText(const RealRange& range) {
  return (range.min_excluded ? "(" : "[") + NumberText(range.min) + ", " +
         NumberText(range.max) + "]";
}

std::string RangeText(std::uint64_t min, std::uint64_t max) {
  return "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
}

Result<std::uint64_t> ParseWhole(std::string_view text, std::uint64_t min,
                                 std::uint64_t max) {
  std::uint64_t value = 0;
  double real = 0.0;
  bool ok = Convert(text, value);
  if (!ok && Convert(text, real) && real >= 0.0 && real <= kExactWhole &&
      std::floor(real) == real) {
    value = static_cast<std::uint64_t>(real);
    ok = true;
  }
  if (!ok || value < min || value > max) {
    return Fail(ErrorCode::kInvalidArgument,
                "\"" + std::string(text) + "\" is not a whole number in " +
                    RangeText(min, max));
  }
  return value;
}

Result<double> ParseReal(std::string_view text, const RealRange& range) {
  double value = 0.0;
  const bool ok =
      Convert(text, value) && std::isfinite(value) &&
      (range.min_excluded ? value > range.min : value >= range.min) &&
      value <= range.max;
  if (!ok) {
    return Fail(
        ErrorCode::kInvalidArgument,
        "\"" + std::string(text) + "\" is not a number in " + RangeText(range));
  }
  return value;
}

Result<std::string> ReadSmallFile(const std::string& path,
                                  std::uint64_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Fail(ErrorCode::kIoError,
                "cannot read " + path + ": is a directory");
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Fail(ErrorCode::kIoError,
                "cannot open " + path + ": " +
                    std::strerror(errno != 0 ? errno : ENOENT));
  }
  std::string text(static_cast<std::size_t>(max_bytes) + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return Fail(ErrorCode::kIoError, "error reading " + path);
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > max_bytes) {
    return Fail(ErrorCode::kCorruption,
                path + " is larger than " + std::to_string(max_bytes) +
                    " bytes (the limit for a configuration file)");
  }
  return text;
}

}  // namespace hkv
