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

#include <cstdint>
#include <filesystem>
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

  // kInvalidArgument for a shared fraction outside [0, 1], or sharing with
  // no prefixes.
  [[nodiscard]] Result<void> Validate() const;
};

// Parses CSV text. Timestamps are "YYYY-MM-DD HH:MM:SS[.fraction]" or plain
// seconds; arrivals are relative to the first request. Output lengths of 0
// become 1. Returns kCorruption naming the line for a missing column, a bad
// number or timestamp, a context of 0 tokens or a decreasing timestamp.
[[nodiscard]] Result<std::vector<SimRequest>> ParseAzureTrace(
    std::string_view csv, const AzurePrefixOptions& options);

// Reads and parses a file as ParseAzureTrace; kIoError when it cannot be
// read.
[[nodiscard]] Result<std::vector<SimRequest>> ReadAzureTrace(
    const std::filesystem::path& path, const AzurePrefixOptions& options);

}  // namespace hkv
