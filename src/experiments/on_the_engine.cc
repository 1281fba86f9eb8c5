// CompareOnTheEngine (hkv/comparison.h): the recommendation's part that
// runs on the reference engine today.
#include <set>
#include <string>
#include <vector>

#include "hkv/comparison.h"
#include "hkv/engine_flags.h"

namespace hkv {
namespace {

std::string EngineName() {
  return "the reference engine (vLLM " + std::string(kEngineCommit) + ")";
}

// One line per distinct reason, naming the first configuration it stops.
std::vector<std::string> WhyNone(const Comparison& c) {
  std::vector<std::string> lines = {"none of these configurations runs on " +
                                    EngineName() + ":"};
  std::set<std::string> said;
  for (const ConfigurationOutcome& o : c.configurations) {
    const std::string& why = o.config.engine.why_not;
    if (said.insert(why).second) lines.push_back(o.config.label + ": " + why);
  }
  return lines;
}

}  // namespace

void CompareOnTheEngine(Comparison& c) {
  c.engine_best.reset();
  c.on_the_engine.clear();
  std::vector<Candidate> runnable;
  std::vector<std::size_t> index;
  for (std::size_t i = 0; i < c.configurations.size(); ++i) {
    if (!c.configurations[i].config.engine.runs()) continue;
    runnable.push_back(c.candidates[i]);
    index.push_back(i);
  }
  if (runnable.empty()) {
    c.on_the_engine = WhyNone(c);
    return;
  }
  const std::size_t best =
      index[Recommend(runnable, c.objective, c.capacity_tolerance).winner];
  c.engine_best = best;
  const SimConfig& config = c.configurations[best].config;
  c.on_the_engine.push_back(config.label + ": vllm serve MODEL " +
                            JoinedFlags(config.engine.argv));
  const std::size_t winner = c.recommendation.winner;
  if (winner == best) {
    c.on_the_engine.push_back("the recommendation itself");
    return;
  }
  // hkv's engine plugin (HKV_KV_CACHE_MANAGER=1) keeps the engine's own
  // rules: what the engine cannot run, it cannot either.
  const SimConfig& ours = c.configurations[winner].config;
  c.on_the_engine.push_back(
      "the recommendation, " + ours.label + ", is not an engine setting (" +
      ours.engine.why_not +
      "): hkv's library runs it, hkv's engine plugin does not yet; against " +
      config.label + " it is " +
      Gain(c.candidates[winner], c.candidates[best], c.objective));
}

}  // namespace hkv
