#include "check.h"

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace hkv::internal {

void ThrowUsageError(std::string_view condition, std::string_view message,
                     std::source_location where) {
  std::string text(message);
  text += " (requires ";
  text += condition;
  text += " at ";
  text += where.function_name();
  text += ")";
  throw UsageError(text);
}

void AbortInvariant(std::string_view condition, std::source_location where) {
  std::fprintf(stderr, "hkv invariant violated: %.*s at %s:%u\n",
               static_cast<int>(condition.size()), condition.data(),
               where.file_name(), static_cast<unsigned>(where.line()));
  std::abort();
}

std::uint32_t CheckedCount(std::size_t value, std::string_view what) {
  if (value > std::numeric_limits<std::uint32_t>::max()) {
    ThrowUsageError("count fits in 32 bits",
                    std::string(what) + " exceed 2^32 - 1",
                    std::source_location::current());
  }
  return static_cast<std::uint32_t>(value);
}

}  // namespace hkv::internal
