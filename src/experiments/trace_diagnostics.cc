// Diagnostics of a simulated trace (hkv/comparison.h): where its reuse
// comes from, and whether an open-loop run kept up with its arrivals.
#include <algorithm>
#include <cstdint>
#include <unordered_set>

#include "check.h"
#include "hkv/comparison.h"

namespace hkv {
namespace {

// A running digest of a segment list: equal lists give equal digests
// (collisions are possible but, at 64 bits, not in these workloads).
std::uint64_t Extend(std::uint64_t digest, const Segment& s) {
  std::uint64_t x = digest ^ (s.id + 0x9e3779b97f4a7c15ULL + (digest << 6));
  x ^= static_cast<std::uint64_t>(s.length) << 32;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

enum class Relation { kResend, kContinuation, kJunction };

struct Seen {
  std::unordered_set<std::uint64_t> prompts;  // whole earlier prompts
  // Earlier prompts but their last segment, when that leaves two or more:
  // a trace's next turn re-cuts the last partial block of the previous one.
  std::unordered_set<std::uint64_t> bodies;
};

// How `prompt` relates to the earlier prompts, which it then joins.
Relation RelationTo(const std::vector<Segment>& prompt, Seen& seen) {
  std::uint64_t digest = 0;
  bool continues = false;
  for (std::size_t i = 0; i < prompt.size(); ++i) {
    digest = Extend(digest, prompt[i]);
    if (i + 1 == prompt.size()) break;
    if (seen.prompts.count(digest) != 0 || seen.bodies.count(digest) != 0) {
      continues = true;
    }
    if (i + 2 == prompt.size() && i >= 1) seen.bodies.insert(digest);
  }
  const bool resend = !seen.prompts.insert(digest).second;
  if (resend) return Relation::kResend;
  return continues ? Relation::kContinuation : Relation::kJunction;
}

}  // namespace

ReuseSplit SplitReuse(std::span<const SimRequest> workload,
                      const SimulationResult& result) {
  HKV_REQUIRE(result.per_request.size() == workload.size(),
              "SplitReuse needs the result of this workload");
  ReuseSplit split;
  Seen seen;
  for (std::size_t i = 0; i < workload.size(); ++i) {
    const Relation relation = RelationTo(workload[i].prompt, seen);
    const std::uint64_t reused = result.per_request[i].reused_tokens;
    switch (relation) {
      case Relation::kResend:
        split.resend_tokens += reused;
        break;
      case Relation::kContinuation:
        split.continuation_tokens += reused;
        break;
      case Relation::kJunction:
        split.junction_tokens += reused;
        break;
    }
  }
  return split;
}

Load LoadOf(std::span<const SimRequest> workload,
            const SimulationResult& result) {
  Load load{.peak_waiting = result.peak_waiting};
  if (workload.empty() || result.makespan_s <= 0.0) return load;
  const double span = workload.back().arrival_s - workload.front().arrival_s;
  if (span > 0.0) {
    load.offered_per_s = static_cast<double>(workload.size()) / span;
  }
  load.served_per_s = static_cast<double>(result.finished) / result.makespan_s;
  load.saturated =
      load.offered_per_s > load.served_per_s && result.makespan_s > 1.5 * span;
  return load;
}

}  // namespace hkv
