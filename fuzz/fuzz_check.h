// Property checks of the parser fuzz targets: a failed one prints what the
// library promised and aborts, which libFuzzer reports as a crash.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace hkv::fuzz {

inline void Require(bool ok, const std::string& promise) {
  if (ok) return;
  std::fprintf(stderr, "broken promise: %s\n", promise.c_str());
  std::abort();
}

}  // namespace hkv::fuzz
