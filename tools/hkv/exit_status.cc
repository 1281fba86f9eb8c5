#include "exit_status.h"

#include <fmt/core.h>

#include <cstdio>

namespace hkv::cli {

int ExitStatus(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kNotFound:
      return kExitUsage;
    case ErrorCode::kInfeasible:
    case ErrorCode::kIoError:
    case ErrorCode::kCorruption:
      return kExitFailure;
  }
  return kExitFailure;
}

int Failure(std::string_view command, const Error& error) {
  fmt::print(stderr, "hkv {}: {}\n", command, error.message);
  return ExitStatus(error.code);
}

}  // namespace hkv::cli
