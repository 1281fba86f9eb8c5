// Helpers the experiment sources share (hkv/experiment.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

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

}  // namespace hkv::internal
