// The named scenarios of hkv/scenarios.h: parsing and generation.
#include "hkv/scenarios.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "hkv/limits.h"
#include "traces/synthetic_tokens.h"

namespace hkv {
namespace {

constexpr struct {
  std::string_view name;
  ScenarioKind kind;
} kKinds[] = {{"cold-prefill", ScenarioKind::kColdPrefill},
              {"resend", ScenarioKind::kResend},
              {"shared-prefix", ScenarioKind::kSharedPrefix},
              {"needle", ScenarioKind::kNeedle},
              {"decode-cell", ScenarioKind::kDecodeCell}};

// The slowest decode a cell is generated for: a stream that emits an output
// token every 2 ms never runs out of turns within the cell.
constexpr double kFastestOutputS = 0.002;

Result<void> Bad(std::string_view kind, const std::string& problem) {
  return Fail(ErrorCode::kInvalidArgument,
              "scenario " + std::string(kind) + ": " + problem);
}

// key=value pairs; the positional part is not allowed.
Result<std::map<std::string, std::string>> Pairs(std::string_view kind,
                                                 std::string_view args) {
  std::map<std::string, std::string> out;
  while (!args.empty()) {
    const std::size_t comma = args.find(',');
    const std::string_view item = args.substr(0, comma);
    args = comma == std::string_view::npos ? "" : args.substr(comma + 1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return tl::unexpected(
          Bad(kind, "\"" + std::string(item) + "\" is not key=value").error());
    }
    if (!out.emplace(item.substr(0, eq), item.substr(eq + 1)).second) {
      return tl::unexpected(
          Bad(kind, std::string(item.substr(0, eq)) + " given twice").error());
    }
  }
  return out;
}

// Takes the keys of a scenario into its fields.
class Fields {
 public:
  Fields(std::string_view kind, std::map<std::string, std::string> pairs)
      : kind_(kind), pairs_(std::move(pairs)) {}

  // A whole number in [min, max].
  Fields& Count(const char* key, std::uint32_t& field, std::uint64_t min,
                std::uint64_t max) {
    auto it = pairs_.find(key);
    if (it == pairs_.end() || !error_.empty()) return *this;
    std::uint64_t v = 0;
    const std::string& text = it->second;
    const auto [end, ec] =
        std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < min ||
        v > max) {
      error_ = std::string(key) + "=" + text + " is not a whole number in [" +
               std::to_string(min) + ", " + std::to_string(max) + "]";
    }
    field = static_cast<std::uint32_t>(v);
    pairs_.erase(it);
    return *this;
  }

  Fields& Seconds(const char* key, double& field) {
    auto it = pairs_.find(key);
    if (it == pairs_.end() || !error_.empty()) return *this;
    char* end = nullptr;
    field = std::strtod(it->second.c_str(), &end);
    if (*end != 0 || !(field > 0.0) || field > 86400.0) {
      error_ = std::string(key) + "=" + it->second +
               " is not a number of seconds in (0, 86400]";
    }
    pairs_.erase(it);
    return *this;
  }

  Fields& Seed(std::uint64_t& seed) {
    std::uint32_t low = 1;
    Count("seed", low, 0, UINT32_MAX);
    seed = low;
    return *this;
  }

  Result<void> Done() const {
    if (!error_.empty()) return Bad(kind_, error_);
    if (pairs_.empty()) return {};
    return Bad(kind_, "unknown argument \"" + pairs_.begin()->first + "\"");
  }

