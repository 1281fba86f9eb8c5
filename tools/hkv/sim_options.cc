// The options of `hkv simulate` and `hkv compare`: their flags, the ranges
// of the numeric ones (one table serves the CLI's validators, the Python
// module's checks and --vary), and the key=value lists of --workload and
// --config.
#include <algorithm>
#include <cmath>
#include <concepts>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "hkv/group_list.h"
#include "hkv/limits.h"
#include "numbers.h"
#include "sim_setup.h"

namespace hkv::cli {
namespace {

constexpr std::uint64_t kU32 = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint64_t kU64 = std::numeric_limits<std::uint64_t>::max();

using O = SimCommandOptions;
// --limit is a std::optional<std::size_t>: the 64-bit alternative holds it.
static_assert(std::is_same_v<std::size_t, std::uint64_t>);
using Field =
    std::variant<std::uint32_t O::*, std::optional<std::uint32_t> O::*,
                 std::optional<std::uint64_t> O::*, std::uint64_t O::*,
                 double O::*, std::optional<double> O::*>;

// A numeric flag: whole numbers in [min, max], or reals in `real`.
struct NumberFlag {
  std::string_view name;  // without "--"
  Field field;
  std::uint64_t min = 0;
  std::uint64_t max = 0;
  RealRange real = {};
  bool varied = false;  // --vary may set it

