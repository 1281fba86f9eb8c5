// Option plumbing of the experiments (hkv/experiment.h): key=value lists
// and --vary's settable options.
#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "hkv/experiment.h"
#include "sim/experiment_util.h"

namespace hkv {
namespace {

// The flags --vary can set, each with its setter of a value >= 0.
using Setter = void (*)(ExperimentOptions&, double);
struct VariedFlag {
  std::string_view name;
  Setter set;
};
template <typename T>
T As(double v) {
  return static_cast<T>(v);
}
constexpr VariedFlag kVariedFlags[] = {
    {"concurrency",
     [](auto& o, double v) { o.concurrency = As<std::uint32_t>(v); }},
    {"max-batched-tokens",
     [](auto& o, double v) { o.max_batched_tokens = As<std::uint32_t>(v); }},
    {"max-num-seqs",
     [](auto& o, double v) { o.max_num_seqs = As<std::uint32_t>(v); }},
    {"long-prefill-threshold",
     [](auto& o, double v) {
       o.long_prefill_threshold = As<std::uint32_t>(v);
     }},
    {"spec-drafts",
     [](auto& o, double v) { o.spec_drafts = As<std::uint32_t>(v); }},
    {"spec-acceptance", [](auto& o, double v) { o.spec_acceptance = v; }},
    {"spec-lookahead",
     [](auto& o, double v) { o.spec_lookahead = As<std::uint32_t>(v); }},
    {"retention-interval",
     [](auto& o, double v) { o.retention_interval = As<std::uint32_t>(v); }},
    {"num-blocks",
     [](auto& o, double v) { o.num_blocks = As<std::uint32_t>(v); }},
    {"hash-unit",
     [](auto& o, double v) { o.hash_unit = As<std::uint32_t>(v); }},
    {"dcp", [](auto& o, double v) { o.dcp = As<std::uint32_t>(v); }},
    {"tp", [](auto& o, double v) { o.tp = As<std::uint32_t>(v); }},
    {"budget-gib", [](auto& o, double v) { o.budget_gib = v; }},
};

}  // namespace

Result<void> SetSimOption(ExperimentOptions& options, std::string_view name,
                          const std::string& value) {
  if (name == "geometry") {
    options.geometry = value;
    return {};
  }
  for (const VariedFlag& flag : kVariedFlags) {
    if (flag.name != name) continue;
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || *end != 0 || !(v >= 0.0) || v > 4e9) {
      return Fail(ErrorCode::kInvalidArgument, "--vary " + std::string(name) +
                                                   ": \"" + value +
                                                   "\" is not a number >= 0");
    }
    flag.set(options, v);
    return {};
  }
  return Fail(ErrorCode::kInvalidArgument,
              "--vary cannot vary \"" + std::string(name) + "\" (see --help)");
}

namespace internal {

Result<KeyValues> ParseKeyValues(std::string_view text, char separator) {
  KeyValues out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(separator, start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(start, end - start);
    std::size_t eq = item.find('=');
    // A key with ':' or ',' is a group list whose options hold '='.
    if (item.substr(0, eq).find_first_of(":,") != std::string_view::npos) {
      eq = std::string_view::npos;
    }
    // An item without '=' is the positional value, under key "".
    std::string key(eq == std::string_view::npos ? "" : item.substr(0, eq));
    std::string value(eq == std::string_view::npos ? item
                                                   : item.substr(eq + 1));
    if (!out.emplace(std::move(key), std::move(value)).second) {
      return Fail(ErrorCode::kInvalidArgument, "\"" + std::string(item) +
                                                   "\" given twice in \"" +
                                                   std::string(text) + "\"");
    }
    start = end + 1;
  }
  return out;
}

Result<std::uint64_t> TakeNumber(KeyValues& fields, const std::string& key,
                                 std::uint64_t fallback) {
  auto it = fields.find(key);
  if (it == fields.end()) return fallback;
  const std::string text = std::move(it->second);
  fields.erase(it);
  std::uint64_t value = 0;
  const auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return Fail(ErrorCode::kInvalidArgument,
                key + "=" + text + " is not a whole number");
  }
  return value;
}

}  // namespace internal
}  // namespace hkv
