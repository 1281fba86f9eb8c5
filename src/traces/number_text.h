// Numbers in the simulator layer's error messages: doubles in at most six
// significant digits ("1e+300", not 300 digits; "nan", "inf").
#pragma once

#include <cstdio>
#include <string>

namespace hkv::internal {

inline std::string ShortNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

}  // namespace hkv::internal
