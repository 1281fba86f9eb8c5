// Token ids for `hkv keys`: one JSON array of integers in [0, 2^32 - 1],
// read from a file or stdin.
#pragma once

#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/result.h"
#include "hkv/types.h"

namespace hkv::cli {

// Parses `in` as one JSON array of token ids. `source` names the input in
// errors ("prompt.json", "stdin"). Fails with kCorruption naming the
// offending token (its index and value) when the input is not an array, holds
// anything but integers in [0, 2^32 - 1], or exceeds kMaxTokensPerRequest
// tokens or kMaxTokenListBytes bytes; kIoError when it cannot be read.
[[nodiscard]] Result<std::vector<TokenId>> ReadTokenList(
    std::istream& in, std::string_view source);

// ReadTokenList on the file `path`, or on stdin when `path` is "-".
[[nodiscard]] Result<std::vector<TokenId>> ReadTokenFile(
    const std::string& path);

}  // namespace hkv::cli
