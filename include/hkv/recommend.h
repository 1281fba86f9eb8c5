// The recommendation of `hkv compare`: which configuration wins on a stated
// objective, by how much, and one sentence of why. A pure function on
// figures the comparison measured (hkv/comparison.h), so that the rule is
// tested on constructed cases.
//
// The rule: among the configurations within `capacity_tolerance` (5 %) of
// the best capacity, the best on the objective; ties go to the higher
// capacity, then to the earlier configuration. The margin is the winner's
// advantage over the runner-up (the next one by the same rule) as a
// fraction of the runner-up's figure.
//
// Thread-safety: value types and pure functions.
//
// Example:
//   std::vector<Candidate> c = {{.label = "256/256/256", .capacity = 1.2,
//                                .ttft_p50_s = 0.8}, ...};
//   Recommendation r = Recommend(c, Objective::kTtftP50);
//   std::cout << r.why << "\n";
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/result.h"

namespace hkv {

enum class Objective { kTtftP50, kTtftP99, kReuse, kCapacity, kDecode };

// "ttft-p50", "ttft-p99", "reuse", "capacity", "decode";
// kInvalidArgument listing them otherwise.
[[nodiscard]] Result<Objective> ParseObjective(std::string_view name);
std::string_view ObjectiveName(Objective objective);

// What the rule weighs of one configuration.
struct Candidate {
  std::string label;
  // Requests at max_model_len at once, as the engine logs it.
  double capacity = 0.0;
  double ttft_p50_s = 0.0;           // on the trace
  double ttft_p99_s = 0.0;           // on the trace
  double reused_tokens = 0.0;        // on the trace
  double decode_tokens_per_s = 0.0;  // the decode cell's
  double cold_prefill_s = 0.0;       // the cold-prefill scenario's TTFT
  std::uint32_t hash_unit = 0;       // the granularity of reuse (tokens)
};

// The figure `objective` ranks by, and whether lower is better.
double ObjectiveValue(const Candidate& candidate, Objective objective);
bool LowerIsBetter(Objective objective);

struct Recommendation {
  std::size_t winner = 0;  // index into the candidates
  // The best other configuration within the tolerance; unset when the
  // winner is the only one.
  std::optional<std::size_t> runner_up = std::nullopt;
  // (runner-up - winner) / runner-up for lower-is-better objectives,
  // (winner - runner-up) / runner-up otherwise; 0 without a runner-up or
  // when the runner-up's figure is 0.
  double margin = 0.0;
  // Every candidate, best first: those within the tolerance by the
  // objective, then the others by capacity.
  std::vector<std::size_t> ranking = {};
  std::size_t eligible = 0;  // the first `eligible` of the ranking
  std::string why = {};      // one sentence
};

// One sentence: how `ours` fares against `theirs` (the reference's best)
// on the objective, with the ratios of reused tokens and capacity.
std::string AgainstTheReference(const Candidate& ours, const Candidate& theirs,
                                Objective objective);

// The part of that sentence after the labels: "13.4 % better on TTFT p50 on
// the trace (2.776 against 3.208), 5.00x its reused tokens, 1.04x its
// capacity".
std::string Gain(const Candidate& ours, const Candidate& theirs,
                 Objective objective);

// Applies the rule. REQUIRES: `candidates` is not empty; 0 <=
// capacity_tolerance < 1. O(n log n).
Recommendation Recommend(std::span<const Candidate> candidates,
                         Objective objective, double capacity_tolerance = 0.05);

}  // namespace hkv
