// Helpers the experiment sources share (hkv/experiment.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "hkv/experiment.h"
#include "hkv/result.h"
#include "sim/numbers.h"

namespace hkv::internal {

// `key=value` items separated by `separator`; an item without '=' is
// stored under "". An item whose key holds ':' or ',' (a group list such as
// "full:256,sliding:256:window=128") is stored whole under "" too.
// kInvalidArgument for a key given twice.
using KeyValues = std::map<std::string, std::string>;
[[nodiscard]] Result<KeyValues> ParseKeyValues(std::string_view text,
                                               char separator);

// Removes `key` from `fields` and returns its whole-number value, or
// `fallback` when it is absent. kInvalidArgument naming "key=value" for a
// value that is not a whole number in [0, max].
[[nodiscard]] Result<std::uint64_t> TakeNumber(KeyValues& fields,
                                               const std::string& key,
                                               std::uint64_t fallback,
                                               std::uint64_t max);

// A numeric option of ExperimentOptions: whole numbers in [min, max], or
// reals in `real`. The CLI's validators, CheckSimOptions and SetSimOption
// share these ranges.
using NumberField =
    std::variant<std::uint32_t ExperimentOptions::*,
                 std::optional<std::uint32_t> ExperimentOptions::*,
                 std::optional<std::uint64_t> ExperimentOptions::*,
                 std::uint64_t ExperimentOptions::*,
                 double ExperimentOptions::*,
                 std::optional<double> ExperimentOptions::*>;
struct NumberFlag {
  std::string_view name;  // the flag, without "--"
  NumberField field;
  std::uint64_t min = 0;
  std::uint64_t max = 0;
  RealRange real = {};
  bool varied = false;  // --vary may set it

  bool IsReal() const {
    return std::holds_alternative<double ExperimentOptions::*>(field) ||
           std::holds_alternative<std::optional<double> ExperimentOptions::*>(
               field);
  }
};
// --limit is a std::optional<std::size_t>: the 64-bit alternative holds it.
static_assert(std::is_same_v<std::size_t, std::uint64_t>);

// Every numeric option, in the order CheckSimOptions checks them.
std::span<const NumberFlag> NumberFlags();

}  // namespace hkv::internal
