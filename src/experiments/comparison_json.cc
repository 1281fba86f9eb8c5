// ComparisonJson and BudgetSweepJson (hkv/comparison.h): schemas
// "hkv.compare/1" and "hkv.compare-sweep/1", documented in docs/simulator.md.
// Numbers are numbers; a figure that is not there is null.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hkv/comparison.h"

namespace hkv {
namespace {

using nlohmann::json;

constexpr const char* kClasses[kNumHitClasses] = {"cold", "sparse", "warm",
                                                  "evicted"};

json Optional(const std::optional<std::uint64_t>& v) {
  return v ? json(*v) : json(nullptr);
}

json Latency(const LatencySummary& s) {
  return {
      {"mean", s.mean_s}, {"p50", s.p50_s}, {"p90", s.p90_s}, {"p99", s.p99_s}};
}

json MissCauses(const SimulationResult& r) {
  const PrefixCacheStats& s = r.manager_stats;
  json out;
  const auto put = [&out](const char* key, const MissCounters& m) {
    out[key] = {{"requests", m.requests}, {"tokens", m.tokens}};
  };
  put("speculative_rewind", s.speculative_rewind);
  put("no_checkpoint", s.no_checkpoint);
  put("window_not_covered", s.window_not_covered);
  put("evicted", s.evicted);
  put("evicted_chain", r.evicted_chains);
  return out;
}

// Every request's arrival, first token and tokens, and the KV usage over
// time: the series of the charts (hkv.plot).
void AddSeries(json& out, const SimulationResult& r) {
  out["per_request"] = json::array();
  for (const RequestMetrics& m : r.per_request) {
    out["per_request"].push_back({{"arrival_s", m.arrival_s},
                                  {"first_token_s", m.first_token_s},
                                  {"prompt_tokens", m.prompt_tokens},
                                  {"reused_tokens", m.reused_tokens}});
  }
  out["kv_usage"] = json::array();
  for (const UsageSample& s : r.usage) {
    out["kv_usage"].push_back({s.time_s, s.usage});
  }
}

json Trace(const ConfigurationOutcome& o) {
  const SimulationResult& r = o.trace;
  json out = {{"requests", r.requests},
              {"finished", r.finished},
              {"prompt_tokens", r.prompt_tokens},
              {"reused_tokens", r.reused_tokens},
              {"reuse_split",
               {{"resend", o.reuse.resend_tokens},
                {"continuation", o.reuse.continuation_tokens},
                {"junction", o.reuse.junction_tokens}}},
              {"ttft_s", Latency(r.ttft)},
              {"tpot_s", Latency(r.tpot)},
              {"output_tokens_per_s", r.output_tokens_per_s},
              {"preemptions", r.preemptions},
              {"miss_causes", MissCauses(r)}};
  for (std::size_t h = 0; h < kNumHitClasses; ++h) {
    out["lookup_ns"][kClasses[h]] = {{"calls", o.lookups[h].calls},
                                     {"p50", Optional(o.lookups[h].p50_ns)},
                                     {"p99", Optional(o.lookups[h].p99_ns)}};
  }
  std::vector<double> ttft;
  for (const RequestMetrics& m : r.per_request) {
    ttft.push_back(m.first_token_s - m.arrival_s);
  }
  std::sort(ttft.begin(), ttft.end());
  out["ttft_sorted_s"] = ttft;  // the CDF
  AddSeries(out, r);
  out["saturation"] = nullptr;
  if (o.load) {
    out["saturation"] = {{"offered_per_s", o.load->offered_per_s},
                         {"served_per_s", o.load->served_per_s},
                         {"peak_waiting", o.load->peak_waiting},
                         {"saturated", o.load->saturated}};
  }
  return out;
}

json Capacity(const ConfigurationOutcome& o) {
  json out = {{"hkv_mean_requests", o.trace.capacity_concurrency}};
  if (!o.config.capacity) return out;
  const DeploymentCapacity& c = *o.config.capacity;
  out["max_model_len"] = o.config.max_model_len;
  out["engine_pool_tokens"] = c.engine_pool_tokens;
  out["engine_max_concurrency"] = c.engine_max_concurrency;
  out["hkv_whole_requests"] = c.whole_requests;
  return out;
}

json Configuration(const ConfigurationOutcome& o) {
  json out = {
      {"label", o.config.label},
      {"groups_resolved", o.config.groups},
      {"hash_unit", o.config.cache.keys.hash_unit},
      {"engine",
       {{"flags",
         o.config.engine.runs() ? json(o.config.engine.argv) : json(nullptr)},
        {"why_not", o.config.engine.runs() ? json(nullptr)
                                           : json(o.config.engine.why_not)}}},
      {"capacity", Capacity(o)},
      {"trace", Trace(o)}};
  for (const GroupResidency& g : o.trace.groups) {
    out["groups"].push_back({{"kind", g.kind}, {"block_size", g.block_size}});
  }
  for (const ScenarioOutcome& s : o.scenarios) {
    json figures = json::object();
    for (const ScenarioFigure& f : s.figures) figures[f.name] = f.value;
    out["scenarios"].push_back({{"spec", s.spec},
                                {"prompt_tokens", s.prompt_tokens},
                                {"reused_tokens", s.reused_tokens},
                                {"figures", figures}});
  }
  out["sensitivity"] = {
      {"interval0_reused_tokens",
       o.interval0 ? json(o.interval0->reused_tokens) : json(nullptr)},
      {"interval0_ttft_p50_s",
       o.interval0 ? json(o.interval0->ttft.p50_s) : json(nullptr)},
      {"unlimited_pool_reused_tokens", Optional(o.unlimited_reused_tokens)}};
  return out;
}

json RecommendationJson(const Comparison& c, const Recommendation& r) {
  json ranking = json::array();
  for (std::size_t i : r.ranking) ranking.push_back(c.candidates[i].label);
  return {{"winner", c.candidates[r.winner].label},
          {"runner_up", r.runner_up ? json(c.candidates[*r.runner_up].label)
                                    : json(nullptr)},
          {"margin", r.margin},
          {"ranking", ranking},
          {"within_tolerance", r.eligible},
          {"why", r.why}};
}

json ComparisonObject(const Comparison& c) {
  json out = {
      {"schema", "hkv.compare/1"},
      {"preset", c.preset},
      {"cost_model", c.cost_model},
      {"times_are_modelled", true},
      {"trace",
       {{"workload", c.trace.empty() ? "bundled-conversation" : c.trace},
        {"requests", c.trace_requests},
        {"prompt_tokens", c.trace_prompt_tokens}}},
      {"retention", c.retention},
      {"objective", std::string(ObjectiveName(c.objective))},
      {"capacity_tolerance", c.capacity_tolerance},
      {"skipped", c.skipped},
      {"configurations", json::array()}};
  for (const ConfigurationOutcome& o : c.configurations) {
    out["configurations"].push_back(Configuration(o));
  }
  out["recommendation"] = RecommendationJson(c, c.recommendation);
  out["sensitivity"] = {{"interval0", c.interval0
                                          ? RecommendationJson(c, *c.interval0)
                                          : json(nullptr)}};
  out["beyond_reference"] =
      c.reference_best
          ? json{{"reference_best",
                  c.configurations[*c.reference_best].config.label},
                 {"sentence", c.beyond_reference}}
          : json(nullptr);
  out["on_the_engine"] = {
      {"engine", "vllm@" + std::string(kEngineCommit)},
      {"best", c.engine_best
                   ? json(c.configurations[*c.engine_best].config.label)
                   : json(nullptr)},
      {"lines", c.on_the_engine}};
  return out;
}

}  // namespace

std::string ComparisonJson(const Comparison& c) {
  return ComparisonObject(c).dump(2);
}

std::string BudgetSweepJson(std::span<const BudgetSweepPoint> points) {
  json out_points = json::array();
  for (const BudgetSweepPoint& p : points) {
    out_points.push_back(
        {{"value", p.budget_gib}, {"reports", ComparisonObject(p.comparison)}});
  }
  const json out = {
      {"schema", "hkv.compare-sweep/1"},
      {"sweep", {{"parameter", "budget_gib"}, {"points", out_points}}}};
  return out.dump(2);
}

}  // namespace hkv
