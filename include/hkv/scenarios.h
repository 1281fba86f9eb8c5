// Named scenarios: seeded workloads that stand for the measurements hkv is
// calibrated against (docs/calibration.md), each with the figures it
// reports. `hkv simulate --workload KIND:ARGS` runs them:
//
//   cold-prefill:prompt=P        one request of P tokens on an empty cache
//   resend:prompt=P              the same request twice, the second after the
//                                first finished (TTFT of each, reuse)
//   shared-prefix:streams=N,prefix=P,suffix=S
//                                N requests sharing a P-token prefix, each
//                                with its own S-token suffix, sent together
//   needle:document=D,question=Q a Q-token question riding a D-token document
//                                that was sent (and cached) before it
//   decode-cell:concurrency=C,context=X,seconds=30
//                                C closed-loop streams, each re-sending its
//                                X-token context with a short new turn and
//                                decoding; aggregate decode tokens/s over a
//                                cell of `seconds` once every context is
//                                cached (the calibration file's decode matrix)
//
// Figures are read off the run's recorded steps (SimulationOptions::
// record_steps) under a cost model, so that calibration can re-price a run:
// a timed figure is a token count over the seconds of a span of steps, or
// those seconds.
//
// Thread-safety: value types and pure functions.
//
// Example:
//   Result<Scenario> s = ParseScenario("cold-prefill:prompt=32768");
//   std::vector<SimRequest> w = GenerateScenario(*s);
//   // simulate w with ScenarioConcurrency(*s) and record_steps, then
//   std::vector<ScenarioFigure> f = ScenarioFigures(*s, result, cost);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/cost_model.h"
#include "hkv/result.h"
#include "hkv/simulator.h"
#include "hkv/workload.h"

namespace hkv {

enum class ScenarioKind {
  kColdPrefill,
  kResend,
  kSharedPrefix,
  kNeedle,
  kDecodeCell
};

struct Scenario {
  ScenarioKind kind = ScenarioKind::kColdPrefill;
  std::uint32_t prompt_tokens = 32768;  // cold-prefill, resend
  std::uint32_t streams = 16;           // shared-prefix
  std::uint32_t prefix_tokens = 16384;  // shared-prefix
  std::uint32_t suffix_tokens = 512;    // shared-prefix
  std::uint32_t documents = 1;          // needle
  std::uint32_t document_tokens = 65536;
  std::uint32_t questions = 1;  // needle: per document
  std::uint32_t question_tokens = 64;
  bool warmup = true;                    // needle: documents sent first
  std::uint32_t concurrency = 1;         // decode-cell
  std::uint32_t context_tokens = 32768;  // decode-cell
  double seconds = 30.0;                 // decode-cell
  std::uint32_t turn_tokens = 64;        // decode-cell: each new turn
  std::uint32_t turns = 0;               // decode-cell: per stream; 0: enough
  // Outputs per request (0: the kind's default: 1 for cold-prefill and
  // resend, 128 for shared-prefix, 64 for needle, 256 for decode-cell).
  std::uint32_t output_tokens = 0;
  std::uint64_t seed = 1;
};

// Whether `kind` names a scenario (the part of a workload before ':').
bool IsScenarioName(std::string_view kind);

// Parses "KIND[:key=value,...]". kInvalidArgument naming the unknown kind or
// key, or the key whose value is not a number in range (token counts within
// kMaxTokensPerRequest, the workload within kMaxRequestsPerWorkload).
[[nodiscard]] Result<Scenario> ParseScenario(std::string_view spec);

// The scenario's requests. Deterministic in the scenario (its seed picks the
// content).
std::vector<SimRequest> GenerateScenario(const Scenario& scenario);

// Requests kept in the system (closed loop): the streams of shared-prefix,
// the concurrency of decode-cell, else 1.
std::uint32_t ScenarioConcurrency(const Scenario& scenario);

struct ScenarioFigure {
  std::string name;  // e.g. "prefill_tokens_per_s"
  double value = 0.0;
  // Timed figures: value = tokens / seconds, or those seconds when tokens
  // is 0, where seconds are those of steps [first_step, last_step] plus
  // `serving` requests' serving time. Counts: first_step > last_step.
  double tokens = 0.0;
  std::uint64_t first_step = 1;
  std::uint64_t last_step = 0;
  // Requests whose serving time (CostModel::serving_s) the seconds include:
  // 1 for a TTFT, 0 for a span of steps alone.
  double serving = 0.0;

  bool IsTimed() const { return first_step <= last_step; }
};

// The scenario's figures from a run of GenerateScenario(scenario), steps
// priced by `cost`. cold-prefill: prefill_tokens_per_s, ttft_s. resend:
// ttft_first_s, ttft_second_s, reused_tokens, copies. shared-prefix:
// reused_tokens, ttft_mean_s, ttft_max_s. needle: reused_tokens, ttft_s
// (the questions'). decode-cell: decode_tokens_per_s, cell_s (the cell's
// seconds, short of `seconds` when the run ends first). kInvalidArgument
// when the run has no recorded steps or is not of this scenario.
[[nodiscard]] Result<std::vector<ScenarioFigure>> ScenarioFigures(
    const Scenario& scenario, const SimulationResult& result,
    const CostModel& cost);

// The seconds of steps [first, last] of `result` under `cost`.
double SpanSeconds(const SimulationResult& result, const CostModel& cost,
                   std::uint64_t first, std::uint64_t last);

}  // namespace hkv
