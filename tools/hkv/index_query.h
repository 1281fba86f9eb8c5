// The queries `hkv index` answers, on POST /query and on its ZeroMQ REP
// socket alike (docs/cluster.md): a JSON object holding a
// prompt's tokens, or its unit keys and length,
//   {"tokens": [1, 2, 3, ...]}
//   {"keys": ["<hex digest>", ...], "num_tokens": 4096}
// answered per instance with the prefix it could resume from:
//   {"instances": [{"instance": 0, "endpoint": "tcp://...",
//                   "hybrid_tokens": 2048, "attention_tokens": 4080}, ...],
//    "best": 0}
// or, for a query that cannot be read, {"error": "..."}.
//
// Thread-safety: pure functions.
//
// Example:
//   Result<IndexQuery> q = ParseIndexQuery(R"({"tokens":[1,2]})", 32);
//   if (!q) reply(ErrorJson(q.error().message));
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/cluster_index.h"
#include "hkv/result.h"
#include "hkv/types.h"

namespace hkv::cli {

// The largest query body read: 64 MiB, about 4 bytes per token of
// kMaxTokensPerRequest (longer bodies are refused before they are parsed).
inline constexpr std::size_t kMaxQueryBytes = std::size_t{64} << 20;

// One query, in one of its two forms.
struct IndexQuery {
  bool by_keys = false;
  std::vector<TokenId> tokens = {};  // !by_keys
  std::vector<BlockHash> keys = {};  // by_keys: digest in the first bytes
  std::uint32_t num_tokens = 0;      // the prompt's length, either form
};

// Reads a query whose keys are `digest_size`-byte digests (hex, either
// case). kInvalidArgument naming the first problem: malformed JSON, not an
// object, an unknown or repeated field, a token that is not an integer in
// [0, 2^32 - 1], a key of another length or not hex, more than
// kMaxTokensPerRequest tokens or keys, num_tokens above it or given with
// tokens, keys without num_tokens, both forms or neither. The body is read
// as a stream: nothing is kept but the ids, and reading stops at the first
// problem. O(body size).
[[nodiscard]] Result<IndexQuery> ParseIndexQuery(std::string_view body,
                                                 std::size_t digest_size);

// The instance with the most hybrid tokens, the lowest one on a tie (0 when
// none holds any). REQUIRES: `matches` is not empty.
std::size_t BestInstance(std::span<const InstanceMatch> matches);

// The answer above; `endpoints[i]` names instance i. REQUIRES: as many
// endpoints as matches, at least one.
std::string AnswerJson(std::span<const InstanceMatch> matches,
                       std::span<const std::string> endpoints);

// {"error": message}; bytes that are not UTF-8 are replaced.
std::string ErrorJson(std::string_view message);

}  // namespace hkv::cli
