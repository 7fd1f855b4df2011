#pragma once

// The offline optimum for tiny clusters (docs/mig-replay.md, "Bounds"): the most demand, in
// memory slices of the intended profiles, that any subset of an arrival sequence can hold at
// once on the cluster's GPUs, over every legal placement with any covering profile. Legality of
// a set of instances does not depend on the order they were created in, so this bounds every
// policy under protocol (a).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/common/result.h"
#include "sim/mig_replay/cluster.h"
#include "sim/mig_replay/demand.h"

namespace tessera::sim::mig_replay {

// The memo key of the exhaustive searches (this one and steady_optimum.h): the request index and
// one part per GPU, the parts sorted so that interchangeable GPUs count as a multiset.
std::string OptimumMemoKey(size_t index, std::vector<std::string> gpu_parts);

// Exhaustive search with memoisation on (request index, GPU layouts); GPUs of the same model in
// the same layout are tried once. Single-instance request types only; meant for 1-2 GPUs and
// up to ~20 requests.
Result<int64_t> OfflineOptimumServedSlices(const MigCluster& cluster,
                                           const std::vector<Arrival>& arrivals);

}  // namespace tessera::sim::mig_replay
