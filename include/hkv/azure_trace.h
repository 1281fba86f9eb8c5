// Azure LLM inference traces (Azure Public Dataset, AzureLLMInferenceTrace
// 2023/2024): CSV with a header naming TIMESTAMP, ContextTokens and
// GeneratedTokens, one request per line, e.g.
//   TIMESTAMP,ContextTokens,GeneratedTokens
//   2023-11-16 18:15:46.6805900,374,44
// The traces carry lengths only; the prompt sharing is synthesised from
// stated parameters: with probability shared_fraction a request opens with
// one of num_prefixes shared prefixes (drawn uniformly, seeded) of
// prefix_tokens tokens (cut to leave at least one token of its own), and
// the rest of its prompt is unique.
//
// Thread-safety: pure functions.
//
// Example:
//   Result<std::vector<SimRequest>> w = ReadAzureTrace(path, {.seed = 3});
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "hkv/result.h"
#include "hkv/workload.h"

namespace hkv {

struct AzurePrefixOptions {
  std::uint32_t num_prefixes = 4;
  std::uint32_t prefix_tokens = 1024;
  double shared_fraction = 0.5;
  std::uint64_t seed = 1;

  // kInvalidArgument for a shared fraction outside [0, 1] (or NaN), or
  // sharing with no prefixes.
  [[nodiscard]] Result<void> Validate() const;
};

// Parses CSV text: at most `limit` requests (parsing stops there).
// Timestamps are "YYYY-MM-DD HH:MM:SS[.fraction]" or plain seconds;
// arrivals are relative to the first request. Output lengths of 0 become 1.
// CRLF line ends, a UTF-8 byte order mark and a last line without '\n' are
// allowed; blank lines are skipped.
// Returns kInvalidArgument when `options` are invalid, and kCorruption
// naming the line ("Azure trace line N: ...") and the column for a line
// longer than kMaxTraceLineBytes, a missing column, a timestamp that is
// neither form or not finite, a token count that is not a whole number, a
// context of 0 tokens, more than kMaxTokensPerRequest tokens (context and
// generated), a decreasing timestamp or one more than kMaxInputSeconds after
// the first, or, without a `limit` within it, more than
// kMaxRequestsPerWorkload requests.
[[nodiscard]] Result<std::vector<SimRequest>> ParseAzureTrace(
    std::string_view csv, const AzurePrefixOptions& options,
    std::optional<std::size_t> limit = std::nullopt);

// Reads and parses a file as ParseAzureTrace, errors naming "FILE:LINE: ";
// kIoError naming the path and the reason when it cannot be opened (missing,
// a directory, no permission) or read. Reads lines of bounded length, so
// memory stays within the limits whatever the file.
[[nodiscard]] Result<std::vector<SimRequest>> ReadAzureTrace(
    const std::filesystem::path& path, const AzurePrefixOptions& options,
    std::optional<std::size_t> limit = std::nullopt);

}  // namespace hkv