 private:
  std::string_view kind_;
  std::map<std::string, std::string> pairs_;
  std::string error_;
};

constexpr std::uint64_t kMaxTokens = kMaxTokensPerRequest;
constexpr std::uint64_t kMaxRequests = kMaxRequestsPerWorkload;

Result<void> TakeFields(Scenario& s, Fields& f) {
  switch (s.kind) {
    case ScenarioKind::kColdPrefill:
    case ScenarioKind::kResend:
      f.Count("prompt", s.prompt_tokens, 1, kMaxTokens - 1);
      break;
    case ScenarioKind::kSharedPrefix:
      f.Count("streams", s.streams, 1, kMaxRequests);
      f.Count("prefix", s.prefix_tokens, 1, kMaxTokens / 2);
      f.Count("suffix", s.suffix_tokens, 1, kMaxTokens / 2);
      break;
    case ScenarioKind::kNeedle: {
      std::uint32_t warmup = 1;
      f.Count("documents", s.documents, 1, kMaxRequests / 2);
      f.Count("document", s.document_tokens, 1, kMaxTokens / 2);
      f.Count("questions", s.questions, 1, kMaxRequests / 2);
      f.Count("question", s.question_tokens, 1, kMaxTokens / 2);
      f.Count("warmup", warmup, 0, 1);
      s.warmup = warmup == 1;
      break;
    }
    case ScenarioKind::kDecodeCell:
      f.Count("concurrency", s.concurrency, 1, 4096);
      f.Count("context", s.context_tokens, 0, kMaxTokens / 2);
      f.Seconds("seconds", s.seconds);
      f.Count("turn", s.turn_tokens, 1, kMaxTokens / 4);
      f.Count("turns", s.turns, 0, 100000);
      break;
  }
  f.Count("output", s.output_tokens, 1, kMaxTokens / 4);
  f.Seed(s.seed);
  return f.Done();
}

// Segment ids from the seed; bit 63 set like the generators' (a different
// seed gives unrelated content).
class Ids {
 public:
  explicit Ids(std::uint64_t seed)
      : base_(internal::SplitMix64(seed ^ 0x5ce7a110ULL)) {}
  Segment Next(std::uint32_t length) {
    return {.id = internal::SplitMix64(base_ + counter_++) |
                  (std::uint64_t{1} << 63),
            .length = length};
  }

