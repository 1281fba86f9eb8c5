// `hkv replay`: reads a Mooncake trace, replays it through one cache and
// prints the prefix-cache figures as text or JSON.
#include "hkv/replay.h"

#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "hkv/keys.h"
#include "hkv/mooncake_trace.h"

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

void PrintText(const ReplayResult& r, double wall_s) {
  fmt::print("requests           {}\n", r.requests);
  fmt::print("prompt tokens      {}\n", r.prompt_tokens);
  fmt::print("hit tokens         {}\n", r.hit_tokens);
  fmt::print("token hit ratio    {:.2f}%\n", HitPercent(r));
  fmt::print("evicted blocks     {}\n", r.evicted_blocks);
  fmt::print("rejected requests  {}\n", r.rejected_requests);
  fmt::print("lookup median      {} ns\n", r.lookup_ns_median);
  fmt::print("lookup p99         {} ns\n", r.lookup_ns_p99);
  fmt::print("wall time          {:.2f} s\n", wall_s);
}

void PrintJson(const ReplayResult& r, double wall_s) {
  const nlohmann::json out = {
      {"requests", r.requests},
      {"prompt_tokens", r.prompt_tokens},
      {"hit_tokens", r.hit_tokens},
      {"token_hit_percent", HitPercent(r)},
      {"evicted_blocks", r.evicted_blocks},
      {"rejected_requests", r.rejected_requests},
      {"lookup_ns_median", r.lookup_ns_median},
      {"lookup_ns_p99", r.lookup_ns_p99},
      {"wall_time_s", wall_s},
  };
  fmt::print("{}\n", out.dump(2));
}

int Failure(const Error& error) {
  fmt::print(stderr, "hkv replay: {}\n", error.message);
  return 1;
}

}  // namespace

void RegisterReplay(CLI::App& app) {
  auto options = std::make_shared<ReplayCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "replay",
      "Replay a Mooncake trace through the prefix cache and report hit tokens");
  sub->add_option("TRACE", options->trace,
                  "Mooncake trace (JSON Lines) to replay")
      ->required();
  sub->add_option("--block-size", options->block_size,
                  "Tokens per KV-cache block")
      ->capture_default_str();
  sub->add_option("--hash-unit", options->hash_unit,
                  "Tokens per prefix key; must divide the block size (0: the "
                  "block size)")
      ->capture_default_str();
  sub->add_option("--key-function", options->key_function, "Prefix key digest")
      ->check(CLI::IsMember({"sha256_cbor", "xxh3_128_cbor"}))
      ->capture_default_str();
  sub->add_option("--capacity-tokens", options->capacity_tokens,
                  "Pool size in tokens, evicting least recently freed blocks "
                  "(default: unbounded)");
  sub->add_flag("--json", options->json,
                "Print one JSON object instead of text");
  sub->callback([options] {
    if (const int code = RunReplay(*options); code != 0) {
      throw CLI::RuntimeError(code);
    }
  });
}

int RunReplay(const ReplayCommandOptions& options) {
  const Clock::time_point start = Clock::now();
  Result<KeyFunction> key_function = ParseKeyFunction(options.key_function);
  if (!key_function) return Failure(key_function.error());
  Result<std::vector<TraceRequest>> trace = ReadMooncakeTrace(options.trace);
  if (!trace) return Failure(trace.error());
  const Result<ReplayResult> result = Replay(
      *trace, {.block_size = options.block_size,
               .hash_unit = options.hash_unit,
               .key_function = *key_function,
               .capacity_tokens = options.capacity_tokens,
               .progress = [start](std::size_t done, std::size_t total) {
                 // Quick runs stay quiet; long ones show they are alive.
                 if (Seconds(start) >= 1.0) {
                   fmt::print(stderr, "replay: {}/{} requests\n", done, total);
                 }
               }});
  if (!result) return Failure(result.error());
  const double wall_s = Seconds(start);
  if (options.json) {
    PrintJson(*result, wall_s);
  } else {
    PrintText(*result, wall_s);
  }
  return 0;
}

}  // namespace hkv::cli
