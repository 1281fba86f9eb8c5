// The workloads of the experiments (hkv/experiment.h): KIND[:ARGS].
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "experiments/experiment_util.h"
#include "hkv/azure_trace.h"
#include "hkv/experiment.h"
#include "hkv/limits.h"
#include "hkv/mooncake_trace.h"
#include "hkv/numbers.h"
#include "hkv/scenarios.h"
#include "hkv/token_trace.h"

namespace hkv {
namespace {

using hkv::Named;
using hkv::NumberText;
using hkv::ParseReal;
using hkv::ParseWhole;
using internal::KeyValues;
using internal::ParseKeyValues;

using Limit = std::optional<std::size_t>;

// The bundled trace, under the data folder.
constexpr const char* kDefaultTrace =
    "/traces/mooncake_conversation_trace.jsonl";

// Takes the generator arguments of `fields`, each into its field, checked
// against the field's range; what is left over is an unknown argument. The
// first error is kept.
class Args {
 public:
  explicit Args(KeyValues fields) : fields_(std::move(fields)) {}

  // A whole number in [0, max] (the field's type's maximum by default).
  template <std::unsigned_integral T>
  Args& Take(const std::string& key, T& field,
             std::uint64_t max = std::numeric_limits<T>::max()) {
    const std::optional<std::string> text = Text(key);
    if (!text) return *this;
    Result<std::uint64_t> value = ParseWhole(*text, 0, max);
    if (!value) return Refuse(key, value.error());
    field = static_cast<T>(*value);
    return *this;
  }

  // Seconds, or another real in `range`.
  Args& Take(const std::string& key, double& field,
             const RealRange& range = {0.0, kMaxInputSeconds}) {
    const std::optional<std::string> text = Text(key);
    if (!text) return *this;
    Result<double> value = ParseReal(*text, range);
    if (!value) return Refuse(key, value.error());
    field = *value;
    return *this;
  }

  Result<void> Done(const std::string& kind) const {
    if (!error_.empty()) return Fail(ErrorCode::kInvalidArgument, error_);
    if (fields_.empty()) return {};
    return Fail(ErrorCode::kInvalidArgument,
                "unknown argument \"" + fields_.begin()->first + "\" of " +
                    kind + " (see --help)");
  }

 private:
  // The text of `key`, removed from the fields; nullopt when absent or after
  // an error.
  std::optional<std::string> Text(const std::string& key) {
    auto it = fields_.find(key);
    if (it == fields_.end() || !error_.empty()) return std::nullopt;
    std::string text = std::move(it->second);
    fields_.erase(it);
    return text;
  }
  // "key \"text\" is not ...": the message names the text.
  Args& Refuse(const std::string& key, const Error& error) {
    error_ = key + " " + error.message;
    return *this;
  }

