// Error reporting for hkv: three channels, chosen by who is at fault.
//
//  * Normal outcomes are values (a prefix miss is a hit of zero tokens; a
//    short pool makes Allocate return std::nullopt).
//  * Bad input or environment (a malformed trace, an impossible config) is a
//    Result<T> holding an Error.
//  * Caller bugs at the public API (an unknown request, a double free) throw
//    UsageError before any state changes.
//
// Thread-safety: plain value types.
//
// Example:
//   Result<Trace> trace = ReadMooncakeTrace(path);
//   if (!trace) std::cerr << trace.error().message;
#pragma once

#include <stdexcept>
#include <string>
#include <tl/expected.hpp>

namespace hkv {

enum class ErrorCode {
  kInvalidArgument,
  kNotFound,
  kInfeasible,
  kIoError,
  kCorruption
};

struct Error {
  ErrorCode code;
  std::string message;
};

// std::expected once the project moves to C++23.
template <typename T>
using Result = tl::expected<T, Error>;

// Returns an unexpected Error, for `return Fail(ErrorCode::kIoError, "...")`.
inline tl::unexpected<Error> Fail(ErrorCode code, std::string message) {
  return tl::unexpected<Error>(Error{code, std::move(message)});
}

// Thrown only for caller bugs detected at the public API, before any state
// change.
class UsageError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace hkv
