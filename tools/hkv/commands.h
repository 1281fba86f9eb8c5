// The hkv subcommands: each has an options struct, a Register function that
// adds the subcommand to the app, and a Run function returning the exit code
// (0 ok, 1 failure). A registered callback that fails throws
// CLI::RuntimeError carrying that exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim_setup.h"

namespace hkv::cli {

// `hkv replay TRACE ...`: replays a Mooncake trace through the prefix cache.
struct ReplayCommandOptions {
  std::string trace;
  std::uint32_t block_size = 16;
  std::uint32_t hash_unit = 0;  // 0: the block size
  std::string key_function = "sha256_cbor";
  std::optional<std::uint64_t> capacity_tokens =
      std::nullopt;  // unset: unbounded
  // Group list (ParseGroupList); empty: one full group of block_size.
  std::string groups;
  std::uint32_t dcp = 1;
  std::uint32_t max_batched_tokens = 8192;
  std::optional<std::uint32_t> retention_interval = std::nullopt;
  FreeOrder free_order = FreeOrder::kPrependUncached;
  bool json = false;
};

void RegisterReplay(CLI::App& app);
int RunReplay(const ReplayCommandOptions& options);

// `hkv plan --model M --budget B --context L ...`: the capacity planner.
struct PlanCommandOptions {
  std::string model;  // a preset name or a model JSON file
  std::uint32_t tp = 1;
  std::uint32_t dcp = 1;
  std::string budget;  // a byte size, e.g. 33GiB
  std::uint64_t context = 0;
  std::vector<std::string> geometries;  // T/R/U or auto
  bool search = false;
  std::uint32_t max_unit = 8192;  // --search: the largest hit unit
  std::uint32_t top = 10;         // --search: rows printed
  std::uint32_t max_batched_tokens = 8192;
  std::uint32_t checkpoint_blocks = 1;
  std::optional<std::uint32_t> speculative_tokens;
  std::optional<std::uint32_t> retention_interval;
  std::optional<std::uint32_t> max_scheduled_tokens;
  bool json = false;
};

void RegisterPlan(CLI::App& app);
int RunPlan(const PlanCommandOptions& options);
// `hkv simulate ...`: one cache configuration through the engine simulator.
void RegisterSimulate(CLI::App& app);
int RunSimulate(const SimCommandOptions& options);

// `hkv compare ...`: several configurations on one workload.
void RegisterCompare(CLI::App& app);
int RunCompare(const CompareCommandOptions& options);

}  // namespace hkv::cli
