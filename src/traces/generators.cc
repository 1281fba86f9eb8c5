// The seeded workload generators of hkv/workload.h.
#include <algorithm>
#include <string>
#include <utility>

#include "check.h"
#include "hkv/limits.h"
#include "hkv/workload.h"
#include "traces/number_text.h"
#include "traces/synthetic_tokens.h"

namespace hkv {
namespace {

// Segment ids from a seed: bit 63 set, clear of trace hash ids and trace
// output ids; a different seed gives unrelated content.
class IdSource {
 public:
  explicit IdSource(std::uint64_t seed) : base_(internal::SplitMix64(seed)) {}
  std::uint64_t Next() {
    return internal::SplitMix64(base_ + counter_++) | (std::uint64_t{1} << 63);
  }
  // Skips `n` ids, as if Next() ran n times.
  void Skip(std::uint64_t n) { counter_ += n; }

 private:
  std::uint64_t base_;
  std::uint64_t counter_ = 0;
};

// A request of `prompt` arriving at `arrival_s`, with fresh outputs.
SimRequest Make(IdSource& ids, std::vector<Segment> prompt,
                std::uint32_t output_tokens, double arrival_s) {
  return {.arrival_s = arrival_s,
          .prompt = std::move(prompt),
          .output_length = output_tokens,
          .output_id = ids.Next()};
}

using Limit = std::optional<std::size_t>;

Result<void> Invalid(std::string message) {
  return Fail(ErrorCode::kInvalidArgument, std::move(message));
}

// The requests to make: `total`, cut to `limit`.
std::uint64_t Wanted(std::uint64_t total, Limit limit) {
  return limit ? std::min<std::uint64_t>(total, *limit) : total;
}

// `count` requests, `what` saying how they come about ("requests 5").
Result<void> CheckCount(std::uint64_t count, const std::string& what) {
  if (count <= kMaxRequestsPerWorkload) return {};
  return Invalid(
      what + ": " + std::to_string(count) + " requests exceed the limit of " +
      std::to_string(kMaxRequestsPerWorkload) + " requests per workload");
}

// The longest request: `prompt` tokens named by `what`, then `output`.
Result<void> CheckRequest(std::uint64_t prompt, std::uint64_t output,
                          const std::string& what) {
  if (prompt == 0) return Invalid(what + " must be at least 1 token, got 0");
  if (output == 0) return Invalid("output must be at least 1 token, got 0");
  if (prompt + output <= kMaxTokensPerRequest) return {};
  return Invalid(what + " + output = " + std::to_string(prompt + output) +
                 " tokens exceed the limit of " +
                 std::to_string(kMaxTokensPerRequest) + " tokens per request");
}

// `seconds` of argument `name`, and `steps` of them in a row.
Result<void> CheckTime(double seconds, const std::string& name,
                       std::uint64_t steps) {
  const std::string bound = internal::ShortNumber(kMaxInputSeconds);
  if (!(seconds >= 0.0 && seconds <= kMaxInputSeconds)) {
    return Invalid(name + " must be in [0, " + bound + "] s, got " +
                   internal::ShortNumber(seconds));
  }
  if (seconds * static_cast<double>(steps) > kMaxInputSeconds) {
    return Invalid(name + " " + internal::ShortNumber(seconds) + " s x " +
                   std::to_string(steps) + " exceeds " + bound + " s");
  }
  return {};
}

void RequireValid(const Result<void>& valid) {
  HKV_REQUIRE(valid.has_value(), valid ? "" : valid.error().message);
}

}  // namespace

Result<void> FanOutOptions::Validate(Limit limit) const {
  const bool warm = warmup == FanOutWarmup::kPrefixFirst;
  const std::uint64_t n = Wanted(std::uint64_t{num_requests} + warm, limit);
  if (Result<void> ok =
          CheckCount(n, "requests=" + std::to_string(num_requests));
      !ok) {
    return ok;
  }
  if (warm && prefix_tokens == 0) {
    return Invalid("prefix must be at least 1 token with warmup=1, got 0");
  }
  if (Result<void> ok =
          CheckRequest(std::uint64_t{prefix_tokens} + suffix_tokens,
                       output_tokens, "prefix + suffix");
      !ok) {
    return ok;
  }
  return CheckTime(interval_s, "interval", n);
}

Result<void> AgentSessionOptions::Validate(Limit limit) const {
  const std::uint64_t n = Wanted(std::uint64_t{num_sessions} * turns, limit);
  if (Result<void> ok = CheckCount(n, "sessions x turns"); !ok) return ok;
  if (n == 0) return {};
  // The last turn made: turns go one after the other over all sessions.
  const std::uint64_t last_turn = (n + num_sessions - 1) / num_sessions;
  if (Result<void> ok =
          CheckRequest(system_tokens + last_turn * message_tokens +
                           (last_turn - 1) * output_tokens,
                       output_tokens, "system + turns x (message + output)");
      !ok) {
    return ok;
  }
  // Turn t's prompt holds 2t segments (the system prompt, t messages, t - 1
  // outputs); n requests fill `full` turns of every session and part of
  // the next.
  const std::uint64_t sessions = std::min<std::uint64_t>(num_sessions, n);
  const std::uint64_t full = n / sessions;
  const std::uint64_t segments =
      sessions * full * (full + 1) + (n % sessions) * 2 * (full + 1);
  if (segments > kMaxSegmentsPerWorkload) {
    return Invalid("sessions x turns: " + std::to_string(segments) +
                   " prompt segments exceed the limit of " +
                   std::to_string(kMaxSegmentsPerWorkload) +
                   " per workload (each turn repeats the earlier ones)");
  }
  if (Result<void> ok = CheckTime(interval_s, "interval", num_sessions); !ok) {
    return ok;
  }
  return CheckTime(think_s, "think", 1);
}

Result<void> NeedleOptions::Validate(Limit limit) const {
  const std::uint64_t n =
      Wanted(std::uint64_t{num_documents} * questions_per_document, limit);
  if (Result<void> ok = CheckCount(n, "documents x questions"); !ok) return ok;
  if (Result<void> ok =
          CheckRequest(std::uint64_t{document_tokens} + question_tokens,
                       output_tokens, "document + question");
      !ok) {
    return ok;
  }
  return CheckTime(interval_s, "interval", n);
}

Result<void> RepeatOptions::Validate(Limit limit) const {
  const std::uint64_t n = Wanted(num_requests, limit);
  if (Result<void> ok =
          CheckCount(n, "requests=" + std::to_string(num_requests));
      !ok) {
    return ok;
  }
  return CheckRequest(prompt_tokens, output_tokens, "prompt");
}

std::vector<SimRequest> GenerateFanOut(const FanOutOptions& options,
                                       Limit limit) {
  RequireValid(options.Validate(limit));
  IdSource ids(options.seed);
  const Segment prefix{.id = ids.Next(), .length = options.prefix_tokens};
  const bool warmup = options.warmup == FanOutWarmup::kPrefixFirst;
  const std::uint64_t n =
      Wanted(std::uint64_t{options.num_requests} + warmup, limit);
  std::vector<SimRequest> out;
  out.reserve(n);
  if (warmup && n > 0) out.push_back(Make(ids, {prefix}, 1, 0.0));
  for (std::uint32_t i = 0; out.size() < n; ++i) {
    out.push_back(
        Make(ids, {prefix, {.id = ids.Next(), .length = options.suffix_tokens}},
             options.output_tokens, i * options.interval_s));
    if (warmup) {
      out.back().after = 0;
      out.back().delay_s = i * options.interval_s;
    }
  }
  return out;
}

std::vector<SimRequest> GenerateAgentSessions(
    const AgentSessionOptions& options, Limit limit) {
  RequireValid(options.Validate(limit));
  IdSource ids(options.seed);
  const Segment system{.id = ids.Next(), .length = options.system_tokens};
  const std::uint64_t n =
      Wanted(std::uint64_t{options.num_sessions} * options.turns, limit);
  std::vector<SimRequest> out;
  out.reserve(n);
  // Turn t of every session, then turn t + 1. A later turn arrives when its
  // predecessor finished; its arrival_s only keeps the list ordered. Only
  // sessions with a request made need their last index.
  std::vector<std::size_t> previous(
      std::min<std::uint64_t>(options.num_sessions, n));
  for (std::uint32_t t = 0; out.size() < n; ++t) {
    for (std::uint32_t s = 0; s < options.num_sessions && out.size() < n; ++s) {
      std::vector<Segment> prompt = {system};
      double arrival = s * options.interval_s;
      if (t > 0) {
        const SimRequest& last = out[previous[s]];
        prompt = last.prompt;
        prompt.push_back({.id = last.output_id, .length = last.output_length});
        arrival = options.num_sessions * options.interval_s;
      }
      prompt.push_back({.id = ids.Next(), .length = options.message_tokens});
      SimRequest r =
          Make(ids, std::move(prompt), options.output_tokens, arrival);
      if (t > 0) {
        r.after = previous[s];
        r.delay_s = options.think_s;
      }
      previous[s] = out.size();
      out.push_back(std::move(r));
    }
  }
  return out;
}

std::vector<SimRequest> GenerateNeedle(const NeedleOptions& options,
                                       Limit limit) {
  RequireValid(options.Validate(limit));
  IdSource ids(options.seed);
  const std::uint64_t n = Wanted(
      std::uint64_t{options.num_documents} * options.questions_per_document,
      limit);
  // Questions interleave over the documents: only the first n are asked.
  std::vector<Segment> documents;
  const std::uint64_t asked = std::min<std::uint64_t>(options.num_documents, n);
  for (std::uint64_t d = 0; d < asked; ++d) {
    documents.push_back({.id = ids.Next(), .length = options.document_tokens});
  }
  ids.Skip(options.num_documents - asked);  // the same ids as without a limit
  std::vector<SimRequest> out;
  out.reserve(n);
  while (out.size() < n) {
    for (const Segment& document : documents) {
      if (out.size() == n) break;
      const double arrival =
          static_cast<double>(out.size()) * options.interval_s;
      out.push_back(Make(
          ids,
          {document, {.id = ids.Next(), .length = options.question_tokens}},
          options.output_tokens, arrival));
    }
  }
  return out;
}

std::vector<SimRequest> GenerateRepeats(const RepeatOptions& options,
                                        Limit limit) {
  RequireValid(options.Validate(limit));
  IdSource ids(options.seed);
  const Segment prompt{.id = ids.Next(), .length = options.prompt_tokens};
  const std::uint64_t n = Wanted(options.num_requests, limit);
  std::vector<SimRequest> out;
  out.reserve(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    SimRequest r = Make(ids, {prompt}, options.output_tokens, 0.0);
    if (i > 0) r.after = i - 1;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace hkv