  bool IsReal() const {
    return std::holds_alternative<double O::*>(field) ||
           std::holds_alternative<std::optional<double> O::*>(field);
  }
};

const NumberFlag kNumberFlags[] = {
    {"limit", &O::limit, 1, kU64},
    {"time-scale", &O::time_scale, 0, 0, {0.0, kMaxInputSeconds, true}},
    {"duration", &O::duration_s, 0, 0, {0.0, kMaxInputSeconds, true}},
    {"hash-unit", &O::hash_unit, 0, kU32, {}, true},
    {"num-blocks", &O::num_blocks, 1, kMaxPoolBlocks - 1, {}, true},
    {"capacity-tokens", &O::capacity_tokens, 1, kU64},
    {"dcp", &O::dcp, 1, kU32, {}, true},
    {"retention-interval", &O::retention_interval, 0, kU32, {}, true},
    {"tp", &O::tp, 1, kU32, {}, true},
    // Up to a petabyte per rank: the budget in bytes fits 64 bits.
    {"budget-gib", &O::budget_gib, 0, 0, {0.0, 1e6, true}, true},
    {"max-batched-tokens", &O::max_batched_tokens, 1, kU32, {}, true},
    {"max-num-seqs", &O::max_num_seqs, 1, kU32, {}, true},
    {"long-prefill-threshold", &O::long_prefill_threshold, 0, kU32, {}, true},
    {"concurrency", &O::concurrency, 1, kU32, {}, true},
    {"spec-drafts", &O::spec_drafts, 0, kMaxTokensPerRequest, {}, true},
    {"spec-acceptance", &O::spec_acceptance, 0, 0, {0.0, 1.0, false}, true},
    {"spec-lookahead", &O::spec_lookahead, 0, kMaxTokensPerRequest, {}, true},
    {"seed", &O::seed, 0, kU64},
};

const NumberFlag& Flag(std::string_view name) {
  const auto it =
      std::find_if(std::begin(kNumberFlags), std::end(kNumberFlags),
                   [name](const NumberFlag& f) { return f.name == name; });
  if (it == std::end(kNumberFlags)) {  // a bug here, not bad input
    throw std::logic_error("no numeric flag --" + std::string(name));
  }
  return *it;
}

// Adds numeric flag `name` with its range check.
CLI::Option* AddNumber(CLI::App& sub, O& o, std::string_view name,
                       const std::string& help) {
  const NumberFlag& flag = Flag(name);
  CLI::Option* option = std::visit(
      [&](auto field) {
        return sub.add_option("--" + std::string(name), o.*field, help);
      },
      flag.field);
  return option->check(flag.IsReal() ? RealIn(flag.real)
                                     : WholeIn(flag.min, flag.max));
}

// Why `value` of `flag` is out of its range, or "" when it is in it.
std::string Problem(const NumberFlag& flag, double value) {
  const RealRange& r = flag.real;
  const bool ok = std::isfinite(value) &&
                  (r.min_excluded ? value > r.min : value >= r.min) &&
                  value <= r.max;
  return ok ? "" : NumberText(value) + " is not a number in " + RangeText(r);
}
template <std::unsigned_integral T>
std::string Problem(const NumberFlag& flag, T value) {
  const bool ok = value >= flag.min && value <= flag.max;
  return ok ? ""
            : std::to_string(value) + " is not a whole number in " +
                  RangeText(flag.min, flag.max);
}
template <typename T>
std::string Problem(const NumberFlag& flag, const std::optional<T>& value) {
  return value ? Problem(flag, *value) : "";
}

// The number type of a field (its optional's value type).
template <typename T>
struct NumberOf {
  using type = T;
};
template <typename T>
struct NumberOf<std::optional<T>> {
  using type = T;
};

// Sets `flag` in `o` from text, checked against its range.
Result<void> Set(const NumberFlag& flag, O& o, const std::string& text) {
  Result<double> real = 0.0;
  Result<std::uint64_t> whole = 0;
  if (flag.IsReal()) {
    real = ParseReal(text, flag.real);
    if (!real) return tl::unexpected(real.error());
  } else {
    whole = ParseWhole(text, flag.min, flag.max);
    if (!whole) return tl::unexpected(whole.error());
  }
  std::visit(
      [&](auto field) {
        using T = typename NumberOf<
            std::remove_reference_t<decltype(o.*field)>>::type;
        if constexpr (std::is_same_v<T, double>) {
          o.*field = *real;
        } else {
          o.*field = static_cast<T>(*whole);
        }
      },
      flag.field);
  return {};
}

void AddWorkloadOptions(CLI::App& sub, O& o) {
  sub.add_option(
      "--workload", o.workload,
      "KIND[:ARGS]: mooncake:FILE, azure:FILE[,prefixes=N,prefix=T,"
      "shared=F,seed=S], fanout[:requests=N,prefix=T,suffix=T,output=T,"
      "interval=S,warmup=0|1,seed=S], "
      "agent[:sessions=N,turns=N,system=T,message=T,"
      "output=T,interval=S,think=S,seed=S], repeat[:requests=N,"
      "prompt=T,output=T,seed=S], and the named scenarios cold-prefill:"
      "prompt=P, resend:prompt=P, shared-prefix:streams=N,prefix=P,suffix=S, "
      "needle:document=D,question=Q[,documents=N,questions=N,warmup=0|1], "
      "decode-cell:concurrency=C,context=X,seconds=S[,turn=T,turns=N] "
      "(each also output=T,seed=S) (default: the bundled Mooncake "
      "conversation trace). Limits: " +
          std::to_string(kMaxRequestsPerWorkload) + " requests, " +
          std::to_string(kMaxTokensPerRequest) +
          " tokens per request (prompt and output), " +
          std::to_string(kMaxTraceLineBytes) +
          " bytes per trace line; times up to " + NumberText(kMaxInputSeconds) +
          " s");
  AddNumber(sub, o, "limit",
            "Keep the first N requests (read or generated no further)");
  AddNumber(sub, o, "time-scale",
            "Divide arrival times by this (> 1 compresses)")
      ->capture_default_str();
  AddNumber(sub, o, "duration",
            "Keep requests arriving in the first S seconds (scaled)");
}

void AddCacheOptions(CLI::App& sub, O& o) {
  sub.add_option("--groups", o.groups,
                 "Cache groups (group-list syntax, as `hkv replay`); "
                 "without it the deployment flags resolve the cache")
      ->check(CLI::Validator(
          [](std::string& text) {
            Result<std::vector<GroupSpec>> groups = ParseGroupList(text);
            return groups ? std::string() : groups.error().message;
          },
          "LIST"));
  AddNumber(sub, o, "hash-unit",
            "Tokens per prefix key (0: the smallest block)")
      ->capture_default_str();
  AddNumber(sub, o, "num-blocks",
            "Pool size in blocks, null block excluded (at most " +
                std::to_string(kMaxPoolBlocks) + " with it)");
  AddNumber(sub, o, "capacity-tokens",
            "Pool size in tokens: each group gets capacity / its block "
            "blocks");
  AddNumber(sub, o, "dcp", "Decode-context-parallel width")
      ->capture_default_str();
  AddNumber(sub, o, "retention-interval",
            "Sparse retention R (default: keep all states)");
  AddFreeOrderOption(sub, o.free_order);
  sub.add_option("--key-function", o.key_function, "Prefix key digest")
      ->check(CLI::IsMember({"sha256_cbor", "xxh3_128_cbor"}))
      ->capture_default_str();
  sub.add_option("--preset", o.preset,
                 "Deployment preset (data/deployments/): its model, TP, DCP, "
                 "budget, geometry, engine, drafts and cost model, under the "
                 "flags given");
  sub.add_option("--model", o.model, "Model preset of the deployment")
      ->capture_default_str();
  AddNumber(sub, o, "tp", "Tensor-parallel width")->capture_default_str();
  AddNumber(sub, o, "budget-gib", "KV-cache memory per rank")
      ->capture_default_str();
  sub.add_option("--geometry", o.geometry,
                 "Page geometry target/recurrent/unit")
      ->capture_default_str();
}

void AddEngineOptions(CLI::App& sub, O& o) {
  AddNumber(sub, o, "max-batched-tokens", "Token budget per step")
      ->capture_default_str();
  AddNumber(sub, o, "max-num-seqs", "Running requests at most")
      ->capture_default_str();
  AddNumber(sub, o, "long-prefill-threshold",
            "Longest prefill chunk (0: the budget)")
      ->capture_default_str();
  AddNumber(sub, o, "concurrency", "Closed loop: requests kept in the system")
      ->capture_default_str();
  sub.add_flag("--open-loop", o.open_loop,
               "Requests arrive at their trace times instead");
  AddNumber(sub, o, "spec-drafts",
            "Draft tokens per decode (a --model deployment is planned for "
            "as many speculative state blocks)")
      ->capture_default_str();
  AddNumber(sub, o, "spec-acceptance",
            "Probability that each draft is accepted")
      ->capture_default_str();
  AddNumber(sub, o, "spec-lookahead",
            "Extra slots allocated per step for drafts")
      ->capture_default_str();
  AddNumber(sub, o, "seed", "Seed of the draft acceptances")
      ->capture_default_str();
}

void AddCostAndOutputOptions(CLI::App& sub, O& o) {
  sub.add_option("--cost-model", o.cost_model,
                 "Cost model preset (modelled step times)")
      ->capture_default_str();
  sub.add_option("--cost-file", o.cost_file,
                 "JSON object of cost coefficients over the preset (at most " +
                     std::to_string(kMaxConfigFileBytes) + " bytes)");
  sub.add_option("--cost", o.cost,
                 "KEY=VALUE coefficient override (step_s, prefill_token_s, "
                 "prefill_attention_s, decode_token_s, decode_context_s; "
                 "seconds in [0, " +
                     NumberText(kMaxInputSeconds) + "])");
  CLI::Option* json = sub.add_flag("--json", o.json, "Print JSON");
  sub.add_flag("--csv", o.csv, "Print CSV")->excludes(json);
}

}  // namespace

void AddSimOptions(CLI::App& sub, SimCommandOptions& options) {
  AddWorkloadOptions(sub, options);
  AddCacheOptions(sub, options);
  AddEngineOptions(sub, options);
  AddCostAndOutputOptions(sub, options);
  // The flags given (as field names), which a preset does not override.
  sub.parse_complete_callback([&sub, &options] {
    for (const CLI::Option* opt : sub.get_options()) {
      if (opt->count() == 0) continue;
      std::string name = opt->get_name();
      name.erase(0, name.find_first_not_of('-'));
      std::replace(name.begin(), name.end(), '-', '_');
      options.given.insert(name);
    }
  });
}

Result<void> CheckSimOptions(const SimCommandOptions& o, OptionNames names) {
  for (const NumberFlag& flag : kNumberFlags) {
    const std::string problem = std::visit(
        [&](auto field) { return Problem(flag, o.*field); }, flag.field);
    if (problem.empty()) continue;
    std::string name(flag.name);
    if (names == OptionNames::kPython) {
      std::replace(name.begin(), name.end(), '-', '_');
      if (name == "duration") name = "duration_s";
    } else {
      name = "--" + name;
    }
    return Fail(ErrorCode::kInvalidArgument, name + ": " + problem);
  }
  if (o.json && o.csv) {
    return Fail(ErrorCode::kInvalidArgument,
                names == OptionNames::kPython
                    ? "json and csv exclude each other"
                    : "--json and --csv exclude each other");
  }
  return {};
}

Result<void> SetSimOption(SimCommandOptions& options, std::string_view name,
                          const std::string& value) {
  if (name == "geometry") {
    options.geometry = value;
    return {};
  }
  for (const NumberFlag& flag : kNumberFlags) {
    if (flag.name != name || !flag.varied) continue;
    if (Result<void> ok = Set(flag, options, value); !ok) {
      return Fail(ErrorCode::kInvalidArgument,
                  "--vary " + std::string(name) + ": " + ok.error().message);
    }
    return {};
  }
  return Fail(ErrorCode::kInvalidArgument,
              "--vary cannot vary \"" + std::string(name) + "\" (see --help)");
}

Result<KeyValues> ParseKeyValues(std::string_view text, char separator) {
  KeyValues out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(separator, start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(start, end - start);
    const std::size_t eq = item.find('=');
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
                                 std::uint64_t fallback, std::uint64_t max) {
  auto it = fields.find(key);
  if (it == fields.end()) return fallback;
  const std::string text = std::move(it->second);
  fields.erase(it);
  Result<std::uint64_t> value = ParseWhole(text, 0, max);
  if (!value) return Named(key, value.error());
  return value;
}

}  // namespace hkv::cli
