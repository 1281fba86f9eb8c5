// The simulator's options, one table: each field of ExperimentOptions
// (hkv/experiment.h) a user sets, with its name, its help and, for a
// number, its range. The flags of `hkv simulate` and `hkv compare`, the
// keywords of the Python module's hkv.simulate and hkv.compare,
// CheckSimOptions and `hkv compare --vary` (SetSimOption) are all made from
// it, so an option is added here and nowhere else.
//
// Names: `name` is the field's, the Python keyword and the entry of
// ExperimentOptions::given. The CLI's flag is "--" and `name` with '-' for
// '_' (time_scale: --time-scale), unless `flag` says otherwise: duration_s
// is --duration, and data_dir has no flag (the CLI finds its data itself).
// The CLI's output flags (--json, --csv) are not options of the simulator.
//
// Thread-safety: the table is built on first use and never changes.
//
// Example:
//   ExperimentOptions o;
//   const SimOption* tp = FindSimOption("tp");
//   std::visit([&o](auto field) { use(o.*field); }, tp->field);  // 4
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "hkv/cache_manager.h"
#include "hkv/experiment.h"
#include "hkv/real_range.h"
#include "hkv/result.h"

namespace hkv {

// A field of ExperimentOptions, one alternative per type.
// (std::optional<std::size_t> limit is the std::optional<std::uint64_t>.)
using SimOptionField = std::variant<
    std::string ExperimentOptions::*,
    std::vector<std::string> ExperimentOptions::*, bool ExperimentOptions::*,
    FreeOrder ExperimentOptions::*, std::uint32_t ExperimentOptions::*,
    std::optional<std::uint32_t> ExperimentOptions::*,
    std::uint64_t ExperimentOptions::*,
    std::optional<std::uint64_t> ExperimentOptions::*,
    double ExperimentOptions::*, std::optional<double> ExperimentOptions::*>;

// `flag` of an option without one.
inline constexpr std::string_view kNoFlag = "-";

struct SimOption {
  std::string_view name;
  SimOptionField field;
  std::string help;
  // Numbers: whole numbers in [min, max]; reals (IsReal()) in `real`.
  std::uint64_t min = 0;
  std::uint64_t max = 0;
  RealRange real = {};
  bool varied = false;  // `hkv compare --vary` may set it
  // Text: a check of the value beyond being text (the CLI refuses a value
  // failing it as a usage error), shown in help as `value_name`; null:
  // any text.
  Result<void> (*check)(const std::string& value) = nullptr;
  std::string value_name = {};
  // The flag without "--" when it is not derived from `name`; kNoFlag: none.
  std::string_view flag = {};

  // "--" and the flag ("--time-scale"), or "" for an option without one.
  std::string Flag() const;
  // Whether the field is a number (whole or real, optional or not).
  bool IsNumber() const;
  // Whether the field is a double or an optional double.
  bool IsReal() const;
};

// Every option, in the order of the CLI's help.
std::span<const SimOption> SimOptions();

// The option called `name` (not its flag), or nullptr when there is none.
const SimOption* FindSimOption(std::string_view name);

}  // namespace hkv
