// Simulator workloads: requests with arrival times, prompts described by
// content segments, and output lengths; converted from traces or generated
// from a seed.
//
// A prompt is a list of segments. Token p (0-based) of a segment with id h is
//   SplitMix64(SplitMix64(h) + p) mod 151936
// as MooncakeTokens defines it, so a Mooncake request's hash ids become
// 512-token segments with the very tokens `hkv replay` uses. Equal segment
// lists give equal prompts; prompts share a prefix exactly as far as their
// segments do. A request's outputs are the tokens of its output segment, so
// the next turn of a conversation can quote them.
//
// Thread-safety: value types and pure functions.
//
// Example:
//   std::vector<SimRequest> w = GenerateFanOut({.num_requests = 8});
//   std::vector<TokenId> prompt = PromptTokens(w[0]);
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "hkv/limits.h"
#include "hkv/mooncake_trace.h"
#include "hkv/result.h"
#include "hkv/types.h"

namespace hkv {

struct Segment {
  std::uint64_t id = 0;
  std::uint32_t length = 0;  // tokens
  // Set (a token-id trace): these are the segment's tokens (length of
  // them), not the id's; id is then a digest of them. Shared between the
  // requests that open with the same prefix.
  std::shared_ptr<const std::vector<TokenId>> tokens = nullptr;

  friend bool operator==(const Segment&, const Segment&) = default;
};

struct SimRequest {
  double arrival_s = 0.0;  // open loop: when it arrives
  std::vector<Segment> prompt = {};
  std::uint32_t output_length = 1;  // tokens to generate; at least 1
  std::uint64_t output_id = 0;      // segment id of the outputs
  // Set: the request arrives delay_s after request `after` (an earlier
  // index) finished, whatever arrival_s says (a conversation's next turn).
  std::optional<std::size_t> after = std::nullopt;
  double delay_s = 0.0;

  friend bool operator==(const SimRequest&, const SimRequest&) = default;
};

std::uint32_t PromptLength(const SimRequest& request);
std::vector<TokenId> PromptTokens(const SimRequest& request);
// Output tokens [first, first + count) of `request`.
std::vector<TokenId> OutputTokens(const SimRequest& request,
                                  std::uint32_t first, std::uint32_t count);

// kInvalidArgument naming the first bad request: an empty prompt, an output
// length of 0, more than kMaxTokensPerRequest tokens (prompt and output), a
// negative time or one above kMaxInputSeconds (NaN and infinity included),
// arrival times that decrease, or `after` not naming an earlier request; or
// more than kMaxRequestsPerWorkload requests.
[[nodiscard]] Result<void> ValidateWorkload(std::span<const SimRequest> w);

// One request per trace line: arrival = timestamp, hash ids as 512-token
// segments, output length max(1, output_length), output id unique per line.
std::vector<SimRequest> FromMooncake(std::span<const TraceRequest> trace);

// Cuts a workload down: keeps the first `limit` requests, divides arrival
// times (and delays) by `time_scale` (> 1 compresses), then keeps those
// arriving before `duration_s` (after scaling). Requests whose `after` was
// cut go too.
struct WorkloadCut {
  std::optional<std::size_t> limit = std::nullopt;
  double time_scale = 1.0;
  std::optional<double> duration_s = std::nullopt;

  // kInvalidArgument for a time scale or duration that is not > 0.
  [[nodiscard]] Result<void> Validate() const;
};
std::vector<SimRequest> CutWorkload(std::vector<SimRequest> workload,
                                    const WorkloadCut& cut);

// The generators below are pure functions of their options; the seed picks
// the content. Each makes the first `limit` requests of its workload (all of
// them without a limit) and allocates nothing for the others. Each options
// struct's Validate(limit) returns kInvalidArgument naming the argument (by
// the names `hkv simulate --workload` uses: requests, prefix, output, ...)
// when the requests to make would exceed kMaxRequestsPerWorkload, one would
// exceed kMaxTokensPerRequest or have an empty prompt or no output, or a
// time would be negative, not finite or above kMaxInputSeconds.
// REQUIRES (each Generate*): Validate(limit) succeeds (else UsageError).

// N requests: one P-token prefix, then each a unique suffix. With
// kPrefixFirst the prefix is first sent alone (a warm-up, one output
// token) and the N requests arrive after it finished: its prompt's tail
// checkpoint then lies inside the prefix, where the fan-out can resume.
enum class FanOutWarmup { kNone, kPrefixFirst };
struct FanOutOptions {
  std::uint32_t num_requests = 64;
  std::uint32_t prefix_tokens = 16384;
  std::uint32_t suffix_tokens = 512;
  std::uint32_t output_tokens = 128;
  double interval_s = 0.0;  // between arrivals
  FanOutWarmup warmup = FanOutWarmup::kNone;
  std::uint64_t seed = 1;

  [[nodiscard]] Result<void> Validate(
      std::optional<std::size_t> limit = std::nullopt) const;
};
std::vector<SimRequest> GenerateFanOut(
    const FanOutOptions& options,
    std::optional<std::size_t> limit = std::nullopt);

// Agent sessions: turn 1 is a system prompt and a message; turn t + 1 is
// turn t's prompt, its output and a new message, arriving think_s after
// turn t finished. Sessions start interval_s apart. Requests go turn by
// turn: turn 1 of every session, then turn 2, ...
struct AgentSessionOptions {
  std::uint32_t num_sessions = 16;
  std::uint32_t turns = 8;
  std::uint32_t system_tokens = 4096;  // shared by every session
  std::uint32_t message_tokens = 1024;
  std::uint32_t output_tokens = 256;
  double interval_s = 1.0;
  double think_s = 2.0;
  std::uint64_t seed = 1;

  [[nodiscard]] Result<void> Validate(
      std::optional<std::size_t> limit = std::nullopt) const;
};
std::vector<SimRequest> GenerateAgentSessions(
    const AgentSessionOptions& options,
    std::optional<std::size_t> limit = std::nullopt);

// Long documents, each asked several short questions: question q of
// document d is the document followed by a unique question. Questions of
// all documents interleave, interval_s apart.
struct NeedleOptions {
  std::uint32_t num_documents = 2;
  std::uint32_t document_tokens = 65536;
  std::uint32_t questions_per_document = 16;
  std::uint32_t question_tokens = 64;
  std::uint32_t output_tokens = 64;
  double interval_s = 1.0;
  std::uint64_t seed = 1;

  [[nodiscard]] Result<void> Validate(
      std::optional<std::size_t> limit = std::nullopt) const;
};
std::vector<SimRequest> GenerateNeedle(
    const NeedleOptions& options,
    std::optional<std::size_t> limit = std::nullopt);

// The same prompt N times, each arriving after the previous one finished.
struct RepeatOptions {
  std::uint32_t num_requests = 2;
  std::uint32_t prompt_tokens = 32768;
  std::uint32_t output_tokens = 16;
  std::uint64_t seed = 1;

  [[nodiscard]] Result<void> Validate(
      std::optional<std::size_t> limit = std::nullopt) const;
};
std::vector<SimRequest> GenerateRepeats(
    const RepeatOptions& options,
    std::optional<std::size_t> limit = std::nullopt);

}  // namespace hkv
