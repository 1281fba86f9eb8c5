// Option plumbing of the experiments (hkv/experiment.h): the options'
// ranges checked and --vary's values set, both by the table of
// hkv/sim_options.h, and key=value lists.
#include <cmath>
#include <concepts>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "experiments/experiment_util.h"
#include "hkv/experiment.h"
#include "hkv/numbers.h"
#include "hkv/sim_options.h"

namespace hkv {
namespace {

using hkv::ParseReal;
using hkv::ParseWhole;
using hkv::RangeText;
using O = ExperimentOptions;

// The number type of a field (its optional's value type); void for others.
template <typename T>
struct NumberOf {
  using type =
      std::conditional_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, T,
                         void>;
};
template <typename T>
struct NumberOf<std::optional<T>> {
  using type = T;
};
template <typename T>
using NumberOfT = typename NumberOf<T>::type;

// Why `value` of `option` is out of its range, or "" when it is in it.
std::string Problem(const SimOption& option, double value) {
  const RealRange& r = option.real;
  const bool ok = std::isfinite(value) &&
                  (r.min_excluded ? value > r.min : value >= r.min) &&
                  value <= r.max;
  return ok ? "" : NumberText(value) + " is not a number in " + RangeText(r);
}
template <std::unsigned_integral T>
std::string Problem(const SimOption& option, T value) {
  const bool ok = value >= option.min && value <= option.max;
  return ok ? ""
            : std::to_string(value) + " is not a whole number in " +
                  RangeText(option.min, option.max);
}
template <typename T>
std::string Problem(const SimOption& option, const std::optional<T>& value) {
  return value ? Problem(option, *value) : "";
}

// Sets `option` in `o` from text: a number checked against its range, or
// text as it is.
Result<void> Set(const SimOption& option, O& o, const std::string& text) {
  Result<double> real = 0.0;
  Result<std::uint64_t> whole = 0;
  if (option.IsReal()) {
    real = ParseReal(text, option.real);
    if (!real) return tl::unexpected(real.error());
  } else if (option.IsNumber()) {
    whole = ParseWhole(text, option.min, option.max);
    if (!whole) return tl::unexpected(whole.error());
  }
  std::visit(
      [&](auto field) {
        using T = std::remove_cvref_t<decltype(o.*field)>;
        using Number = NumberOfT<T>;
        if constexpr (std::is_same_v<T, std::string>) {
          o.*field = text;
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          o.*field = {text};
        } else if constexpr (std::is_same_v<Number, double>) {
          o.*field = *real;
        } else if constexpr (!std::is_void_v<Number>) {
          o.*field = static_cast<Number>(*whole);
        }
      },
      option.field);
  return {};
}

}  // namespace

Result<void> CheckSimOptions(const ExperimentOptions& o, OptionNames names) {
  for (const SimOption& option : SimOptions()) {
    const std::string problem = std::visit(
        [&](auto field) -> std::string {
          using T = std::remove_cvref_t<decltype(o.*field)>;
          if constexpr (std::is_void_v<NumberOfT<T>>) {
            return "";
          } else {
            return Problem(option, o.*field);
          }
        },
        option.field);
    if (problem.empty()) continue;
    const std::string name = names == OptionNames::kPython
                                 ? std::string(option.name)
                                 : option.Flag();
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
  for (const SimOption& option : SimOptions()) {
    if (!option.varied || option.Flag() != "--" + std::string(name)) continue;
    if (Result<void> ok = Set(option, options, value); !ok) {
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
