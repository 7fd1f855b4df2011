#pragma once

// The offline optimum of protocol (b) for tiny clusters (docs/mig-replay.md, "References and
// bounds"): knowing the whole stream, the most intended memory slices any policy can hold,
// summed over the instants just before the measured arrivals (what RunSteadyState averages into
// served_ratio). Each arrival in time order is rejected or placed at any legal placement of any
// covering profile on any GPU; departures free their slices. Checks placement-bound.

#include <cstdint>
#include <vector>

#include "core/common/result.h"
#include "sim/mig_replay/cluster.h"
#include "sim/mig_replay/demand.h"

namespace tessera::sim::mig_replay {

// Which schedules the optimum is taken over.
enum class SteadyAdmission {
  // Any arrival may be turned away: the offline optimum, which placement-bound bounds.
  kAny,
  // An arrival that fits (some covering profile at some legal placement on some GPU) is placed,
  // as tessera binds every pod that fits (issue 39: no admission that trades pods away); only
  // where it places is chosen. Between tessera and kAny: how much of tessera's headroom is
  // placement rather than admission (docs/mig-replay.md, "How much is left").
  kBindEveryFit,
};

// Exhaustive search with memoisation on (arrival, resident instances per GPU), recursion as deep
// as the stream. Single-instance request types only; meant for 1-2 GPUs and ~16-32 arrivals.
Result<int64_t> SteadyOptimumServedSum(const MigCluster& cluster,
                                       const std::vector<Arrival>& arrivals, size_t warmup,
                                       SteadyAdmission admission = SteadyAdmission::kAny);

}  // namespace tessera::sim::mig_replay
