#pragma once

// A true upper bound on what any policy can do with the same arrivals ("upper-bound",
// docs/mig-replay.md "References and bounds"), unlike the pooled-slices reference, which is an
// online policy and can be beaten.
//  Saturation: the most demand (memory slices of intended profiles) any subset of the stream
//   can have in the cluster at once, when each GPU holds at most the largest sum of intended
//   profile sizes that fits its memory slices: an exact subset-sum of the requests into that
//   capacity. Accepted: the most requests that fit it, smallest first.
//  Steady state: the most measured arrivals any policy can accept when the demand resident at
//   every instant is at most that capacity, relaxed to its integral over the measured window
//   (each accepted request costs its demand × its time in the window; cheapest first). The
//   served figure is the same relaxation's time average (a bound in expectation: Poisson
//   arrivals see time averages).
// Positions, instance limits and compute slices are relaxed away, so the bound can be loose;
// it is never below what a policy achieves (tested).

#include <string_view>
#include <vector>

#include "sim/mig_replay/cluster.h"
#include "sim/mig_replay/demand.h"
#include "sim/mig_replay/protocol.h"

namespace tessera::sim::mig_replay {

inline constexpr std::string_view kUpperBound = "upper-bound";

// The memory slices the cluster can hold of the workload's intended profiles: per GPU, the
// largest sum of intended sizes (any number of each) that fits its memory slices.
int64_t UsableCapacity(const MigCluster& cluster);

RunMetrics UpperBoundSaturation(const MigCluster& cluster, const std::vector<Arrival>& arrivals);
RunMetrics UpperBoundSteadyState(const MigCluster& cluster, const std::vector<Arrival>& arrivals,
                                 size_t warmup);

}  // namespace tessera::sim::mig_replay
