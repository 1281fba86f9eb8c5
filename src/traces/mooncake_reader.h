// The Mooncake reader with its request quota given (hkv::ReadMooncakeTrace
// passes QuotaFor(limit)), so that tests reach the per-workload limit
// without a million lines.
//
// Thread-safety: a pure function.
#pragma once

#include <filesystem>
#include <vector>

#include "hkv/mooncake_trace.h"
#include "hkv/result.h"
#include "traces/line_reader.h"

namespace hkv::internal {

// ReadMooncakeTrace reading `quota.requests` requests at most: it stops
// there when `quota.stops`, else the next request is an error.
[[nodiscard]] Result<std::vector<TraceRequest>> ReadMooncakeTrace(
    const std::filesystem::path& path, RequestQuota quota);

}  // namespace hkv::internal
