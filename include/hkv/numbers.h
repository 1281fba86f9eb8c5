// Numbers and files given as options (the command line's, experiment
// options, workload arguments): whole numbers and reals within stated
// ranges, and a bounded file read.
// Each error says what was given and what is accepted; the caller names the
// option (Named).
//
// Thread-safety: pure functions.
//
// Example:
//   Result<std::uint64_t> n = ParseWhole("1e6", 0, 1 << 20);  // 1000000
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "hkv/real_range.h"
#include "hkv/result.h"

namespace hkv {

// A whole number in [min, max]: decimal digits, or exponent form that is
// whole ("1e6"). kInvalidArgument "\"TEXT\" is not a whole number in [min,
// max]" for anything else (a sign, a fraction, nan, inf, out of range).
[[nodiscard]] Result<std::uint64_t> ParseWhole(std::string_view text,
                                               std::uint64_t min,
                                               std::uint64_t max);

// A finite number in `range`. kInvalidArgument naming the text and the
// range for anything else.
[[nodiscard]] Result<double> ParseReal(std::string_view text,
                                       const RealRange& range);

// `value` in at most six significant digits ("1e+300", "nan").
std::string NumberText(double value);

// "[min, max]" or "(min, max]", numbers in at most six digits.
std::string RangeText(const RealRange& range);
std::string RangeText(std::uint64_t min, std::uint64_t max);

// `error` with its message prefixed by "what: ", for naming the option (or
// field) an error comes from.
inline tl::unexpected<Error> Named(const std::string& what, Error error) {
  error.message = what + ": " + error.message;
  return tl::unexpected<Error>(std::move(error));
}

// The contents of file `path`, at most `max_bytes` of them. kIoError naming
// the path and the reason (missing, a directory, unreadable), or
// kCorruption for a longer file (read no further than the limit).
[[nodiscard]] Result<std::string> ReadSmallFile(const std::string& path,
                                                std::uint64_t max_bytes);

}  // namespace hkv
