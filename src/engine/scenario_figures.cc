// The figures of the named scenarios (hkv/scenarios.h), read off a run's
// recorded steps.
#include <algorithm>
#include <string>

#include "hkv/scenarios.h"

namespace hkv {
namespace {

// Time to first token of request `i`: the steps from its arrival to the one
// that produced its first token, and the request's serving time.
ScenarioFigure Ttft(const SimulationResult& r, const CostModel& cost,
                    std::size_t i, std::string name) {
  const RequestMetrics& m = r.per_request[i];
  return {.name = std::move(name),
          .value = SpanSeconds(r, cost, m.arrival_step, m.first_token_step) +
                   cost.serving_s,
          .first_step = m.arrival_step,
          .last_step = m.first_token_step,
          .serving = 1.0};
}

ScenarioFigure Count(std::string name, double value) {
  return {.name = std::move(name), .value = value};
}

// Mean and largest TTFT of requests [first, end).
void TtftSummary(const SimulationResult& r, const CostModel& cost,
                 std::size_t first, std::vector<ScenarioFigure>& out,
                 const std::string& prefix) {
  double sum = 0.0;
  double most = 0.0;
  for (std::size_t i = first; i < r.per_request.size(); ++i) {
    const double t = Ttft(r, cost, i, "").value;
    sum += t;
    most = std::max(most, t);
  }
  const auto n = static_cast<double>(r.per_request.size() - first);
  out.push_back(Count(prefix + "mean_s", n > 0 ? sum / n : 0.0));
  out.push_back(Count(prefix + "max_s", most));
}

// The cell: from the first step after every context is cached, until
// `seconds` have passed (or the run ends).
void Cell(const Scenario& s, const SimulationResult& r, const CostModel& cost,
          std::vector<ScenarioFigure>& out) {
  std::uint64_t first = 0;
  if (s.context_tokens > 0) {
    for (std::uint32_t c = 0; c < s.concurrency; ++c) {
      first = std::max(first, r.per_request[c].finish_step + 1);
    }
  }
  double seconds = 0.0;
  double tokens = 0.0;
  std::uint64_t last = first;
  for (std::uint64_t i = first; i < r.step_shapes.size(); ++i) {
    seconds += StepSeconds(cost, r.step_shapes[i]);
    tokens += static_cast<double>(r.step_shapes[i].sampled_tokens);
    last = i;
    if (seconds >= s.seconds) break;
  }
  const bool any = first < r.step_shapes.size() && seconds > 0.0;
  out.push_back({.name = "decode_tokens_per_s",
                 .value = any ? tokens / seconds : 0.0,
                 .tokens = tokens,
                 .first_step = any ? first : 1,
                 .last_step = any ? last : 0});
  out.push_back({.name = "cell_s",
                 .value = seconds,
                 .first_step = any ? first : 1,
                 .last_step = any ? last : 0});
}

std::size_t Warmups(const Scenario& s) {
  return s.kind == ScenarioKind::kNeedle && s.warmup ? s.documents : 0;
}

}  // namespace

double SpanSeconds(const SimulationResult& result, const CostModel& cost,
                   std::uint64_t first, std::uint64_t last) {
  double seconds = 0.0;
  for (std::uint64_t i = first; i <= last && i < result.step_shapes.size();
       ++i) {
    seconds += StepSeconds(cost, result.step_shapes[i]);
  }
  return seconds;
}

Result<std::vector<ScenarioFigure>> ScenarioFigures(const Scenario& s,
                                                    const SimulationResult& r,
                                                    const CostModel& cost) {
  if (r.step_shapes.size() != r.steps || r.steps == 0) {
    return Fail(ErrorCode::kInvalidArgument,
                "scenario figures need the run's recorded steps "
                "(SimulationOptions::record_steps)");
  }
  if (r.per_request.size() != GenerateScenario(s).size()) {
    return Fail(ErrorCode::kInvalidArgument,
                "the run is not of this scenario: " +
                    std::to_string(r.per_request.size()) + " requests");
  }
  std::vector<ScenarioFigure> out;
  switch (s.kind) {
    case ScenarioKind::kColdPrefill: {
      ScenarioFigure ttft = Ttft(r, cost, 0, "ttft_s");
      ScenarioFigure rate = ttft;
      rate.name = "prefill_tokens_per_s";
      rate.tokens = s.prompt_tokens;
      rate.value = ttft.value > 0.0 ? rate.tokens / ttft.value : 0.0;
      out = {rate, ttft};
      break;
    }
    case ScenarioKind::kResend:
      out = {Ttft(r, cost, 0, "ttft_first_s"),
             Ttft(r, cost, 1, "ttft_second_s"),
             Count("reused_tokens", r.per_request[1].reused_tokens),
             Count("copies", static_cast<double>(r.copies))};
      break;
    case ScenarioKind::kSharedPrefix:
    case ScenarioKind::kNeedle:
      out.push_back(
          Count("reused_tokens", static_cast<double>(r.reused_tokens)));
      TtftSummary(r, cost, Warmups(s), out, "ttft_");
      break;
    case ScenarioKind::kDecodeCell:
      Cell(s, r, cost, out);
      break;
  }
  return out;
}

}  // namespace hkv
