// Option plumbing of the experiments (hkv/experiment.h): the ranges of the
// numeric options (one table serves the CLI's validators, the Python
// module's checks and --vary), and key=value lists.
#include <algorithm>
#include <cmath>
#include <concepts>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "hkv/experiment.h"
#include "hkv/limits.h"
#include "sim/experiment_util.h"
#include "sim/numbers.h"

namespace hkv {
namespace internal {
namespace {

constexpr std::uint64_t kU32 = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint64_t kU64 = std::numeric_limits<std::uint64_t>::max();

using O = ExperimentOptions;

const NumberFlag kNumberFlags[] = {
    {"limit", &O::limit, 0, kU64},
    {"time-scale", &O::time_scale, 0, 0, {0.0, kMaxInputSeconds, true}},
    {"duration", &O::duration_s, 0, 0, {0.0, kMaxInputSeconds, true}},
    {"hash-unit", &O::hash_unit, 0, kU32, {}, true},
    {"num-blocks", &O::num_blocks, 1, kMaxPoolBlocks - 1, {}, true},
    {"capacity-tokens", &O::capacity_tokens, 1, kU64},
    {"dcp", &O::dcp, 1, kU32, {}, true},
    {"retention-interval", &O::retention_interval, 0, kU32, {}, true},
    {"tp", &O::tp, 1, kU32, {}, true},
    // Up to a petabyte per rank: the budget in bytes fits 64 bits.
    {"budget-gib", &O::budget_gib, 0, 0, {0.0, 1e6, true}, true},
    {"max-batched-tokens", &O::max_batched_tokens, 1, kU32, {}, true},
    {"max-num-seqs", &O::max_num_seqs, 1, kU32, {}, true},
    {"long-prefill-threshold", &O::long_prefill_threshold, 0, kU32, {}, true},
    {"concurrency", &O::concurrency, 1, kU32, {}, true},
    {"spec-drafts", &O::spec_drafts, 0, kMaxTokensPerRequest, {}, true},
    {"spec-acceptance", &O::spec_acceptance, 0, 0, {0.0, 1.0, false}, true},
    {"spec-lookahead", &O::spec_lookahead, 0, kMaxTokensPerRequest, {}, true},
    {"seed", &O::seed, 0, kU64},
};

}  // namespace

std::span<const NumberFlag> NumberFlags() { return kNumberFlags; }

}  // namespace internal
namespace {

using internal::KeyValues;
using internal::NumberFlag;
using internal::NumberText;
using internal::ParseReal;
using internal::ParseWhole;
using internal::RangeText;
using internal::RealRange;
using O = ExperimentOptions;

// Why `value` of `flag` is out of its range, or "" when it is in it.
std::string Problem(const NumberFlag& flag, double value) {
  const RealRange& r = flag.real;
  const bool ok = std::isfinite(value) &&
                  (r.min_excluded ? value > r.min : value >= r.min) &&
                  value <= r.max;
  return ok ? "" : NumberText(value) + " is not a number in " + RangeText(r);
}
template <std::unsigned_integral T>
std::string Problem(const NumberFlag& flag, T value) {
  const bool ok = value >= flag.min && value <= flag.max;
  return ok ? ""
            : std::to_string(value) + " is not a whole number in " +
                  RangeText(flag.min, flag.max);
}
template <typename T>
std::string Problem(const NumberFlag& flag, const std::optional<T>& value) {
  return value ? Problem(flag, *value) : "";
}

// The number type of a field (its optional's value type).
template <typename T>
struct NumberOf {
  using type = T;
};
template <typename T>
struct NumberOf<std::optional<T>> {
  using type = T;
};

// Sets `flag` in `o` from text, checked against its range.
Result<void> Set(const NumberFlag& flag, O& o, const std::string& text) {
  Result<double> real = 0.0;
  Result<std::uint64_t> whole = 0;
  if (flag.IsReal()) {
    real = ParseReal(text, flag.real);
    if (!real) return tl::unexpected(real.error());
  } else {
    whole = ParseWhole(text, flag.min, flag.max);
    if (!whole) return tl::unexpected(whole.error());
  }
  std::visit(
      [&](auto field) {
        using T = typename NumberOf<
            std::remove_reference_t<decltype(o.*field)>>::type;
        if constexpr (std::is_same_v<T, double>) {
          o.*field = *real;
        } else {
          o.*field = static_cast<T>(*whole);
        }
      },
      flag.field);
  return {};
}

}  // namespace

Result<void> CheckSimOptions(const ExperimentOptions& o, OptionNames names) {
  for (const NumberFlag& flag : internal::NumberFlags()) {
    const std::string problem = std::visit(
        [&](auto field) { return Problem(flag, o.*field); }, flag.field);
    if (problem.empty()) continue;
    std::string name(flag.name);
    if (names == OptionNames::kPython) {
      std::replace(name.begin(), name.end(), '-', '_');
      if (name == "duration") name = "duration_s";
    } else {
      name = "--" + name;
    }
    return Fail(ErrorCode::kInvalidArgument, name + ": " + problem);
  }
  if (o.json && o.csv) {
    return Fail(ErrorCode::kInvalidArgument,
                names == OptionNames::kPython
                    ? "json and csv exclude each other"
                    : "--json and --csv exclude each other");
  }
  return {};
}

Result<void> SetSimOption(ExperimentOptions& options, std::string_view name,
                          const std::string& value) {
  if (name == "geometry") {
    options.geometry = value;
    return {};
  }
  for (const NumberFlag& flag : internal::NumberFlags()) {
    if (flag.name != name || !flag.varied) continue;
    if (Result<void> ok = Set(flag, options, value); !ok) {
      return Fail(ErrorCode::kInvalidArgument,
                  "--vary " + std::string(name) + ": " + ok.error().message);
    }
    return {};
  }
  return Fail(ErrorCode::kInvalidArgument,
              "--vary cannot vary \"" + std::string(name) + "\" (see --help)");
}

namespace internal {

Result<KeyValues> ParseKeyValues(std::string_view text, char separator) {
  KeyValues out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(separator, start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(start, end - start);
    std::size_t eq = item.find('=');
    // A key with ':' or ',' is a group list whose options hold '='.
    if (item.substr(0, eq).find_first_of(":,") != std::string_view::npos) {
      eq = std::string_view::npos;
    }
    // An item without '=' is the positional value, under key "".
    std::string key(eq == std::string_view::npos ? "" : item.substr(0, eq));
    std::string value(eq == std::string_view::npos ? item
                                                   : item.substr(eq + 1));
    if (!out.emplace(std::move(key), std::move(value)).second) {
      return Fail(ErrorCode::kInvalidArgument, "\"" + std::string(item) +
                                                   "\" given twice in \"" +
                                                   std::string(text) + "\"");
    }
    start = end + 1;
  }
  return out;
}

Result<std::uint64_t> TakeNumber(KeyValues& fields, const std::string& key,
                                 std::uint64_t fallback, std::uint64_t max) {
  auto it = fields.find(key);
  if (it == fields.end()) return fallback;
  const std::string text = std::move(it->second);
  fields.erase(it);
  Result<std::uint64_t> value = ParseWhole(text, 0, max);
  if (!value) return Named(key, value.error());
  return value;
}

}  // namespace internal
}  // namespace hkv
