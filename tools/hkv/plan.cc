// `hkv plan`: capacity of a model's KV cache under page geometries, in the
// reference's shared pool and in per-group pools (see docs/planner.md).
#include <fmt/core.h>

#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "commands.h"
#include "exit_status.h"
#include "hkv/deployment.h"
#include "hkv/limits.h"
#include "hkv/model.h"
#include "hkv/plan_report.h"
#include "hkv/planner.h"
#include "numbers.h"
#include "plan_print.h"

namespace hkv::cli {
namespace {

// Usage errors, reported by CLI11 (exit code 2) before the run.
const CLI::Validator kGeometryValidator(
    [](std::string& text) {
      if (text == "auto") return std::string();
      Result<Geometry> g = ParseGeometry(text);
      return g ? std::string() : g.error().message + " or auto";
    },
    "T/R/U|auto");
const CLI::Validator kByteSizeValidator(
    [](std::string& text) {
      Result<std::uint64_t> bytes = ParseByteSize(text);
      return bytes ? std::string() : bytes.error().message;
    },
    "BYTES");
// A file is read when the command runs: one that cannot be is a failure.
const CLI::Validator kModelValidator(
    [](std::string& text) {
      if (IsModelFile(text)) return std::string();
      Result<ModelSpec> model = LoadPreset(text);
      return model ? std::string() : model.error().message;
    },
    "PRESET|FILE");

const CLI::Validator kPresetValidator(
    [](std::string& text) {
      Result<DeploymentPreset> preset = LoadDeploymentPreset(text);
      return preset ? std::string() : preset.error().message;
    },
    "PRESET");

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// The preset's values for the options not given on the command line.
void ApplyDeploymentPreset(const CLI::App& sub, PlanCommandOptions& o) {
  const DeploymentPreset preset = LoadDeploymentPreset(o.preset).value();
  const DeploymentSpec& s = preset.spec;
  const auto unset = [&sub](const char* name) { return sub.count(name) == 0; };
  if (unset("--model")) o.model = s.model;
  if (unset("--tp")) o.tp = s.tp;
  if (unset("--dcp")) o.dcp = s.dcp;
  if (unset("--budget")) o.budget = std::to_string(s.budget_bytes);
  if (unset("--context")) o.context = s.context_tokens;
  if (unset("--spec-tokens")) o.speculative_tokens = preset.speculative_tokens;
  if (unset("--max-batched-tokens")) o.max_batched_tokens = s.in_flight_tokens;
  if (unset("--geometry") && unset("--search")) {
    o.geometries = {std::to_string(s.target_block) + "/" +
                    std::to_string(s.recurrent_block) + "/" +
                    std::to_string(s.hash_unit)};
  }
}

PlanOptions ToPlanOptions(const PlanCommandOptions& o) {
  return {.tp = o.tp,
          .dcp = o.dcp,
          .budget_bytes = ParseByteSize(o.budget).value(),  // validated
          .context_tokens = o.context,
          .max_batched_tokens = o.max_batched_tokens,
          .checkpoint_blocks = o.checkpoint_blocks,
          .speculative_tokens = o.speculative_tokens,
          .retention_interval = o.retention_interval,
          .max_scheduled_tokens = o.max_scheduled_tokens};
}

constexpr std::uint64_t kU32 = std::numeric_limits<std::uint32_t>::max();

// The model, parallelism, budget and workload options.
void AddInputOptions(CLI::App& sub, PlanCommandOptions& o) {
  sub.add_option("--preset", o.preset,
                 "Deployment preset: its model, TP, DCP, budget, context, "
                 "drafts and tokens in flight, unless given (" +
                     Joined(DeploymentPresetNames()) + ")")
      ->check(kPresetValidator);
  sub.add_option("--model", o.model,
                 "Preset name or model JSON file (at most " +
                     std::to_string(kMaxConfigFileBytes) + " bytes)")
      ->check(kModelValidator);
  sub.add_option("--tp", o.tp, "Tensor-parallel width")
      ->capture_default_str()
      ->check(WholeIn(1, kU32));
  sub.add_option("--dcp", o.dcp, "Decode-context-parallel width")
      ->capture_default_str()
      ->check(WholeIn(1, kU32));
  sub.add_option("--budget", o.budget,
                 "KV-cache memory per rank, e.g. 33GiB, 80GB, 4096")
      ->check(kByteSizeValidator);
  sub.add_option("--context", o.context,
                 "Context length of one request (max_model_len)")
      ->check(WholeIn(1, kU32));
  sub.add_option("--max-batched-tokens", o.max_batched_tokens,
                 "Tokens in flight per request at most: the step budget, "
                 "twice it under asynchronous scheduling (a window group's "
                 "blocks; auto's step)")
      ->capture_default_str()
      ->check(WholeIn(1, kU32));
  sub.add_option("--checkpoint-blocks", o.checkpoint_blocks,
                 "Recurrent prefill checkpoint blocks per request")
      ->capture_default_str()
      ->check(WholeIn(0, kU32));
  sub.add_option("--spec-tokens", o.speculative_tokens,
                 "Speculative tokens (default: the model's draft)")
      ->check(WholeIn(0, kU32));
}

// Which geometries to plan, and the output format.
void AddGeometryOptions(CLI::App& sub, PlanCommandOptions& o) {
  CLI::Option* geometry =
      sub.add_option("--geometry", o.geometries,
                     "Target block/recurrent block/hash unit in tokens, or "
                     "auto; repeat for more rows")
          ->check(kGeometryValidator);
  CLI::Option* search = sub.add_flag(
      "--search", o.search,
      "Rank power-of-two geometries (blocks 16..8192) by capacity");
  geometry->excludes(search);
  // Without --search they would be ignored: a usage error instead.
  sub.add_option("--max-unit", o.max_unit,
                 "--search: largest hit unit (tokens) to consider")
      ->capture_default_str()
      ->check(WholeIn(1, kU32))
      ->needs(search);
  sub.add_option("--top", o.top, "--search: rows to print")
      ->capture_default_str()
      ->check(WholeIn(1, kU32))
      ->needs(search);
  sub.add_option("--retention-interval", o.retention_interval,
                 "auto: the retention interval R")
      ->check(WholeIn(0, kU32));
  sub.add_option("--max-scheduled-tokens", o.max_scheduled_tokens,
                 "auto: max_num_scheduled_tokens")
      ->check(WholeIn(1, kU32));
  sub.add_flag("--json", o.json, "Print one JSON object instead of text");
}

}  // namespace

constexpr char kPlanExamples[] = R"(Examples:
  hkv plan --preset glm53-flash-gb10x4 --geometry 256/256/256
      a measured deployment at another geometry: the capacity hkv simulate
      and hkv compare report for it
  hkv plan --model glm53-flash-like --tp 4 --budget 33GiB --context 262144 \
      --geometry 256/256/256 --geometry 2048/256/256
      capacity of two page geometries, shared pool and per-group pools
  hkv plan --model qwen3-next-80b-a3b --budget 40GiB --context 131072 \
      --search --top 5
      the five power-of-two geometries that hold the most tokens
  hkv plan --model my-model.json --budget 64GiB --context 32768 \
      --geometry auto --json
      a model file under the reference's automatic geometry, as JSON)";

void RegisterPlan(CLI::App& app) {
  auto o = std::make_shared<PlanCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "plan",
      "Capacity of a model's KV cache: groups, stride, blocks, concurrency "
      "and waste per page geometry");
  sub->footer(kPlanExamples);
  AddInputOptions(*sub, *o);
  AddGeometryOptions(*sub, *o);
  sub->callback([o, sub] {
    if (!o->preset.empty()) ApplyDeploymentPreset(*sub, *o);
    for (const char* name : {"--model", "--budget", "--context"}) {
      if (sub->count(name) == 0 && o->preset.empty()) {
        throw CLI::RequiredError(std::string(name) + " (or --preset)");
      }
    }
    if (o->geometries.empty() && !o->search) {
      throw CLI::RequiredError("--geometry or --search");
    }
    if (const int code = RunPlan(*o); code != 0) {
      throw CLI::RuntimeError(code);
    }
  });
}

int RunPlan(const PlanCommandOptions& o) {
  Result<ModelSpec> model = LoadModel(o.model);
  if (!model) {
    return Failure("plan",
                   {model.error().code, "--model: " + model.error().message});
  }
  if (!o.preset.empty()) {
    // The preset's draft replaces its model's, as in hkv simulate.
    const DeploymentPreset preset = LoadDeploymentPreset(o.preset).value();
    if (preset.spec.draft && o.model == preset.spec.model) {
      model->draft = *preset.spec.draft;
    }
  }
  const PlanOptions options = ToPlanOptions(o);
  Result<PlanReport> report =
      o.search ? SearchPlans(*model, options, o.max_unit, o.top)
               : PlanGeometries(*model, options, o.geometries);
  if (!report) return Failure("plan", report.error());
  if (o.json) {
    fmt::print("{}\n", PlanReportJson(*report));
  } else {
    PrintPlanText(*report);
  }
  return 0;
}

}  // namespace hkv::cli
