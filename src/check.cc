#include "check.h"

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace hkv::internal {

void ThrowUsageError(std::string_view condition, std::string_view message,
                     CheckSite where) {
  std::string text(message);
  text += " (requires ";
  text += condition;
  text += " at ";
  text += where.function;
  text += ")";
  throw UsageError(text);
}

void AbortInvariant(std::string_view condition, CheckSite where) {
  std::fprintf(stderr, "hkv invariant violated: %.*s at %s:%d\n",
               static_cast<int>(condition.size()), condition.data(), where.file,
               where.line);
  std::abort();
}

std::uint32_t CheckedCount(std::size_t value, std::string_view what) {
  if (value > std::numeric_limits<std::uint32_t>::max()) {
    ThrowUsageError("count fits in 32 bits",
                    std::string(what) + " exceed 2^32 - 1",
                    {__FILE__, __LINE__, static_cast<const char*>(__func__)});
  }
  return static_cast<std::uint32_t>(value);
}

}  // namespace hkv::internal
