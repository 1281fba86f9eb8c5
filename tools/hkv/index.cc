// `hkv index`: a cluster's prefix index as a service. It subscribes to each
// engine's KV events, mirrors what each instance's cache holds in a
// ClusterIndex (hkv/cluster_index.h), and answers which instance could
// resume a prompt furthest, over HTTP and a ZeroMQ REP socket
// (docs/cluster.md).
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "exit_status.h"
#include "hkv/cluster_index.h"
#include "hkv/limits.h"
#include "hkv/sim_options.h"
#include "index_endpoints.h"
#include "index_http.h"
#include "index_log.h"
#include "index_service.h"
#include "index_state.h"
#include "numbers.h"

namespace hkv::cli {
namespace {

constexpr char kExamples[] = R"(Examples:
  hkv index --groups full:16,recurrent:16 --key-function sha256_cbor \
      --instance tcp://10.0.0.7:5557,tcp://10.0.0.7:5558 \
      --instance tcp://10.0.0.8:5557,tcp://10.0.0.8:5558 --http 127.0.0.1:8088
      two engines of a hybrid layout, with their replay sockets; the
      answers say which instance caches which prefix: keep the listeners
      on loopback or a private network (docs/cluster.md, "Trust")
  hkv index --preset glm53-flash-gb10x4 --instances-file engines.txt \
      --zmq-bind tcp://127.0.0.1:5600
      the measured deployment's layout, one ENDPOINT[,REPLAY] per line
  curl -s localhost:8088/query -d '{"tokens":[1,2,3,4,5]}'
      per instance: hybrid_tokens (every group resumes) and
      attention_tokens (full attention's chain), and the best instance
  curl -s localhost:8088/metrics
      Prometheus metrics (docs/cluster.md)
The engines must publish incremental KV events (the default; a full report
re-announces reused blocks with no removal to match them).)";

// The flags of `hkv simulate` that choose the cache layout; the pool's size
// is not one (the index holds keys, not blocks).
constexpr std::array<std::string_view, 12> kLayoutOptions = {
    "groups",    "hash_unit",    "dcp",      "retention_interval",
    "retention", "key_function", "preset",   "model",
    "tp",        "budget_gib",   "geometry", "spec_drafts"};

std::atomic<bool> stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void OnStopSignal(int /*signal*/) { stop_requested.store(true); }

void InstallSignalHandlers() {
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client gone mid-answer
}

bool IsLayoutOption(std::string_view name) {
  return std::find(kLayoutOptions.begin(), kLayoutOptions.end(), name) !=
         kLayoutOptions.end();
}

// `hkv simulate`'s flags, less those that do not choose the layout.
void AddLayoutOptions(CLI::App& sub, SimCommandOptions& layout) {
  AddSimOptions(sub, layout);
  for (const SimOption& option : SimOptions()) {
    const std::string flag = option.Flag();
    if (flag.empty()) continue;
    CLI::Option* added = sub.get_option_no_throw(flag);
    if (added == nullptr) continue;
    if (IsLayoutOption(option.name)) {
      added->group("Cache layout (as hkv simulate)");
    } else {
      sub.remove_option(added);
    }
  }
  sub.remove_option(sub.get_option("--json"));
  sub.remove_option(sub.get_option("--csv"));
}

void AddServiceOptions(CLI::App& sub, IndexCommandOptions& o) {
  sub.add_option("--instance", o.instances,
                 "ENDPOINT[,REPLAY_ENDPOINT] (repeat): an engine's KV event "
                 "PUB socket and its replay ROUTER socket; instances are "
                 "numbered in order, --instances-file's after these");
  sub.add_option("--instances-file", o.instances_file,
                 "A file of instances, one ENDPOINT[,REPLAY_ENDPOINT] per "
                 "line ('#' comments)");
  sub.add_option("--topic", o.topic,
                 "Subscribe to topics starting with this (default: all)");
  sub.add_option("--key-seed", o.key_seed,
                 "The seed of the engines' key chains (their PYTHONHASHSEED; "
                 "default \"0\" for sha256_cbor; required for "
                 "xxh3_128_cbor, which has no fixed default)")
      ->group("Cache layout (as hkv simulate)");
  sub.add_option("--hashes", o.hashes,
                 "How the engines send block hashes: auto (each stream says, "
                 "by its first batch with a hash), the digest's bytes, or "
                 "the low 64 bits of its big-endian value as integers (the "
                 "reference engine's default)")
      ->check(CLI::IsMember({"auto", "bytes", "low64"}))
      ->capture_default_str();
  sub.add_option("--capacity", o.capacity,
                 "Keys kept per instance, all groups together (about 100 "
                 "bytes each); past it the least recently stored is "
                 "forgotten")
      ->check(WholeIn(1, kMaxPoolBlocks - 1))
      ->capture_default_str();
  sub.add_option("--http", o.http,
                 "HOST:PORT of the HTTP listener (POST /query, GET "
                 "/metrics); port 0 takes a free one, named on stderr")
      ->capture_default_str();
  sub.add_option("--zmq-bind", o.zmq_bind,
                 "Also answer queries on a ZeroMQ REP socket bound here, "
                 "e.g. tcp://127.0.0.1:5600 (tcp://127.0.0.1:* takes a free "
                 "port, named on stderr)");
  sub.add_option("--run-seconds", o.run_seconds,
                 "Stop after this many seconds (default: at SIGINT or "
                 "SIGTERM)")
      ->check(CLI::Range(0.0, 1e9));
}

Result<std::vector<InstanceEndpoints>> Instances(
    const IndexCommandOptions& options) {
  std::vector<InstanceEndpoints> instances;
  for (const std::string& text : options.instances) {
    Result<InstanceEndpoints> instance = ParseInstance(text);
    if (!instance) return Named("--instance", instance.error());
    instances.push_back(std::move(*instance));
  }
  if (!options.instances_file.empty()) {
    Result<std::string> text =
        ReadSmallFile(options.instances_file, kMaxConfigFileBytes);
    if (!text) return Named("--instances-file", text.error());
    Result<std::vector<InstanceEndpoints>> listed =
        ParseInstanceList(*text, options.instances_file);
    if (!listed) return Named("--instances-file", listed.error());
    instances.insert(instances.end(), listed->begin(), listed->end());
  }
  if (instances.empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "no instance: give --instance or --instances-file");
  }
  return instances;
}

// The layout as `hkv simulate` resolves it; a group list needs no pool
// size here, so it gets a nominal one.
Result<SimConfig> Layout(SimCommandOptions o) {
  if (Result<void> ok = CheckSimOptions(o, OptionNames::kFlag); !ok) {
    return tl::unexpected(ok.error());
  }
  if (!o.groups.empty()) o.num_blocks = 1;
  DefaultToMeasured(o, false);
  if (Result<void> ok = ApplyPreset(o); !ok) return tl::unexpected(ok.error());
  return ConfigFromFlags(o);
}

std::string Describe(const SimConfig& layout, const ClusterIndex& index,
                     std::uint32_t capacity) {
  const KeyScheme& scheme = index.key_scheme();
  return fmt::format(
      "{} instances, layout {} ({} groups, hash unit {}, {}), {} keys each",
      index.num_instances(),
      layout.groups.empty() ? layout.label : layout.groups, index.num_groups(),
      scheme.hash_unit, KeyFunctionName(scheme.function), capacity);
}

int Serve(const IndexCommandOptions& options, const SimConfig& layout,
          std::vector<InstanceEndpoints> instances,
          std::unique_ptr<ClusterIndex> index) {
  Log log;
  const std::string described = Describe(layout, *index, options.capacity);
  std::vector<std::string> endpoints;
  endpoints.reserve(instances.size());
  for (const InstanceEndpoints& e : instances) endpoints.push_back(e.endpoint);
  IndexState state(std::move(index), std::move(endpoints), log);
  Result<std::unique_ptr<IndexService>> service =
      IndexService::Create(state, log,
                           {.instances = std::move(instances),
                            .topic = options.topic,
                            .zmq_bind = options.zmq_bind});
  if (!service) return Failure("index", service.error());
  Result<std::unique_ptr<IndexHttp>> http =
      IndexHttp::Start(state, options.http);
  if (!http) return Failure("index", http.error());
  log.Always(described);
  log.Always("http on " + (*http)->address());
  if (const auto zmq = (*service)->zmq_endpoint()) log.Always("zmq on " + *zmq);
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (options.run_seconds) {
    deadline = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double>(*options.run_seconds));
  }
  (*service)->Run(stop_requested, deadline);
  http->reset();
  service->reset();
  log.Always("stopped");
  return kExitOk;
}

}  // namespace

