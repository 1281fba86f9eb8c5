// `hkv replay`: reads a Mooncake trace, replays it through one cache (one
// full-attention group, or the groups of --groups) and prints the
// prefix-cache figures as text or JSON.
#include "hkv/replay.h"

#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "exit_status.h"
#include "hkv/group_list.h"
#include "hkv/keys.h"
#include "hkv/limits.h"
#include "hkv/mooncake_trace.h"
#include "hkv/sim_options.h"
#include "hkv/sim_report.h"
#include "numbers.h"
#include "text_wrap.h"

namespace hkv::cli {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double HitPercent(const ReplayResult& r) {
  if (r.prompt_tokens == 0) return 0.0;
  return 100.0 * static_cast<double>(r.hit_tokens) /
         static_cast<double>(r.prompt_tokens);
}

// The hits below the full-attention chain, by cause: JSON name, text label.
struct MissCause {
  const char* name;
  const char* label;
  const MissCounters* counters;
};
std::vector<MissCause> MissCauses(const ReplayResult& r) {
  return {{"speculative_rewind", "miss rewind", &r.speculative_rewind},
          {"no_checkpoint", "miss no checkpoint", &r.no_checkpoint},
          {"window_not_covered", "miss window", &r.window_not_covered},
          {"evicted", "miss evicted", &r.evicted}};
}

void PrintText(const ReplayResult& r, double wall_s) {
  fmt::print("requests           {}\n", r.requests);
  fmt::print("prompt tokens      {}\n", r.prompt_tokens);
  fmt::print("hit tokens         {}\n", r.hit_tokens);
  fmt::print("prompt hit ratio   {:.2f}%\n", HitPercent(r));
  fmt::print("evicted blocks     {}\n", r.evicted_blocks);
  fmt::print("rejected requests  {}\n", r.rejected_requests);
  fmt::print("lookup median      {} ns\n", r.lookup_ns_median);
  fmt::print("lookup p99         {} ns\n", r.lookup_ns_p99);
  fmt::print("wall time          {:.2f} s\n", wall_s);
  for (std::size_t g = 0; g < r.groups.size(); ++g) {
    const GroupResidency& group = r.groups[g];
    fmt::print("{:<19}{}, block {}, {} cached blocks\n",
               fmt::format("group {}", g), group.kind, group.block_size,
               group.cached_blocks);
  }
  for (const MissCause& cause : MissCauses(r)) {
    if (cause.counters->requests == 0) continue;
    fmt::print("{:<19}{} requests, {} tokens short of the chain\n", cause.label,
               cause.counters->requests, cause.counters->tokens);
  }
}

void PrintJson(const ReplayResult& r, double wall_s) {
  nlohmann::json groups = nlohmann::json::array();
  for (const GroupResidency& group : r.groups) {
    groups.push_back({{"kind", group.kind},
                      {"block_size", group.block_size},
                      {"cached_blocks", group.cached_blocks}});
  }
  nlohmann::json out = {
      {"requests", r.requests},
      {"prompt_tokens", r.prompt_tokens},
      {"hit_tokens", r.hit_tokens},
      {"token_hit_percent", HitPercent(r)},
      {"evicted_blocks", r.evicted_blocks},
      {"rejected_requests", r.rejected_requests},
      {"lookup_ns_median", r.lookup_ns_median},
      {"lookup_ns_p99", r.lookup_ns_p99},
      {"wall_time_s", wall_s},
      {"groups", std::move(groups)},
  };
  nlohmann::json misses = nlohmann::json::object();
  for (const MissCause& cause : MissCauses(r)) {
    misses[cause.name] = {{"requests", cause.counters->requests},
                          {"tokens", cause.counters->tokens}};
  }
  out["miss_causes"] = std::move(misses);
  fmt::print("{}\n", out.dump(2));
}

// A malformed list is a usage error, reported by CLI11 before the run.
const CLI::Validator kGroupListValidator(
    [](std::string& text) {
      Result<std::vector<GroupSpec>> groups = ParseGroupList(text);
      return groups ? std::string() : groups.error().message;
    },
    "LIST");

// The trace and the cache's groups; numbers in their ranges.
void AddTraceAndGroupOptions(CLI::App& sub, ReplayCommandOptions& o) {
  sub.add_option("TRACE", o.trace,
                 "Mooncake trace (JSON Lines) to replay: at most " +
                     std::to_string(kMaxRequestsPerWorkload) + " requests, " +
                     std::to_string(kMaxTraceLineBytes) + " bytes per line, " +
                     std::to_string(kMaxTokensPerRequest) +
                     " tokens per request")
      ->required();
  constexpr std::uint64_t kU32 = std::numeric_limits<std::uint32_t>::max();
  CLI::Option* block_size =
      sub.add_option("--block-size", o.block_size, "Tokens per KV-cache block")
          ->capture_default_str()
          ->check(WholeIn(1, kU32));
  sub.add_option(
         "--groups", o.groups,
         "Cache groups instead of one full group of --block-size: "
         "kind:block[:option...],... with kinds full, sliding "
         "(window=W), chunked (chunk=C), recurrent (mode=align|all|none, "
         "spec=S), scratch (blocks=N) and options eagle, replicated")
      ->check(kGroupListValidator)
      ->excludes(block_size);
  sub.add_option("--dcp", o.dcp,
                 "Decode-context-parallel width (sharded groups' blocks "
                 "cover block x dcp tokens)")
      ->capture_default_str()
      ->check(WholeIn(1, kU32));
}

// How the replay runs and prints.
void AddRunOptions(CLI::App& sub, ReplayCommandOptions& o) {
  constexpr std::uint64_t kU32 = std::numeric_limits<std::uint32_t>::max();
  sub.add_option("--max-batched-tokens", o.max_batched_tokens,
                 "Token budget per step: prompts are computed in chunks of "
                 "at most this many tokens")
      ->capture_default_str()
      ->check(WholeIn(1, kU32));
  sub.add_option("--retention-interval", o.retention_interval,
                 "Keep window blocks and recurrent states only where a "
                 "resend lands (0) or also one per N tokens (default: all)")
      ->check(WholeIn(0, kU32));
  sub.add_option("--retention", o.retention, FindSimOption("retention")->help)
      ->check(CLI::IsMember({"reference", "placement"}))
      ->capture_default_str();
  AddFreeOrderOption(sub, o.free_order);
  sub.add_option("--hash-unit", o.hash_unit,
                 "Tokens per prefix key; must divide every block (0: the "
                 "smallest block)")
      ->capture_default_str()
      ->check(WholeIn(0, kU32));
  sub.add_option("--key-function", o.key_function, "Prefix key digest")
      ->check(KeyFunctionIn())
      ->capture_default_str();
  sub.add_option("--capacity-tokens", o.capacity_tokens,
                 "Pool size in tokens, evicting least recently freed blocks "
                 "(default: unbounded; the pool holds at most " +
                     std::to_string(kMaxPoolBlocks) + " blocks)")
      ->check(WholeIn(1, std::numeric_limits<std::uint64_t>::max()));
  sub.add_flag("--json", o.json, "Print one JSON object instead of text");
}

}  // namespace

