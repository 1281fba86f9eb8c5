#include "numbers.h"

#include <string>

#include "hkv/keys.h"

namespace hkv::cli {

CLI::Validator WholeIn(std::uint64_t min, std::uint64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) {
        Result<std::uint64_t> value = ParseWhole(text, min, max);
        if (!value) return value.error().message;
        text = std::to_string(*value);
        return std::string();
      },
      RangeText(min, max));
}

CLI::Validator KeyFunctionIn() {
  return CLI::Validator(
      [](std::string& text) {
        Result<KeyFunction> function = ParseKeyFunction(text);
        if (!function) return function.error().message;
        text = std::string(KeyFunctionName(*function));
        return std::string();
      },
      "{sha256_cbor,xxh3_128_cbor}");
}

CLI::Validator RealIn(const RealRange& range) {
  return CLI::Validator(
      [range](std::string& text) {
        Result<double> value = ParseReal(text, range);
        return value ? std::string() : value.error().message;
      },
      RangeText(range));
}

}  // namespace hkv::cli
