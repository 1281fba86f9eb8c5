// `hkv plan`: capacity of a model's KV cache under page geometries, in the
// reference's shared pool and in per-group pools (see docs/planner.md).
#include <fmt/core.h>

#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "commands.h"
#include "hkv/limits.h"
#include "hkv/model.h"
#include "hkv/planner.h"
#include "numbers.h"
#include "plan_print.h"

namespace hkv::cli {
namespace {

bool IsModelFile(const std::string& model) {
  return model.find('/') != std::string::npos || model.ends_with(".json");
}

Result<ModelSpec> LoadModel(const std::string& model) {
  if (!IsModelFile(model)) return LoadPreset(model);
  Result<std::string> text = ReadSmallFile(model, kMaxConfigFileBytes);
  if (!text) return Named("--model", text.error());
  Result<ModelSpec> spec = ParseModelJson(*text);
  if (!spec) spec.error().message = model + ": " + spec.error().message;
  return spec;
}

int Failure(const std::string& message) {
  fmt::print(stderr, "hkv plan: {}\n", message);
  return 1;
}

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
const CLI::Validator kModelValidator(
    [](std::string& text) {
      if (IsModelFile(text)) {
        return std::filesystem::exists(text) ? std::string()
                                             : "no such file: " + text;
      }
      Result<ModelSpec> model = LoadPreset(text);
      return model ? std::string() : model.error().message;
    },
    "PRESET|FILE");

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

// The rows of the requested geometries; the first error ends the run.
Result<std::vector<PlanRow>> PlanGeometries(const ModelSpec& model,
                                            const PlanOptions& options,
                                            const PlanCommandOptions& o) {
  std::vector<PlanRow> rows;
  for (const std::string& label : o.geometries) {
    Result<Geometry> g =
        label == "auto" ? AutoGeometry(model, options) : ParseGeometry(label);
    Result<Plan> plan = g ? PlanCapacity(model, *g, options)
                          : Result<Plan>(tl::unexpected(g.error()));
    if (!plan) {
      return Fail(plan.error().code,
                  "geometry " + label + ": " + plan.error().message);
    }
    rows.push_back({label, std::move(*plan)});
  }
  return rows;
}

// Whether `b` differs from `a` in its recurrent block only: the split
// layout's state pages do not depend on it, so neither does capacity.
bool SameButRecurrentBlock(const Plan& a, const Plan& b) {
  return a.geometry.target_block == b.geometry.target_block &&
         a.geometry.hash_unit == b.geometry.hash_unit &&
         a.hit_unit == b.hit_unit && a.stride_bytes == b.stride_bytes &&
         a.shared.tokens == b.shared.tokens &&
         a.per_group.tokens == b.per_group.tokens;
}

// The best `top` plans, each resolved geometry once (coupled blocks grow
// alike); runs that differ in the recurrent block only become one row
// labelled T/R1..R2/U.
Result<std::vector<PlanRow>> SearchRows(const ModelSpec& model,
                                        const PlanOptions& options,
                                        const PlanCommandOptions& o) {
  Result<std::vector<Plan>> plans =
      SearchGeometries(model, options, o.max_unit);
  if (!plans) return tl::unexpected(plans.error());
  std::vector<PlanRow> rows;
  std::uint32_t first_r = 0;
  for (Plan& plan : *plans) {
    const Geometry& g = plan.geometry;
    if (!rows.empty() && rows.back().plan.geometry == g) continue;
    if (!rows.empty() && SameButRecurrentBlock(rows.back().plan, plan)) {
      rows.back().label = fmt::format("{}/{}..{}/{}", g.target_block, first_r,
                                      g.recurrent_block, g.hash_unit);
      continue;
    }
    if (rows.size() == o.top) break;
    first_r = g.recurrent_block;
    rows.push_back({fmt::format("{}/{}/{}", g.target_block, g.recurrent_block,
                                g.hash_unit),
                    std::move(plan)});
  }
  return rows;
}

constexpr std::uint64_t kU32 = std::numeric_limits<std::uint32_t>::max();

// The model, parallelism, budget and workload options.
void AddInputOptions(CLI::App& sub, PlanCommandOptions& o) {
  sub.add_option("--model", o.model,
                 "Preset name or model JSON file (at most " +
                     std::to_string(kMaxConfigFileBytes) + " bytes)")
      ->required()
      ->check(kModelValidator);
  sub.add_option("--tp", o.tp, "Tensor-parallel width")
      ->capture_default_str()
      ->check(WholeIn(1, kU32));
  sub.add_option("--dcp", o.dcp, "Decode-context-parallel width")
      ->capture_default_str()
      ->check(WholeIn(1, kU32));
  sub.add_option("--budget", o.budget,
                 "KV-cache memory per rank, e.g. 33GiB, 80GB, 4096")
      ->required()
      ->check(kByteSizeValidator);
  sub.add_option("--context", o.context,
                 "Context length of one request (max_model_len)")
      ->required()
      ->check(WholeIn(1, kU32));
  sub.add_option("--max-batched-tokens", o.max_batched_tokens,
                 "Tokens per step (sliding/chunked admission caps, auto)")
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
  sub.add_option("--max-unit", o.max_unit,
                 "--search: largest hit unit (tokens) to consider")
      ->capture_default_str()
      ->check(WholeIn(1, kU32));
  sub.add_option("--top", o.top, "--search: rows to print")
      ->capture_default_str()
      ->check(WholeIn(1, kU32));
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
  sub->callback([o] {
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
  if (!model) return Failure(model.error().message);
  const PlanOptions options = ToPlanOptions(o);
  Result<std::vector<PlanRow>> rows = o.search
                                          ? SearchRows(*model, options, o)
                                          : PlanGeometries(*model, options, o);
  if (!rows) return Failure(rows.error().message);
  const PlanReport report{model->name, options, std::move(*rows)};
  if (o.json) {
    PrintPlanJson(report);
  } else {
    PrintPlanText(report);
  }
  return 0;
}

}  // namespace hkv::cli
