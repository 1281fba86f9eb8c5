// A token-id trace: the user's own traffic as JSONL, one object per line,
// for `hkv simulate --workload tokens:FILE` (docs/simulator.md).
//
// A request line:
//   {"arrival_s": 1.5, "token_ids": [101, 7592, ...], "output_tokens": 64,
//    "prefix": "system", "session": "chat-7", "turn": 2, "think_s": 0.5,
//    "lora": "sql-adapter", "salt": "tenant-a"}
// A prefix line, naming tokens that later lines open with:
//   {"define": "system", "token_ids": [...], "prefix": "earlier"}
//
// Request fields: token_ids (the prompt after the prefix's tokens; may be
// empty when a prefix is given), output_tokens (>= 1) and arrival_s
// (seconds, non-decreasing, default that of the line before) are required
// or defaulted as said; prefix names a prefix defined on an earlier line.
// A session's turns arrive in order: turn t > 1 comes think_s seconds
// (default 0) after turn t - 1 of its session finished, whatever its
// arrival_s. lora and salt (strings) give the request a key space of its
// own: requests share cached blocks only when both match, as the engine's
// extra keys make them (hkv folds them into the token ids: each token is
// XORed with a 32-bit digest of the two strings, so the prompts of two key
// spaces are equal only where crafted to be).
//
// Thread-safety: pure functions.
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

// Token ids a trace holds at most, prefixes and prompts together (the
// memory of the explicit tokens: 4 bytes each).
inline constexpr std::uint64_t kMaxTraceTokens = std::uint64_t{1} << 28;

// Parses JSONL text: at most `limit` requests. Blank lines are skipped.
// kCorruption naming the line ("token trace line N: ...") and the field for
// a line over kMaxTraceLineBytes, text that is not one JSON object, an
// unknown field, a field of the wrong type, a token id that is not an
// integer in [0, 2^32), output_tokens of 0, a prompt of no tokens, an
// unknown or redefined prefix, a decreasing or negative arrival, one past
// kMaxInputSeconds, a turn not after its session's last, more than
// kMaxTokensPerRequest tokens in a request (prompt and output) or
// kMaxTraceTokens in the trace, or, without a `limit` within it, more than
// kMaxRequestsPerWorkload requests.
[[nodiscard]] Result<std::vector<SimRequest>> ParseTokenTrace(
    std::string_view jsonl, std::optional<std::size_t> limit = std::nullopt);

// Reads a file as ParseTokenTrace, errors naming "FILE:LINE: "; kIoError
// naming the path when it cannot be opened or read. Lines are read with a
// bounded length.
[[nodiscard]] Result<std::vector<SimRequest>> ReadTokenTrace(
    const std::filesystem::path& path,
    std::optional<std::size_t> limit = std::nullopt);

}  // namespace hkv
