// The workloads of the experiments (hkv/experiment.h): KIND[:ARGS].
#include <charconv>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hkv/azure_trace.h"
#include "hkv/experiment.h"
#include "hkv/mooncake_trace.h"
#include "hkv/scenarios.h"
#include "sim/experiment_util.h"

namespace hkv {
namespace {

using internal::KeyValues;
using internal::ParseKeyValues;

// The bundled trace, under the data folder.
constexpr const char* kDefaultTrace =
    "/traces/mooncake_conversation_trace.jsonl";

// Takes the generator arguments of `fields`, each into its field; what is
// left over is an unknown argument.
class Args {
 public:
  explicit Args(KeyValues fields) : fields_(std::move(fields)) {}

  template <typename T>
  Args& Take(const std::string& key, T& field) {
    auto it = fields_.find(key);
    if (it == fields_.end() || !error_.empty()) return *this;
    char* end = nullptr;
    const double value = std::strtod(it->second.c_str(), &end);
    if (end == it->second.c_str() || *end != 0 || value < 0) {
      error_ = key + "=" + it->second + " is not a number >= 0";
    }
    field = static_cast<T>(value);
    fields_.erase(it);
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
  KeyValues fields_;
  std::string error_;
};

template <typename Options>
Result<std::vector<SimRequest>> Generated(
    Result<void> parsed, const Options& options,
    std::vector<SimRequest> (*generate)(const Options&)) {
  if (!parsed) return tl::unexpected(parsed.error());
  return generate(options);
}

Result<std::vector<SimRequest>> Azure(KeyValues fields) {
  const std::string path = fields[""];
  fields.erase("");
  AzurePrefixOptions o;
  Result<void> ok = Args(std::move(fields))
                        .Take("prefixes", o.num_prefixes)
                        .Take("prefix", o.prefix_tokens)
                        .Take("shared", o.shared_fraction)
                        .Take("seed", o.seed)
                        .Done("azure");
  if (!ok) return tl::unexpected(ok.error());
  return ReadAzureTrace(path, o);
}

Result<std::vector<SimRequest>> Mooncake(const std::string& path) {
  Result<std::vector<TraceRequest>> trace = ReadMooncakeTrace(path);
  if (!trace) return tl::unexpected(trace.error());
  return FromMooncake(*trace);
}

Result<std::vector<SimRequest>> Generator(const std::string& kind,
                                          KeyValues f) {
  if (kind == "fanout") {
    FanOutOptions o;
    Args a(std::move(f));
    a.Take("requests", o.num_requests).Take("prefix", o.prefix_tokens);
    a.Take("suffix", o.suffix_tokens).Take("output", o.output_tokens);
    a.Take("interval", o.interval_s).Take("seed", o.seed);
    std::uint32_t warmup = 0;
    a.Take("warmup", warmup);
    if (warmup != 0) o.warmup = FanOutWarmup::kPrefixFirst;
    return Generated(a.Done(kind), o, &GenerateFanOut);
  }
  if (kind == "agent") {
    AgentSessionOptions o;
    Args a(std::move(f));
    a.Take("sessions", o.num_sessions).Take("turns", o.turns);
    a.Take("system", o.system_tokens).Take("message", o.message_tokens);
    a.Take("output", o.output_tokens).Take("interval", o.interval_s);
    a.Take("think", o.think_s).Take("seed", o.seed);
    return Generated(a.Done(kind), o, &GenerateAgentSessions);
  }
  RepeatOptions o;
  Args a(std::move(f));
  a.Take("requests", o.num_requests).Take("prompt", o.prompt_tokens);
  a.Take("output", o.output_tokens).Take("seed", o.seed);
  return Generated(a.Done(kind), o, &GenerateRepeats);
}

Result<std::vector<SimRequest>> Uncut(const std::string& spec,
                                      const std::string& data_dir) {
  if (spec.empty()) return Mooncake(data_dir + kDefaultTrace);
  const std::size_t colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  const std::string args =
      colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "mooncake") return Mooncake(args);
  if (IsScenarioName(kind)) {  // the named scenarios of hkv/scenarios.h
    Result<Scenario> scenario = ParseScenario(spec);
    if (!scenario) return tl::unexpected(scenario.error());
    return GenerateScenario(*scenario);
  }
  Result<KeyValues> fields =
      args.empty() ? KeyValues{} : ParseKeyValues(args, ',');
  if (!fields) return tl::unexpected(fields.error());
  if (kind == "azure") return Azure(std::move(*fields));
  if (kind == "fanout" || kind == "agent" || kind == "repeat") {
    return Generator(kind, std::move(*fields));
  }
  return Fail(ErrorCode::kInvalidArgument,
              "unknown workload \"" + kind +
                  "\" (mooncake, azure, fanout, agent, needle, repeat, "
                  "cold-prefill, resend, shared-prefix, decode-cell)");
}

}  // namespace

Result<std::vector<SimRequest>> LoadWorkload(const ExperimentOptions& o) {
  // A limit of 0 keeps the whole workload.
  const std::optional<std::size_t> limit =
      o.limit == std::size_t{0} ? std::nullopt : o.limit;
  const WorkloadCut cut{
      .limit = limit, .time_scale = o.time_scale, .duration_s = o.duration_s};
  if (Result<void> ok = cut.Validate(); !ok) return tl::unexpected(ok.error());
  Result<std::vector<SimRequest>> workload = Uncut(o.workload, o.data_dir);
  if (!workload) return workload;
  return CutWorkload(std::move(*workload), cut);
}

}  // namespace hkv
