// A request as the cache manager sees it: its token ids (prompt, then
// accepted outputs; never drafts) and the chained keys of every complete
// hash unit, extended incrementally as tokens are appended.
//
// Thread-compatible. The scheduler owns its Requests and passes them by
// reference to the CacheManager.
//
// Example:
//   Request r({.id = RequestId{1}}, prompt_tokens, scheme);
//   r.AppendTokens(sampled);               // keys grow with the tokens
//   std::span<const BlockHash> k = r.keys();
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "hkv/keys.h"
#include "hkv/types.h"

namespace hkv {

// Whether a lookup may read the prefix cache for this request. Requests that
// need every prompt position computed (prompt logprobs) skip reading but still
// write the cache.
enum class CacheRead { kAllowed, kSkipped };

// Which KV events a request's reuse produces: kFull re-announces the blocks
// of its adopted hit (BlockStored, changing no block state), for routers
// that track each request's blocks rather than the cache's.
enum class EventReport { kIncremental, kFull };

struct RequestOptions {
  RequestId id{0};
  KeyExtras extras = {};
  CacheRead cache_read = CacheRead::kAllowed;
  std::optional<std::uint32_t> lora_id = std::nullopt;  // reported in KV events
  EventReport event_report = EventReport::kIncremental;
};

class Request {
 public:
  // O(prompt length): keys every complete unit of the prompt. REQUIRES
  // (else UsageError, checked before anything is copied): at most
  // kMaxTokensPerRequest (hkv/limits.h) tokens; options.extras.Validate()
  // succeeds (multimodal items sorted by offset, ...); hash_unit >= 1.
  Request(RequestOptions options, std::span<const TokenId> prompt,
          const KeyScheme& scheme);

  // A request its caller keys (an engine that hashes its blocks itself): it
  // holds no token ids, only their count and one key per complete hash unit
  // of `scheme` (keys of up to 32 bytes, shorter digests zero-padded). Its
  // lookups, allocations and commits are those of a request keyed by hkv;
  // its KV events carry no token ids (the caller has them). The keys must
  // be chained, as the engine's block hashes are (each digests the key
  // before it): a lookup proves a cached prefix from its deepest key.
  // REQUIRES (else UsageError, nothing kept): at most kMaxTokensPerRequest
  // tokens; keys.size() == num_prompt_tokens / scheme.hash_unit;
  // options.extras is empty (they are in the caller's keys already);
  // hash_unit >= 1. O(keys); the keys are moved in.
  static Request KeyedByCaller(RequestOptions options,
                               std::uint32_t num_prompt_tokens,
                               std::vector<BlockHash> keys,
                               const KeyScheme& scheme);

  // Appends accepted output tokens and keys the units they complete.
  // REQUIRES: the request stays within kMaxTokensPerRequest tokens (else
  // UsageError, nothing appended); it is not keyed by its caller. O(tokens
  // appended).
  void AppendTokens(std::span<const TokenId> tokens);

  // For a request keyed by its caller: `num_new_tokens` more tokens, and the
  // keys of the units they complete. REQUIRES (else UsageError, nothing
  // appended): the request is keyed by its caller; it stays within
  // kMaxTokensPerRequest tokens; keys.size() is the number of units the new
  // tokens complete. O(keys appended).
  void AppendKeyedTokens(std::uint32_t num_new_tokens,
                         std::span<const BlockHash> keys);

  RequestId id() const { return options_.id; }
  const KeyScheme& key_scheme() const { return scheme_; }
  const KeyExtras& extras() const { return options_.extras; }
  CacheRead cache_read() const { return options_.cache_read; }
  std::optional<std::uint32_t> lora_id() const { return options_.lora_id; }
  EventReport event_report() const { return options_.event_report; }
  // The token ids; empty for a request keyed by its caller.
  std::span<const TokenId> tokens() const { return tokens_; }
  bool keyed_by_caller() const { return keyed_by_caller_; }
  std::uint32_t num_tokens() const { return num_tokens_; }
  std::uint32_t num_prompt_tokens() const { return num_prompt_tokens_; }
  // Key of unit k covers tokens [0, (k+1) * hash_unit).
  std::span<const BlockHash> keys() const { return keys_; }

 private:
  void ExtendKeys();

  RequestOptions options_;
  KeyScheme scheme_;
  std::vector<TokenId> tokens_;  // num_tokens_ of them, unless caller-keyed
  std::uint32_t num_tokens_ = 0;
  std::uint32_t num_prompt_tokens_;
  std::vector<BlockHash> keys_;  // keys_.size() == num_tokens_ / hash_unit
  bool keyed_by_caller_ = false;
};

}  // namespace hkv