void RegisterIndex(CLI::App& app) {
  auto options = std::make_shared<IndexCommandOptions>();
  // The reference engine's key function, unlike the simulator's default:
  // the index must hash prompts as the engines do.
  options->layout.key_function = "sha256_cbor";
  CLI::App* sub = app.add_subcommand(
      "index",
      "Serve a cluster's prefix index: subscribe to each engine's KV events "
      "and answer, per instance, the prefix of a prompt it could resume by "
      "the cache's own hybrid rules and the attention-only chain beside it "
      "(HTTP POST /query, GET /metrics; a ZeroMQ REP socket)");
  sub->footer(kExamples);
  AddLayoutOptions(*sub, options->layout);
  AddServiceOptions(*sub, *options);
  sub->callback([options] {
    if (const int code = RunIndex(*options); code != 0) {
      throw CLI::RuntimeError(code);
    }
  });
}

int RunIndex(const IndexCommandOptions& options) {
  // Before anything serves or announces itself: a SIGTERM that follows the
  // "http on" line must stop the service, not kill it with the default action.
  InstallSignalHandlers();
  Result<std::vector<InstanceEndpoints>> instances = Instances(options);
  if (!instances) return Failure("index", instances.error());
  Result<SimConfig> layout = Layout(options.layout);
  if (!layout) return Failure("index", layout.error());
  layout->cache.keys.seed = options.key_seed;
  Result<std::unique_ptr<ClusterIndex>> index = ClusterIndex::Create(
      {.instance_config = layout->cache,
       .capacity_keys = options.capacity,
       .hashes = options.hashes == "auto"    ? std::optional<HashEncoding>()
                 : options.hashes == "low64" ? HashEncoding::kLow64
                                             : HashEncoding::kBytes},
      static_cast<std::uint32_t>(
          std::min<std::size_t>(instances->size(), UINT32_MAX)));
  if (!index) return Failure("index", index.error());
  return Serve(options, *layout, std::move(*instances), std::move(*index));
}

}  // namespace hkv::cli
