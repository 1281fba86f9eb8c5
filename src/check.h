// Precondition and invariant checks (see docs/design.md, "Errors").
//
// HKV_REQUIRE(cond, msg): a caller bug at the public API; throws
// hkv::UsageError naming the condition and location. Use it before any
// mutation so that a refused call leaves state unchanged.
// HKV_DCHECK(cond): an internal invariant; aborts with file:line. Compiled out
// under NDEBUG.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hkv/result.h"

namespace hkv::internal {

// Where a check failed. (std::source_location is missing from the
// clang-14 + libstdc++-12 pairing this project also builds with.)
struct CheckSite {
  const char* file;
  int line;
  const char* function;
};

[[noreturn]] void ThrowUsageError(std::string_view condition,
                                  std::string_view message, CheckSite where);
[[noreturn]] void AbortInvariant(std::string_view condition, CheckSite where);

// Narrows a size to a 32-bit count; throws UsageError naming `what` when it
// does not fit.
std::uint32_t CheckedCount(std::size_t value, std::string_view what);

}  // namespace hkv::internal

#define HKV_REQUIRE(cond, msg)                                       \
  do {                                                               \
    if (!(cond)) [[unlikely]]                                        \
      ::hkv::internal::ThrowUsageError(                              \
          #cond, (msg),                                              \
          {__FILE__, __LINE__, static_cast<const char*>(__func__)}); \
  } while (0)

#ifdef NDEBUG
#define HKV_DCHECK(cond)             \
  do {                               \
    static_cast<void>(sizeof(cond)); \
  } while (0)
#else
#define HKV_DCHECK(cond)                                                    \
  do {                                                                      \
    if (!(cond)) [[unlikely]]                                               \
      ::hkv::internal::AbortInvariant(                                      \
          #cond, {__FILE__, __LINE__, static_cast<const char*>(__func__)}); \
  } while (0)
#endif
