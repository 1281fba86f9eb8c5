// The simulator's cost model: how long one engine step takes, as a linear
// function of what the step computes. The times it gives are modelled, not
// measured; the presets say which published figures they are fitted to.
//
//   step seconds = step_s                                   (if anything runs)
//                + prefill_token_s     x prefill tokens
//                + prefill_attention_s x prefill attention pairs
//                + decode_token_s      x decode tokens (drafts included)
//                + decode_context_s    x decode context tokens
//
// A prefill chunk computing positions [s, e) of a request adds e - s prefill
// tokens and sum_{p=s}^{e-1} (p + 1) attention pairs (each token attends to
// itself and everything before it). A decode of n tokens (the last sampled
// token plus drafts) at c computed tokens adds n decode tokens and c + n
// context tokens.
//
// Thread-safety: value types and pure functions.
//
// Example:
//   Result<CostModel> cost = CostModelPreset("glm53-flash-gb10x4");
//   double s = StepSeconds(*cost, {.prefill_tokens = 8192,
//                                  .prefill_attention_pairs =
//                                      PrefillAttentionPairs(0, 8192)});
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/result.h"

namespace hkv {

struct CostModel {
  std::string name = "custom";
  double step_s = 0.0;               // fixed cost of a step that runs
  double prefill_token_s = 0.0;      // per prefill token
  double prefill_attention_s = 0.0;  // per (query, key) pair of prefill
  double decode_token_s = 0.0;       // per decode token, drafts included
  double decode_context_s = 0.0;     // per context token a decode reads

  // kInvalidArgument naming a coefficient that is negative, NaN or above
  // kMaxInputSeconds.
  [[nodiscard]] Result<void> Validate() const;
};

// What one step computes, summed over its requests.
struct StepShape {
  std::uint64_t prefill_tokens = 0;
  double prefill_attention_pairs = 0.0;
  std::uint64_t decode_tokens = 0;
  std::uint64_t decode_context_tokens = 0;

  bool IsEmpty() const { return prefill_tokens == 0 && decode_tokens == 0; }
};

// sum_{p=start}^{end-1} (p + 1). REQUIRES: start <= end.
double PrefillAttentionPairs(std::uint64_t start, std::uint64_t end);

// The modelled duration of a step of `shape`; 0 for an empty step.
double StepSeconds(const CostModel& model, const StepShape& shape);

// The preset called `name`; kNotFound listing the presets otherwise.
[[nodiscard]] Result<CostModel> CostModelPreset(std::string_view name);

// Names of the presets, for help texts.
std::vector<std::string> CostModelPresetNames();

// Sets the coefficient called `key` (a member name above, e.g.
// "decode_context_s"). kInvalidArgument for an unknown key or a value that
// is negative, NaN or above kMaxInputSeconds (so modelled times stay
// finite).
[[nodiscard]] Result<void> SetCostCoefficient(CostModel& model,
                                              std::string_view key,
                                              double value);

// Applies a JSON object of coefficients ({"decode_token_s": 3e-4, ...}, and
// optionally "name") over `model`. kInvalidArgument for text that is not a
// JSON object, an unknown key or a value that is not a number.
[[nodiscard]] Result<CostModel> ApplyCostJson(CostModel model,
                                              std::string_view json_text);

}  // namespace hkv