 private:
  std::uint64_t base_;
  std::uint64_t counter_ = 0;
};

std::uint32_t Outputs(const Scenario& s) {
  if (s.output_tokens != 0) return s.output_tokens;
  switch (s.kind) {
    case ScenarioKind::kSharedPrefix:
      return 128;
    case ScenarioKind::kNeedle:
      return 64;
    case ScenarioKind::kDecodeCell:
      return 256;
    default:
      return 1;
  }
}

SimRequest Make(Ids& ids, std::vector<Segment> prompt, std::uint32_t outputs) {
  return {.prompt = std::move(prompt),
          .output_length = outputs,
          .output_id = ids.Next(1).id};
}

std::vector<SimRequest> Needle(const Scenario& s, Ids& ids) {
  std::vector<Segment> docs;
  std::vector<SimRequest> out;
  for (std::uint32_t d = 0; d < s.documents; ++d) {
    docs.push_back(ids.Next(s.document_tokens));
    if (s.warmup) out.push_back(Make(ids, {docs.back()}, 1));
  }
  for (std::uint32_t q = 0; q < s.questions; ++q) {
    for (std::uint32_t d = 0; d < s.documents; ++d) {
      out.push_back(
          Make(ids, {docs[d], ids.Next(s.question_tokens)}, Outputs(s)));
      if (s.warmup) out.back().after = d;
    }
  }
  return out;
}

std::uint32_t DecodeTurns(const Scenario& s) {
  if (s.turns != 0) return s.turns;
  return static_cast<std::uint32_t>(
             std::ceil(s.seconds / (kFastestOutputS * Outputs(s)))) +
         1;
}

std::uint64_t RequestCount(const Scenario& s) {
  const auto n = [](std::uint64_t v) { return v; };
  switch (s.kind) {
    case ScenarioKind::kColdPrefill:
      return 1;
    case ScenarioKind::kResend:
      return 2;
    case ScenarioKind::kSharedPrefix:
      return s.streams;
    case ScenarioKind::kNeedle:
      return n(s.documents) * (n(s.questions) + (s.warmup ? 1 : 0));
    case ScenarioKind::kDecodeCell:
      return n(s.concurrency) *
             (n(DecodeTurns(s)) + (s.context_tokens > 0 ? 1 : 0));
  }
  return 0;
}

// Warm-ups (each stream's context alone) first, then turn t of every
// stream, each after the stream's previous request.
std::vector<SimRequest> DecodeCell(const Scenario& s, Ids& ids) {
  const std::uint32_t outputs = Outputs(s);
  const std::uint32_t turns = DecodeTurns(s);
  std::vector<SimRequest> out;
  std::vector<Segment> contexts;
  std::vector<std::size_t> previous(s.concurrency);
  for (std::uint32_t c = 0; c < s.concurrency; ++c) {
    contexts.push_back(ids.Next(s.context_tokens));
    if (s.context_tokens == 0) continue;
    previous[c] = out.size();
    out.push_back(Make(ids, {contexts[c]}, 1));
  }
  for (std::uint32_t t = 0; t < turns; ++t) {
    for (std::uint32_t c = 0; c < s.concurrency; ++c) {
      std::vector<Segment> prompt;
      if (s.context_tokens > 0) prompt.push_back(contexts[c]);
      prompt.push_back(ids.Next(s.turn_tokens));
      SimRequest r = Make(ids, std::move(prompt), outputs);
      if (s.context_tokens > 0 || t > 0) r.after = previous[c];
      previous[c] = out.size();
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace

bool IsScenarioName(std::string_view kind) {
  return std::any_of(std::begin(kKinds), std::end(kKinds),
                     [&](const auto& k) { return k.name == kind; });
}

Result<Scenario> ParseScenario(std::string_view spec) {
  const std::size_t colon = spec.find(':');
  const std::string_view kind = spec.substr(0, colon);
  const auto* entry =
      std::find_if(std::begin(kKinds), std::end(kKinds),
                   [&](const auto& k) { return k.name == kind; });
  if (entry == std::end(kKinds)) {
    return Fail(ErrorCode::kInvalidArgument,
                "unknown scenario \"" + std::string(kind) +
                    "\" (cold-prefill, resend, shared-prefix, needle, "
                    "decode-cell)");
  }
  Scenario s{.kind = entry->kind};
  Result<std::map<std::string, std::string>> pairs = Pairs(
      kind, colon == std::string_view::npos ? "" : spec.substr(colon + 1));
  if (!pairs) return tl::unexpected(pairs.error());
  Fields fields(kind, std::move(*pairs));
  if (Result<void> ok = TakeFields(s, fields); !ok) {
    return tl::unexpected(ok.error());
  }
  const std::uint64_t requests = RequestCount(s);
  if (requests > kMaxRequestsPerWorkload) {
    return Fail(ErrorCode::kInvalidArgument,
                "scenario " + std::string(kind) + ": " +
                    std::to_string(requests) +
                    " requests exceed the limit of " +
                    std::to_string(kMaxRequestsPerWorkload));
  }
  return s;
}

std::vector<SimRequest> GenerateScenario(const Scenario& s) {
  Ids ids(s.seed);
  std::vector<SimRequest> out;
  switch (s.kind) {
    case ScenarioKind::kColdPrefill:
      out.push_back(Make(ids, {ids.Next(s.prompt_tokens)}, Outputs(s)));
      break;
    case ScenarioKind::kResend: {
      const Segment prompt = ids.Next(s.prompt_tokens);
      out.push_back(Make(ids, {prompt}, Outputs(s)));
      out.push_back(Make(ids, {prompt}, Outputs(s)));
      out.back().after = 0;
      break;
    }
    case ScenarioKind::kSharedPrefix: {
      const Segment prefix = ids.Next(s.prefix_tokens);
      for (std::uint32_t i = 0; i < s.streams; ++i) {
        out.push_back(
            Make(ids, {prefix, ids.Next(s.suffix_tokens)}, Outputs(s)));
      }
      break;
    }
    case ScenarioKind::kNeedle:
      return Needle(s, ids);
    case ScenarioKind::kDecodeCell:
      return DecodeCell(s, ids);
  }
  return out;
}

std::uint32_t ScenarioConcurrency(const Scenario& s) {
  switch (s.kind) {
    case ScenarioKind::kSharedPrefix:
      return s.streams;
    case ScenarioKind::kDecodeCell:
      return s.concurrency;
    case ScenarioKind::kNeedle:
      return s.documents * s.questions;
    default:
      return 1;
  }
}

}  // namespace hkv
