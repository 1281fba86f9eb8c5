// CLI11 validators of numbers on the command line: whole numbers and reals
// within stated ranges (the library's hkv/numbers.h parses them), refusing
// others with a usage error naming the option, the value and the range.
//
// Thread-safety: pure functions.
//
// Example:
//   sub.add_option("--num-blocks", o.num_blocks)
//       ->check(WholeIn(1, kMaxPoolBlocks - 1));
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "hkv/numbers.h"
#include "hkv/result.h"

namespace hkv::cli {

// The validators: a usage error naming the option, the value and the
// range. WholeIn rewrites exponent forms as digits for CLI11's
// conversion.
CLI::Validator WholeIn(std::uint64_t min, std::uint64_t max);
CLI::Validator RealIn(const RealRange& range);
// A key function by hkv's or the reference engine's name (ParseKeyFunction:
// its refusal says why), rewritten as hkv's name.
CLI::Validator KeyFunctionIn();

}  // namespace hkv::cli
