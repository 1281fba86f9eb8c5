// Several simulated engines behind a router (SimulationOptions::instances):
// each engine owns a cache and steps on its own clock; the cluster advances
// whichever is furthest behind, routes each arrival when the clocks reach
// it, and feeds every step's KV events to one ClusterIndex, which the
// prefix routers query (docs/cluster.md).
#pragma once

#include <span>

#include "hkv/simulator.h"

namespace hkv::internal {

// REQUIRES: options and workload validated; options.instances >= 2.
Result<SimulationResult> SimulateCluster(std::span<const SimRequest> workload,
                                         const SimulationOptions& options);

}  // namespace hkv::internal
