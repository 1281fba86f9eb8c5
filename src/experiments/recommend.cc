// The recommendation rule of hkv/recommend.h.
#include "hkv/recommend.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>

#include "check.h"

namespace hkv {
namespace {

struct NamedObjective {
  std::string_view name;
  Objective objective;
  std::string_view phrase;  // for the sentence: "lowest TTFT p50"
};
constexpr std::array<NamedObjective, 5> kObjectives = {{
    {"ttft-p50", Objective::kTtftP50, "TTFT p50 on the trace"},
    {"ttft-p99", Objective::kTtftP99, "TTFT p99 on the trace"},
    {"reuse", Objective::kReuse, "reused tokens on the trace"},
    {"capacity", Objective::kCapacity, "capacity"},
    {"decode", Objective::kDecode, "decode tokens/s"},
}};

std::string Format(const char* format, double value) {
  std::array<char, 64> text{};
  std::snprintf(text.data(), text.size(), format, value);
  return text.data();
}

std::string_view Phrase(Objective objective) {
  for (const NamedObjective& o : kObjectives) {
    if (o.objective == objective) return o.phrase;
  }
  return "";
}

// Whether a ranks before b on the objective (ties: capacity, then order).
bool Before(const std::span<const Candidate> c, Objective objective,
            std::size_t a, std::size_t b) {
  const double va = ObjectiveValue(c[a], objective);
  const double vb = ObjectiveValue(c[b], objective);
  if (va != vb) return LowerIsBetter(objective) ? va < vb : va > vb;
  if (c[a].capacity != c[b].capacity) return c[a].capacity > c[b].capacity;
  return a < b;
}

// The sentence: the objective against the runner-up, the capacity against
// the smallest one, the reuse unit, the cold prefill against the fastest.
std::string Why(std::span<const Candidate> c, Objective objective,
                const Recommendation& r, double tolerance) {
  const Candidate& w = c[r.winner];
  std::string why = w.label + ": ";
  if (r.runner_up) {
    why += "best " + std::string(Phrase(objective)) + ", " +
           Format("%.1f", 100.0 * r.margin) + " % ahead of " +
           c[*r.runner_up].label;
  } else {
    why += "the only configuration within " +
           Format("%.0f", 100.0 * tolerance) + " % of the best capacity";
  }
  std::size_t smallest = 0;
  std::size_t fastest = 0;
  for (std::size_t i = 1; i < c.size(); ++i) {
    if (c[i].capacity < c[smallest].capacity) smallest = i;
    if (c[i].cold_prefill_s < c[fastest].cold_prefill_s) fastest = i;
  }
  if (smallest != r.winner && c[smallest].capacity > 0.0) {
    why += "; " + Format("%.1f", w.capacity / c[smallest].capacity) +
           "x the capacity of " + c[smallest].label;
  }
  if (w.hash_unit != 0) {
    why += (smallest != r.winner ? " with " : "; ") +
           std::to_string(w.hash_unit) + "-token reuse";
  }
  const double cold = c[fastest].cold_prefill_s;
  if (fastest != r.winner && cold > 0.0 && w.cold_prefill_s > cold) {
    why += "; pays " + Format("%.1f", 100.0 * (w.cold_prefill_s / cold - 1)) +
           " % on cold prefill against " + c[fastest].label;
  }
  return why;
}

}  // namespace

Result<Objective> ParseObjective(std::string_view name) {
  std::string names;
  for (const NamedObjective& o : kObjectives) {
    if (o.name == name) return o.objective;
    names += (names.empty() ? "" : ", ") + std::string(o.name);
  }
  return Fail(
      ErrorCode::kInvalidArgument,
      "unknown objective \"" + std::string(name) + "\" (" + names + ")");
}

std::string_view ObjectiveName(Objective objective) {
  for (const NamedObjective& o : kObjectives) {
    if (o.objective == objective) return o.name;
  }
  return "";
}

double ObjectiveValue(const Candidate& c, Objective objective) {
  switch (objective) {
    case Objective::kTtftP50:
      return c.ttft_p50_s;
    case Objective::kTtftP99:
      return c.ttft_p99_s;
    case Objective::kReuse:
      return c.reused_tokens;
    case Objective::kCapacity:
      return c.capacity;
    case Objective::kDecode:
      return c.decode_tokens_per_s;
  }
  return 0.0;
}

bool LowerIsBetter(Objective objective) {
  return objective == Objective::kTtftP50 || objective == Objective::kTtftP99;
}

Recommendation Recommend(std::span<const Candidate> c, Objective objective,
                         double capacity_tolerance) {
  HKV_REQUIRE(!c.empty(), "Recommend needs at least one candidate");
  HKV_REQUIRE(capacity_tolerance >= 0.0 && capacity_tolerance < 1.0,
              "the capacity tolerance must be in [0, 1)");
  double best = 0.0;
  for (const Candidate& x : c) best = std::max(best, x.capacity);
  const double floor = (1.0 - capacity_tolerance) * best;
  Recommendation r;
  r.ranking.resize(c.size());
  std::iota(r.ranking.begin(), r.ranking.end(), std::size_t{0});
  const auto in = [&](std::size_t i) { return c[i].capacity >= floor; };
  std::sort(r.ranking.begin(), r.ranking.end(),
            [&](std::size_t a, std::size_t b) {
              if (in(a) != in(b)) return in(a);
              if (!in(a)) return Before(c, Objective::kCapacity, a, b);
              return Before(c, objective, a, b);
            });
  r.eligible = static_cast<std::size_t>(
      std::count_if(r.ranking.begin(), r.ranking.end(), in));
  r.winner = r.ranking[0];
  if (r.eligible > 1) {
    r.runner_up = r.ranking[1];
    const double w = ObjectiveValue(c[r.winner], objective);
    const double u = ObjectiveValue(c[*r.runner_up], objective);
    if (u != 0.0) r.margin = (LowerIsBetter(objective) ? u - w : w - u) / u;
  }
  r.why = Why(c, objective, r, capacity_tolerance);
  return r;
}

std::string AgainstTheReference(const Candidate& ours, const Candidate& theirs,
                                Objective objective) {
  return ours.label + " against the reference's best, " + theirs.label + ": " +
         Gain(ours, theirs, objective);
}

std::string Gain(const Candidate& ours, const Candidate& theirs,
                 Objective objective) {
  const double a = ObjectiveValue(ours, objective);
  const double b = ObjectiveValue(theirs, objective);
  const double lead = b == 0.0                   ? 0.0
                      : LowerIsBetter(objective) ? (b - a) / b
                                                 : (a - b) / b;
  const auto ratio = [](double x, double y) {
    return y == 0.0 ? std::string("n/a") : Format("%.2f", x / y) + "x";
  };
  return Format("%.1f", 100.0 * std::abs(lead)) + " % " +
         (lead >= 0.0 ? "better" : "worse") + " on " +
         std::string(Phrase(objective)) + " (" + Format("%.4g", a) +
         " against " + Format("%.4g", b) + "), " +
         ratio(ours.reused_tokens, theirs.reused_tokens) +
         " its reused tokens, " + ratio(ours.capacity, theirs.capacity) +
         " its capacity";
}

}  // namespace hkv