  KeyValues fields_;
  std::string error_;
};

// The generator's workload, its first `limit` requests, once its arguments
// are parsed and valid.
template <typename Options>
Result<std::vector<SimRequest>> Generated(
    Result<void> parsed, const Options& options,
    std::optional<std::size_t> limit,
    std::vector<SimRequest> (*generate)(const Options&,
                                        std::optional<std::size_t>)) {
  if (!parsed) return tl::unexpected(parsed.error());
  if (Result<void> ok = options.Validate(limit); !ok) {
    return tl::unexpected(ok.error());
  }
  return generate(options, limit);
}

Result<std::vector<SimRequest>> Azure(KeyValues fields, Limit limit) {
  const std::string path = fields[""];
  fields.erase("");
  AzurePrefixOptions o;
  Result<void> ok = Args(std::move(fields))
                        .Take("prefixes", o.num_prefixes)
                        .Take("prefix", o.prefix_tokens)
                        .Take("shared", o.shared_fraction, {0.0, 1.0})
                        .Take("seed", o.seed)
                        .Done("azure");
  if (!ok) return tl::unexpected(ok.error());
  return ReadAzureTrace(path, o, limit);
}

Result<std::vector<SimRequest>> Mooncake(const std::string& path, Limit limit) {
  Result<std::vector<TraceRequest>> trace = ReadMooncakeTrace(path, limit);
  if (!trace) return tl::unexpected(trace.error());
  return FromMooncake(*trace);
}

Result<std::vector<SimRequest>> FanOut(KeyValues f, Limit limit) {
  FanOutOptions o;
  Args a(std::move(f));
  a.Take("requests", o.num_requests).Take("prefix", o.prefix_tokens);
  a.Take("suffix", o.suffix_tokens).Take("output", o.output_tokens);
  a.Take("interval", o.interval_s).Take("seed", o.seed);
  std::uint32_t warmup = 0;
  a.Take("warmup", warmup, 1);
  if (warmup != 0) o.warmup = FanOutWarmup::kPrefixFirst;
  return Generated(a.Done("fanout"), o, limit, &GenerateFanOut);
}

Result<std::vector<SimRequest>> Generator(const std::string& kind, KeyValues f,
                                          Limit limit) {
  if (kind == "fanout") return FanOut(std::move(f), limit);
  if (kind == "agent") {
    AgentSessionOptions o;
    Args a(std::move(f));
    a.Take("sessions", o.num_sessions).Take("turns", o.turns);
    a.Take("system", o.system_tokens).Take("message", o.message_tokens);
    a.Take("output", o.output_tokens).Take("interval", o.interval_s);
    a.Take("think", o.think_s).Take("seed", o.seed);
    return Generated(a.Done(kind), o, limit, &GenerateAgentSessions);
  }
  RepeatOptions o;
  Args a(std::move(f));
  a.Take("requests", o.num_requests).Take("prompt", o.prompt_tokens);
  a.Take("output", o.output_tokens).Take("seed", o.seed);
  return Generated(a.Done(kind), o, limit, &GenerateRepeats);
}

// The workload of `spec`, at most `limit` requests of it read or made.
Result<std::vector<SimRequest>> Uncut(const std::string& spec,
                                      const std::string& data_dir,
                                      Limit limit) {
  if (spec.empty()) return Mooncake(data_dir + kDefaultTrace, limit);
  const std::size_t colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  const std::string args =
      colon == std::string::npos ? "" : spec.substr(colon + 1);
  if ((kind == "mooncake" || kind == "azure" || kind == "tokens") &&
      args.empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                kind + " needs a file: " + kind + ":FILE");
  }
  if (kind == "mooncake") return Mooncake(args, limit);
  if (kind == "tokens") return ReadTokenTrace(args, limit);
  if (IsScenarioName(kind)) {  // the named scenarios of hkv/scenarios.h
    Result<Scenario> scenario = ParseScenario(spec);
    if (!scenario) return tl::unexpected(scenario.error());
    return GenerateScenario(*scenario);
  }
  Result<KeyValues> fields =
      args.empty() ? KeyValues{} : ParseKeyValues(args, ',');
  if (!fields) return tl::unexpected(fields.error());
  if (kind == "azure") return Azure(std::move(*fields), limit);
  if (kind == "fanout" || kind == "agent" || kind == "repeat") {
    if (auto it = fields->find(""); it != fields->end()) {
      return Fail(
          ErrorCode::kInvalidArgument,
          "argument \"" + it->second + "\" of " + kind + " is not KEY=VALUE");
    }
    return Generator(kind, std::move(*fields), limit);
  }
  return Fail(ErrorCode::kInvalidArgument,
              "unknown workload \"" + kind +
                  "\" (mooncake, azure, tokens, fanout, agent, needle, repeat, "
                  "cold-prefill, resend, shared-prefix, decode-cell)");
}

}  // namespace

Result<std::vector<SimRequest>> LoadWorkload(const ExperimentOptions& o) {
  // A limit of 0 keeps the whole workload.
  const Limit limit = o.limit == std::size_t{0} ? std::nullopt : o.limit;
  const WorkloadCut cut{
      .limit = limit, .time_scale = o.time_scale, .duration_s = o.duration_s};
  if (Result<void> ok = cut.Validate(); !ok) return tl::unexpected(ok.error());
  const std::string name =
      "--workload " + (o.workload.empty() ? "(default)" : o.workload);
  Result<std::vector<SimRequest>> workload =
      Uncut(o.workload, o.data_dir, limit);
  if (!workload) return Named(name, workload.error());
  if (Result<void> ok = ValidateWorkload(*workload); !ok) {
    return Named(name, ok.error());
  }
  std::vector<SimRequest> out = CutWorkload(std::move(*workload), cut);
  // Scaling can push times past the limit.
  if (Result<void> ok = ValidateWorkload(out); !ok) {
    return Named("--time-scale " + NumberText(o.time_scale), ok.error());
  }
  return out;
}

namespace internal {

void UseUnlimitedPool(CacheConfig& cache,
                      std::span<const SimRequest> workload) {
  std::uint64_t tokens = 0;
  for (const SimRequest& r : workload) {
    tokens += PromptLength(r) + r.output_length;
  }
  std::uint64_t blocks = 1;
  for (const GroupSpec& g : cache.groups) {
    blocks += tokens / TokensPerBlock(g, cache.dcp) + 4 * workload.size();
  }
  cache.group_pool_blocks.clear();
  cache.pool_slot_bytes.clear();
  cache.num_blocks = static_cast<std::uint32_t>(std::min<std::uint64_t>(
      blocks, std::numeric_limits<std::uint32_t>::max() / 2));
}

}  // namespace internal
}  // namespace hkv
