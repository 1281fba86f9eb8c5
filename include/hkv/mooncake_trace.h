// Mooncake request traces (FAST'25 release, JSON Lines) and the synthetic
// prompts hkv replays in their place.
//
// A trace line is one JSON object:
//   {"timestamp": 0, "input_length": 6758, "output_length": 500,
//    "hash_ids": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]}
// with the arrival time in milliseconds, the prompt and output lengths in
// tokens, and one id per 512-token prompt block (the last one may be
// partial). Ids are chained: equal ids at a position mean the whole prefix up
// to and including that block is equal. The traces carry no token ids, so
// MooncakeTokens synthesises them from the hash ids.
//
// Thread-safety: pure functions and value types.
//
// Example:
//   Result<std::vector<TraceRequest>> trace = ReadMooncakeTrace(path);
//   if (!trace) return Fail(trace.error().code, trace.error().message);
//   std::vector<TokenId> prompt = MooncakeTokens((*trace)[0]);
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "hkv/limits.h"
#include "hkv/result.h"
#include "hkv/types.h"

namespace hkv {

// Tokens per hash id in Mooncake traces.
inline constexpr std::uint32_t kMooncakeBlockTokens = 512;

// Vocabulary size of the synthetic token ids (Qwen2's, 151,936).
inline constexpr std::uint32_t kMooncakeVocabSize = 151936;

// One trace line.
struct TraceRequest {
  std::uint64_t timestamp_ms = 0;
  std::uint32_t input_length = 0;   // prompt tokens, >= 1
  std::uint32_t output_length = 0;  // generated tokens
  // One id per 512 prompt tokens: size == ceil(input_length / 512).
  std::vector<std::uint64_t> hash_ids = {};
};

// Returns kInvalidArgument naming the problem when `request` breaks the
// constraints above (input_length 0, hash_ids of the wrong length) or has
// more than kMaxTokensPerRequest tokens, input and output together.
[[nodiscard]] Result<void> ValidateTraceRequest(const TraceRequest& request);

// Reads a Mooncake trace: one TraceRequest per line, in file order, at most
// `limit` of them (the reading stops there). Trailing blank lines, CRLF line
// ends, a UTF-8 byte order mark and a last line without '\n' are allowed;
// unknown keys are ignored.
// Returns kIoError naming the path and the reason when the file cannot be
// opened (missing, a directory, no permission) or read, and kCorruption for
// the first malformed line, the message naming "file:line: problem" (line
// numbers 1-based): a line longer than kMaxTraceLineBytes, not JSON, not an
// object, a number beyond a double (naming its field), a missing or
// ill-typed field, a negative or out-of-range number (a timestamp above
// kMaxInputSeconds in milliseconds), a timestamp before the previous
// line's (a trace is in time order), input_length 0, more than
// kMaxTokensPerRequest tokens (input and output), a hash_ids length other
// than ceil(input_length / 512), a blank line before the last request, or,
// without a `limit` within it, more than kMaxRequestsPerWorkload requests.
// Nothing is allocated beyond those limits.
// O(file size up to the limit).
[[nodiscard]] Result<std::vector<TraceRequest>> ReadMooncakeTrace(
    const std::filesystem::path& path,
    std::optional<std::size_t> limit = std::nullopt);

// The synthetic prompt of `request`: input_length tokens, 512 per hash id,
// the last block cut short. Token p (0-based) of the block with id h is
//   SplitMix64(SplitMix64(h) + p) mod 151936
// where SplitMix64(x) is the splitmix64 output function of x:
//   z = x + 0x9e3779b97f4a7c15
//   z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
//   z = (z ^ (z >> 27)) * 0x94d049bb133111eb
//   return z ^ (z >> 31)
// (all arithmetic mod 2^64). A token depends only on its block's id and its
// position in the block, so requests whose hash ids share a prefix share the
// tokens of those blocks, and a block cut shorter in one request is a prefix
// of the same block in another. Different ids give unrelated tokens.
// REQUIRES: ValidateTraceRequest(request) succeeds (else UsageError).
// O(input_length).
std::vector<TokenId> MooncakeTokens(const TraceRequest& request);

}  // namespace hkv
