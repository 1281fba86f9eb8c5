// `hkv compare --search` (hkv/comparison.h): geometries x retention
// settings on the trace, ranked by the recommendation's rule.
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
  for (const std::optional<std::uint32_t> retention :
       {std::optional<std::uint32_t>(), std::optional<std::uint32_t>(0)}) {
    o.experiment.retention_interval = retention;
    o.experiment.given.insert("retention_interval");
    Result<Comparison> c = RunGeometryComparison(o, progress);
    if (!c) return c;
    const std::string suffix = retention ? " interval 0" : " dense";
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
  all.retention = "dense and interval 0";
  all.interval0 = std::nullopt;
  all.recommendation =
      Recommend(all.candidates, o.objective, o.capacity_tolerance);
  return all;
}

}  // namespace hkv
