// `hkv simulate` (one configuration) and `hkv compare` (several side by
// side): run the engine simulator over one workload and print the figures.
#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "compare_print.h"
#include "exit_status.h"
#include "hkv/comparison.h"
#include "hkv/deployment.h"
#include "hkv/event_publisher.h"
#include "hkv/sim_options.h"
#include "hkv/sim_report.h"
#include "progress.h"
#include "sim_print.h"
#include "sim_setup.h"

namespace hkv::cli {
namespace {

// Prints the runs as the options ask, or the error on stderr (and returns
// its status).
int Print(const char* command, const SimCommandOptions& o,
          const Result<SimRuns>& runs) {
  if (!runs) return Failure(command, runs.error());
  const std::vector<SimReport> reports = ReportsOf(*runs, o);
  if (o.open_loop) {
    for (const SimReport& r : reports) PrintLoad(r);
  }
  if (o.json) {
    fmt::print("{}\n", reports.size() == 1 ? SimReportJson(reports[0])
                                           : SimReportsJson(reports));
  } else if (o.csv) {
    PrintCsv(reports);
  } else {
    PrintText(reports);
    PrintHitRatioMeaning(o);
  }
  return 0;
}

// The flags --vary takes, without "--": "hash-unit, num-blocks, ...".
std::string VariedFlags() {
  std::string names;
  for (const SimOption& option : SimOptions()) {
    if (!option.varied) continue;
    names += (names.empty() ? "" : ", ") + option.Flag().substr(2);
  }
  return names;
}

template <typename Options>
void OnRun(CLI::App* sub, std::shared_ptr<Options> options,
           int (*run)(const Options&)) {
  sub->callback([options, run] {
    if (const int code = run(*options); code != 0) {
      throw CLI::RuntimeError(code);
    }
  });
}

// hkv simulate --kv-events: where and how the run publishes its events.
struct KvEventFlags {
  std::string endpoint;
  std::string replay_endpoint;
  std::string topic;
  std::string hashes = "bytes";
  std::size_t history = 100'000;
  double linger_s = 0.0;
};

void AddKvEventFlags(CLI::App& sub, KvEventFlags& flags) {
  sub.add_option("--kv-events", flags.endpoint,
                 "Publish the run's KV events on a ZeroMQ PUB socket bound "
                 "here, e.g. tcp://127.0.0.1:5557 (tcp://127.0.0.1:* takes a "
                 "free port; stderr names it), in the reference's wire "
                 "format, stamped with the simulated clock (docs/events.md)")
      ->group("KV events");
  sub.add_option("--kv-events-replay", flags.replay_endpoint,
                 "Also bind a ROUTER socket here that replays kept batches "
                 "from a requested sequence number")
      ->needs("--kv-events")
      ->group("KV events");
  sub.add_option("--kv-events-topic", flags.topic,
                 "The topic frame of every message (default: empty)")
      ->needs("--kv-events")
      ->group("KV events");
  sub.add_option("--kv-events-hashes", flags.hashes,
                 "Block hashes as the digest's bytes, or as the low 64 bits "
                 "of its big-endian value")
      ->check(CLI::IsMember({"bytes", "low64"}))
      ->needs("--kv-events")
      ->group("KV events");
  sub.add_option("--kv-events-history", flags.history,
                 "Batches kept for replay (default 100000)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24))
      ->needs("--kv-events")
      ->group("KV events");
  sub.add_option("--kv-events-linger", flags.linger_s,
                 "Seconds to keep serving replay requests after the report "
                 "(default 0)")
      ->check(CLI::Range(0.0, 3600.0))
      ->needs("--kv-events-replay")
      ->group("KV events");
}

// Runs with a publisher: binds it, names its endpoints on stderr, sends
// every batch before the report, then serves replays for the linger.
int RunPublishing(SimCommandOptions options, const KvEventFlags& flags) {
  const Result<KeyFunction> key_function =
      ParseKeyFunction(options.key_function);
  if (!key_function) return RunSimulate(options);  // the run names it
  Result<std::unique_ptr<EventPublisher>> publisher = EventPublisher::Create(
      {.endpoint = flags.endpoint,
       .replay_endpoint =
           flags.replay_endpoint.empty()
               ? std::nullopt
               : std::optional<std::string>(flags.replay_endpoint),
       .topic = flags.topic,
       .key_function = *key_function,
       .hashes = flags.hashes == "low64" ? HashEncoding::kLow64
                                         : HashEncoding::kBytes,
       .replay_batches = flags.history});
  if (!publisher) return Failure("simulate", publisher.error());
  const std::optional<std::string> replay = (*publisher)->replay_endpoint();
  fmt::print(stderr, "hkv simulate: KV events on {}{}\n",
             (*publisher)->endpoint(),
             replay ? " (replay on " + *replay + ")" : "");
  options.kv_events = publisher->get();
  const int code = RunSimulate(options);
  const bool flushed = (*publisher)->Flush(std::chrono::seconds(10));
  const PublisherCounters counters = (*publisher)->counters();
  std::fflush(stdout);
  fmt::print(stderr,
             "hkv simulate: {} KV event batches published, {} dropped{}; "
             "serving replay for {} s\n",
             counters.published, counters.dropped + counters.socket_errors,
             flushed ? "" : ", some still queued after 10 s", flags.linger_s);
  std::this_thread::sleep_for(std::chrono::duration<double>(flags.linger_s));
  return code;
}

}  // namespace

constexpr char kSimulateExamples[] = R"(Examples:
  hkv simulate --preset glm53-flash-gb10x4 --workload resend:prompt=52445
      the measured GB10 deployment: a resend's reuse and both TTFTs
  hkv simulate --geometry 2048/256/256 --limit 500 --json
      the first 500 requests of the bundled conversation trace, as JSON
  hkv simulate --geometry 2048/2048/2048 --retention placement --limit 0
      the whole trace, one recurrent state per prompt end and junction
  hkv simulate --groups full:2048,recurrent:256 --hash-unit 256 \
      --num-blocks 4000 --workload fanout:requests=32,prefix=8192
      a cache given by its groups and pool, on a generated fan-out
  hkv simulate --limit 200 --kv-events 'tcp://127.0.0.1:*' \
      --kv-events-replay 'tcp://127.0.0.1:*' --kv-events-linger 30
      publish the run's KV events; subscribers replay them for 30 s)";

constexpr char kCompareExamples[] = R"(Examples:
  hkv compare
      the reviewers' four page geometries and hkv's four configurations,
      with a recommendation and what the reference's best leaves behind
  hkv compare --geometry 4096/256/256 --objective reuse --json
      one more column, ranked by reused tokens, as JSON
  hkv compare --geometry 2048/256/256,pools=per-group,retention=placement
      one more configuration: a geometry with its pools and retention
  hkv compare --sweep budget-gib=16,33,66,132 --json > sweep.json
      hit ratio by KV budget; python3 -m hkv.plot sweep.json draws it)";

void RegisterSimulate(CLI::App& app) {
  auto options = std::make_shared<SimCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "simulate",
      "Simulate an engine serving a workload on one cache configuration "
      "(modelled times, measured cache-manager CPU time)");
  sub->footer(kSimulateExamples);
  AddSimOptions(*sub, *options);
  auto events = std::make_shared<KvEventFlags>();
  AddKvEventFlags(*sub, *events);
  sub->callback([options, events] {
    const int code = events->endpoint.empty()
                         ? RunSimulate(*options)
                         : RunPublishing(*options, *events);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

int RunSimulate(const SimCommandOptions& options) {
  return Print("simulate", options,
               RunSimulation(options, StderrProgress(options.quiet)));
}

void RegisterCompare(CLI::App& app) {
  auto options = std::make_shared<CompareCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "compare",
      "Compare cache configurations side by side. Without --config or "
      "--vary: page geometries 256/256/256, 2048/2048/2048, 2048/2048/256 "
      "and 2048/256/256 as the reference runs them, then hkv's "
      "2048/2048/2048 and 2048/256/256 with placement and 2048/2048/2048 "
      "and 256/256/256 with placement in rebalanced pools (and each "
      "--geometry), of the "
      "measured GB10 deployment (preset glm53-flash-gb10x4) on the named "
      "scenarios and the first 2000 requests of the bundled conversation "
      "trace, with a recommendation, its sensitivity and what the "
      "reference's best leaves behind (docs/simulator.md, "
      "docs/beyond.md)");
  sub->footer(kCompareExamples);
  AddSimOptions(*sub, options->sim);
  sub->add_option("--config", options->configs,
                  "A configuration (repeat): GROUPS[;unit=U][;blocks=N|"
                  ";capacity=T][;label=L] or geometry=T/R/U[;blocks=N]"
                  "[;label=L]; the default is the built-in comparison");
  // Repeatable here: each --geometry adds a column.
  sub->remove_option(sub->get_option("--geometry"));
  sub->add_option("--geometry", options->geometries,
                  "T/R/U[,pools=LAYOUT][,retention=RETENTION] (repeat): a "
                  "column of the deployment at this page geometry, with its "
                  "own pools and retention in the built-in comparison; "
                  "after the --config ones (with --vary: the geometry of "
                  "the varied configuration)");
  sub->add_option("--vary", options->vary,
                  "NAME=V1,V2,...: one column per value of one flag (" +
                      VariedFlags() +
                      ") on the one --config or the flags' cache");
  sub->add_option("--objective", options->objective,
                  "What the recommendation optimises, among the "
                  "configurations within 5 % of the best capacity: ttft-p50, "
                  "ttft-p99, reuse, capacity, decode")
      ->capture_default_str()
      ->excludes("--config")
      ->excludes("--vary");
  // Flags a mode would ignore are excluded from it (a usage error).
  sub->add_flag("--search", options->search,
                "Rank geometries (target 256..4096, recurrent pages and hash "
                "unit 256 or the target) x retention (dense, interval 0, "
                "placement, placement in rebalanced pools) on the trace, for "
                "the deployment and budget of the flags")
      ->excludes("--config")
      ->excludes("--vary")
      ->excludes("--geometry");
  sub->add_option("--sweep", options->sweep,
                  "budget-gib=V1,V2,...: the hit ratio of each geometry on "
                  "the trace at each KV budget per rank (JSON for "
                  "python3 -m hkv.plot)")
      ->excludes("--search")
      ->excludes("--config")
      ->excludes("--vary")
      ->excludes("--csv");
  OnRun(sub, options, &RunCompare);
}

namespace {

int RunSweep(const CompareCommandOptions& options,
             const GeometryComparisonOptions& ab) {
  Result<std::vector<double>> budgets = ParseBudgetSweep(options.sweep);
  Result<std::vector<BudgetSweepPoint>> points =
      !budgets
          ? tl::unexpected(budgets.error())
          : RunBudgetSweep(ab, *budgets, StderrProgress(options.sim.quiet));
  if (!points) return Failure("compare", points.error());
  if (options.sim.json) {
    fmt::print("{}\n", BudgetSweepJson(*points));
  } else {
    PrintSweep(*points);
  }
  return 0;
}

}  // namespace

int RunCompare(const CompareCommandOptions& options) {
  if (!options.configs.empty() || !options.vary.empty()) {
    return Print("compare", options.sim,
                 RunComparison(options, StderrProgress(options.sim.quiet)));
  }
  Result<GeometryComparisonOptions> ab = GeometryComparisonFrom(options);
  if (ab && !options.sweep.empty()) return RunSweep(options, *ab);
  Result<Comparison> c =
      !ab ? Result<Comparison>(tl::unexpected(ab.error()))
      : options.search
          ? RunGeometrySearch(*ab, StderrProgress(options.sim.quiet))
          : RunGeometryComparison(*ab, StderrProgress(options.sim.quiet));
  if (!c) return Failure("compare", c.error());
  if (options.sim.json) {
    fmt::print("{}\n", ComparisonJson(*c));
  } else if (options.sim.csv) {
    PrintComparisonCsv(*c);
  } else if (options.search) {
    PrintSearch(*c);
  } else {
    PrintComparison(*c);
    PrintHitRatioMeaning(options.sim);
  }
  return 0;
}

}  // namespace hkv::cli
