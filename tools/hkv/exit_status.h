// How an hkv command ends: its exit status, by the class of what went
// wrong (docs/design.md, "Errors"; `hkv --help` says it too).
//   0  done (and --help, --version);
//   1  the command failed: a file that cannot be read (kIoError) or holds
//      bad data (kCorruption), a plan or simulation that cannot be done
//      (kInfeasible), or an internal error;
//   2  usage error: a flag or argument that is unknown, missing, malformed,
//      out of range or in conflict with another, or names nothing there is
//      (kInvalidArgument, kNotFound), whether CLI11 finds it while parsing
//      or the library when the command runs.
//
// Thread-safety: pure functions (Failure writes to stderr).
//
// Example:
//   if (!trace) return Failure("replay", trace.error());  // 1: unreadable
#pragma once

#include <string_view>

#include "hkv/result.h"

namespace hkv::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// The status of an error of class `code`, as above.
int ExitStatus(ErrorCode code);

// Prints "hkv COMMAND: MESSAGE" on stderr and returns the status of the
// error's class.
int Failure(std::string_view command, const Error& error);

// The rule above, for the epilogue of `hkv --help`.
inline constexpr char kExitStatusHelp[] =
    R"(Exit status: 0 done; 1 the command failed (a file that cannot be read or
holds bad data, a plan or simulation that cannot be done); 2 usage error (a
flag or argument unknown, missing, malformed, out of range, naming nothing
there is or in conflict with another, found while parsing or later).)";

}  // namespace hkv::cli
