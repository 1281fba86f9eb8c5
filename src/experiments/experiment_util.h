// Helpers the experiment sources share (hkv/experiment.h).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "hkv/cache_config.h"
#include "hkv/experiment.h"
#include "hkv/numbers.h"
#include "hkv/result.h"
#include "hkv/simulator.h"
#include "hkv/workload.h"

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

// Makes `cache` one shared pool (no per-group or rebalancing pools) that
// `workload` cannot fill: every token of every request in blocks of each
// group, plus slack, capped at 2^31 blocks.
void UseUnlimitedPool(CacheConfig& cache, std::span<const SimRequest> workload);

// Per-group pools split from the workload (PoolLayout::kPerGroupByWorkload):
// the pools' bytes (blocks times page bytes; blocks alone without page
// bytes) shared in proportion to the bytes each group keeps cached when
// nothing is evicted (an unlimited-pool run of `workload` under `engine`),
// each pool at least what the workload's longest request holds in it; the
// config's capacity recounted for the new pools. Unchanged when those
// minimums do not fit. REQUIRES: config.cache has per-group pools.
[[nodiscard]] Result<void> SplitPoolsByWorkload(
    SimConfig& config, SimulationOptions engine,
    const std::vector<SimRequest>& workload);

}  // namespace hkv::internal
