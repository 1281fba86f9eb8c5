// ParseByteSize: "33GiB" and friends.
#include <cctype>
#include <string>

#include "hkv/planner.h"

namespace hkv {
namespace {

constexpr struct {
  std::string_view name;
  std::uint64_t bytes;
} kUnits[] = {{"", 1},
              {"B", 1},
              {"KB", 1000},
              {"MB", 1000 * 1000},
              {"GB", 1000ull * 1000 * 1000},
              {"TB", 1000ull * 1000 * 1000 * 1000},
              {"KiB", 1ull << 10},
              {"MiB", 1ull << 20},
              {"GiB", 1ull << 30},
              {"TiB", 1ull << 40}};

constexpr std::uint64_t kLimit = std::uint64_t{1} << 63;

__extension__ typedef unsigned __int128 Uint128;

tl::unexpected<Error> Bad(std::string_view text) {
  return Fail(ErrorCode::kInvalidArgument,
              "bad byte size \"" + std::string(text) +
                  "\" (want e.g. 4096, 33GiB, 1.5TB; units B, KB, MB, GB, "
                  "TB, KiB, MiB, GiB, TiB)");
}

}  // namespace

Result<std::uint64_t> ParseByteSize(std::string_view text) {
  std::size_t i = 0;
  Uint128 whole = 0;
  Uint128 fraction = 0;
  Uint128 scale = 1;  // 10^(fraction digits)
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    whole = whole * 10 + static_cast<unsigned>(text[i++] - '0');
    if (whole >= kLimit) return Bad(text);
  }
  if (i == 0) return Bad(text);
  if (i < text.size() && text[i] == '.') {
    const std::size_t start = ++i;
    while (i < text.size() && i - start < 18 &&
           std::isdigit(static_cast<unsigned char>(text[i]))) {
      fraction = fraction * 10 + static_cast<unsigned>(text[i++] - '0');
      scale *= 10;
    }
    if (i == start) return Bad(text);
  }
  const std::string_view unit = text.substr(i);
  for (const auto& u : kUnits) {
    if (u.name != unit) continue;
    const Uint128 bytes = whole * u.bytes + fraction * u.bytes / scale;
    if (bytes >= kLimit) return Bad(text);
    return static_cast<std::uint64_t>(bytes);
  }
  return Bad(text);
}

}  // namespace hkv
