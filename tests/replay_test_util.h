// Helpers for the replay tests: run a replay expecting success or failure.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "hkv/replay.h"

namespace hkv::testing {

inline ReplayResult Replayed(const std::vector<TraceRequest>& trace,
                             const ReplayOptions& options) {
  Result<ReplayResult> result = Replay(trace, options);
  EXPECT_TRUE(result.has_value()) << result.error().message;
  return result.value_or(ReplayResult{});
}

inline Error ReplayFailure(const std::vector<TraceRequest>& trace,
                           const ReplayOptions& options) {
  Result<ReplayResult> result = Replay(trace, options);
  EXPECT_FALSE(result.has_value());
  return result ? Error{} : result.error();
}

}  // namespace hkv::testing
