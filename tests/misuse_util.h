// Checking that a refused call leaves a cache core as it was: the call must
// throw UsageError, and the core's state snapshot (cache/state_snapshot.h)
// and invariants must be what they were before it.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "cache/cache_core.h"
#include "cache/state_snapshot.h"

namespace hkv::testing {

// Runs `call`, which must throw UsageError without changing `core`. Returns
// the error's message ("" when nothing was thrown) for checks of its text.
template <typename Call>
std::string RefusedUnchanged(const internal::CacheCore& core, Call&& call) {
  const std::string before = internal::StateSnapshot(core);
  std::string message;
  try {
    call();
    ADD_FAILURE() << "the call was not refused";
  } catch (const UsageError& e) {
    message = e.what();
  }
  EXPECT_EQ(internal::StateSnapshot(core), before) << message;
  EXPECT_TRUE(core.CheckInvariants()) << message;
  return message;
}

}  // namespace hkv::testing
