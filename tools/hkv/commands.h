// The hkv subcommands: each has an options struct, a Register function that
// adds the subcommand to the app, and a Run function returning the exit code
// (exit_status.h: 0 ok, 1 failure, 2 usage error). A registered callback
// that fails throws CLI::RuntimeError carrying that exit code.
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
  std::string retention = "reference";
  FreeOrder free_order = FreeOrder::kPrependUncached;
  bool json = false;
};

void RegisterReplay(CLI::App& app);
int RunReplay(const ReplayCommandOptions& options);

// `hkv plan --model M --budget B --context L ...`: the capacity planner.
struct PlanCommandOptions {
  // A deployment preset: the defaults of the model, parallelism, budget,
  // context, drafts and tokens in flight (the flags given override them).
  std::string preset;
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
// `hkv keys TOKENS ...`: a request's chained keys, one per hash unit.
struct KeysCommandOptions {
  std::string tokens;  // a JSON file with an array of token ids; "-": stdin
  std::string key_function = "sha256_cbor";
  std::uint32_t hash_unit = 16;
  std::optional<std::string> seed = std::nullopt;  // unset: the default
  std::string lora;             // NAME[:PATH]; empty: no adapter
  std::vector<std::string> mm;  // ID:OFFSET:LENGTH each
  std::string salt;             // empty: no salt
  bool json = false;
};

void RegisterKeys(CLI::App& app);
int RunKeys(const KeysCommandOptions& options);

// `hkv simulate ...`: one cache configuration through the engine simulator.
void RegisterSimulate(CLI::App& app);
int RunSimulate(const SimCommandOptions& options);

// `hkv index ...`: a cluster's prefix index, fed by its engines' KV events
// and answering over HTTP and ZeroMQ (docs/cluster.md).
struct IndexCommandOptions {
  SimCommandOptions layout;  // the cache flags of `hkv simulate`
  std::string hashes =
      "auto";  // auto | bytes | low64, as the engines send them
  std::optional<std::string> key_seed = std::nullopt;  // unset: the default
  std::uint32_t capacity = 1'000'000;                  // keys kept per instance
  std::vector<std::string> instances;  // ENDPOINT[,REPLAY_ENDPOINT] each
  std::string instances_file;          // one instance per line
  std::string topic;                   // subscription prefix; "": all
  std::string http = "127.0.0.1:8088";
  std::string zmq_bind;                              // "": no REP socket
  std::optional<double> run_seconds = std::nullopt;  // unset: until a signal
};

void RegisterIndex(CLI::App& app);
int RunIndex(const IndexCommandOptions& options);

// `hkv calibrate ...`: fits the deployment presets' cost models.
struct CalibrateCommandOptions {
  std::vector<std::string> presets;  // empty: every preset with figures
  std::vector<std::string> data;     // empty: the bundled figures
  bool write = false;                // into data/deployments/
  bool json = false;
};

void RegisterCalibrate(CLI::App& app);
int RunCalibrate(const CalibrateCommandOptions& options);

// `hkv compare ...`: several configurations on one workload.
void RegisterCompare(CLI::App& app);
int RunCompare(const CompareCommandOptions& options);

}  // namespace hkv::cli
