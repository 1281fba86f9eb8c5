// The seeded workload generators of hkv/workload.h.
#include <utility>

#include "hkv/workload.h"
#include "synthetic_tokens.h"

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

}  // namespace

std::vector<SimRequest> GenerateFanOut(const FanOutOptions& options) {
  IdSource ids(options.seed);
  const Segment prefix{.id = ids.Next(), .length = options.prefix_tokens};
  std::vector<SimRequest> out;
  const bool warmup = options.warmup == FanOutWarmup::kPrefixFirst;
  if (warmup) out.push_back(Make(ids, {prefix}, 1, 0.0));
  for (std::uint32_t i = 0; i < options.num_requests; ++i) {
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
    const AgentSessionOptions& options) {
  IdSource ids(options.seed);
  const Segment system{.id = ids.Next(), .length = options.system_tokens};
  std::vector<SimRequest> out;
  // Turn t of every session, then turn t + 1. A later turn arrives when its
  // predecessor finished; its arrival_s only keeps the list ordered.
  std::vector<std::size_t> previous(options.num_sessions);
  for (std::uint32_t t = 0; t < options.turns; ++t) {
    for (std::uint32_t s = 0; s < options.num_sessions; ++s) {
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

std::vector<SimRequest> GenerateNeedle(const NeedleOptions& options) {
  IdSource ids(options.seed);
  std::vector<Segment> documents;
  for (std::uint32_t d = 0; d < options.num_documents; ++d) {
    documents.push_back({.id = ids.Next(), .length = options.document_tokens});
  }
  std::vector<SimRequest> out;
  for (std::uint32_t q = 0; q < options.questions_per_document; ++q) {
    for (const Segment& document : documents) {
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

std::vector<SimRequest> GenerateRepeats(const RepeatOptions& options) {
  IdSource ids(options.seed);
  const Segment prompt{.id = ids.Next(), .length = options.prompt_tokens};
  std::vector<SimRequest> out;
  for (std::uint32_t i = 0; i < options.num_requests; ++i) {
    SimRequest r = Make(ids, {prompt}, options.output_tokens, 0.0);
    if (i > 0) r.after = i - 1;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace hkv