constexpr char kReplayExamples[] = R"(Examples:
  hkv replay data/traces/mooncake_conversation_trace.jsonl --block-size 256
      hit tokens of one full-attention group of 256-token blocks
  hkv replay TRACE --groups full:2048,recurrent:256 --hash-unit 256
      a hybrid cache: 2048-token attention pages, 256-token states and keys
  hkv replay TRACE --groups full:256 --capacity-tokens 2000000 --json
      with evictions past two million tokens, as JSON)";

void RegisterReplay(CLI::App& app) {
  auto options = std::make_shared<ReplayCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "replay",
      "Replay a Mooncake trace through the prefix cache and report hit tokens");
  sub->footer(kReplayExamples);
  AddTraceAndGroupOptions(*sub, *options);
  AddRunOptions(*sub, *options);
  sub->callback([options] {
    if (const int code = RunReplay(*options); code != 0) {
      throw CLI::RuntimeError(code);
    }
  });
}

int RunReplay(const ReplayCommandOptions& options) {
  const Clock::time_point start = Clock::now();
  Result<KeyFunction> key_function = ParseKeyFunction(options.key_function);
  if (!key_function) return Failure("replay", key_function.error());
  const Result<Retention> retention = ParseRetention(options.retention);
  if (!retention) return Failure("replay", retention.error());
  Result<std::vector<GroupSpec>> groups = std::vector<GroupSpec>{};
  if (!options.groups.empty()) groups = ParseGroupList(options.groups);
  if (!groups) return Failure("replay", groups.error());
  const std::vector<GroupSpec> flag_groups =
      groups->empty()
          ? std::vector<GroupSpec>{{.block_size = options.block_size}}
          : *groups;
  if (Result<void> ok = CheckDcp(flag_groups, options.dcp); !ok) {
    return Failure("replay", ok.error());
  }
  const ReplayOptions replay{
      .block_size = options.block_size,
      .hash_unit = options.hash_unit,
      .key_function = *key_function,
      .capacity_tokens = options.capacity_tokens,
      .groups = std::move(*groups),
      .dcp = options.dcp,
      .max_num_batched_tokens = options.max_batched_tokens,
      .retention_interval = options.retention_interval,
      .retention = *retention,
      .free_order = options.free_order,
      .progress = [start](std::size_t done, std::size_t total) {
        // Quick runs stay quiet; long ones show they are alive.
        if (Seconds(start) >= 1.0) {
          fmt::print(stderr, "replay: {}/{} requests\n", done, total);
        }
      }};
  // The flags are judged before the trace is read: a usage error is not
  // hidden behind a missing file.
  if (Result<void> ok = CheckReplayOptions(replay); !ok) {
    return Failure("replay", ok.error());
  }
  Result<std::vector<TraceRequest>> trace = ReadMooncakeTrace(options.trace);
  if (!trace) return Failure("replay", trace.error());
  const Result<ReplayResult> result = Replay(*trace, replay);
  if (!result) return Failure("replay", result.error());
  const double wall_s = Seconds(start);
  if (options.json) {
    PrintJson(*result, wall_s);
  } else {
    PrintText(*result, wall_s);
    PrintWrapped(
        std::string(kPromptHitRatioMeaning) +
            "; one request at a time in trace order, " +
            (options.capacity_tokens
                 ? "a pool of " + std::to_string(*options.capacity_tokens) +
                       " tokens"
                 : std::string("pool unbounded")) +
            ", no timing",
        "  ");
  }
  return 0;
}

}  // namespace hkv::cli
