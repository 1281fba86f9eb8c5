// `hkv compare --search` (hkv/comparison.h): geometries x retention and
// pool settings on the trace, ranked by the recommendation's rule.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hkv/comparison.h"

namespace hkv {

std::vector<std::string> SearchGeometries() {
  std::vector<std::string> out;
  for (const char* target : {"256", "1024", "2048", "4096"}) {
    const std::string t = target;
    out.push_back(t + "/256/256");
    if (t != "256") out.push_back(t + "/" + t + "/" + t);
  }
  return out;
}

Result<Comparison> RunGeometrySearch(const GeometryComparisonOptions& options,
                                     const SimProgress& progress) {
  GeometryComparisonOptions o = options;
  o.geometries = SearchGeometries();
  o.scenarios.clear();
  o.sensitivity = false;
  Comparison all;
  struct Setting {
    std::optional<std::uint32_t> retention_interval;
    const char* retention;
    const char* pools;
    const char* suffix;  // for the reference's settings
  };
  const Setting settings[] = {
      {std::nullopt, "reference", "shared", " dense"},
      {0, "reference", "shared", " interval 0"},
      {std::nullopt, "placement", "shared", ""},
      {std::nullopt, "placement", "rebalanced", ""},
  };
  for (const Setting& setting : settings) {
    o.experiment.retention_interval = setting.retention_interval;
    o.experiment.retention = setting.retention;
    o.experiment.pools = setting.pools;
    o.experiment.given.insert({"retention_interval", "retention", "pools"});
    Result<Comparison> c = RunGeometryComparison(o, progress);
    if (!c) return c;
    const std::string suffix = setting.suffix;
    if (all.configurations.empty())
      all = std::move(*c);
    else {
      for (ConfigurationOutcome& x : c->configurations) {
        all.configurations.push_back(std::move(x));
      }
      all.candidates.insert(all.candidates.end(), c->candidates.begin(),
                            c->candidates.end());
    }
    for (std::size_t i = all.configurations.size() - o.geometries.size();
         i < all.configurations.size(); ++i) {
      all.configurations[i].config.label += suffix;
      all.candidates[i].label = all.configurations[i].config.label;
    }
  }
  all.retention = "dense, interval 0, placement, placement in rebalanced pools";
  all.interval0 = std::nullopt;
  all.recommendation =
      Recommend(all.candidates, o.objective, o.capacity_tolerance);
  CompareWithTheReference(all);
  return all;
}

}  // namespace hkv
