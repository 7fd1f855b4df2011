#pragma once

// A true upper bound on what any policy can do with the same arrivals ("upper-bound",
// docs/mig-replay.md "References and bounds"), unlike the pooled-slices reference, which is an
// online policy and can be beaten.
//  Saturation: the most demand (memory slices of intended profiles) any subset of the stream
//   can have in the cluster at once, when each GPU holds at most the largest sum of intended
//   profile sizes that fits its memory slices: an exact subset-sum of the requests into that
//   capacity. Accepted: the most requests that fit it, smallest first.
//  Steady state: the most measured arrivals any policy can accept when the demand resident at
//   every instant is at most that capacity. Two relaxations, the smaller count is reported:
//   the integral over the measured window (each accepted request costs its demand × its time in
//   the window; cheapest first), and the interval LP, which keeps the capacity at every instant
//   and only lets requests be accepted in part (IntervalAcceptanceBound). The served figure is
//   the integral relaxation's time average (a bound in expectation: Poisson arrivals see time
//   averages).
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
// One request as the interval LP sees it: resident on [start, end) with `size` slices.
struct ResidentRequest {
  double start = 0;
  double end = 0;
  int64_t size = 0;
};

// The LP: max sum x_i, 0 <= x_i <= 1, with sum of size_i x_i over the requests resident at any
// instant <= capacity. Solved as the equivalent min-cost flow along the time line (GLPK): the
// capacity flows from the first instant to the last, along the line or through a request's arc
// (at most its size, worth 1/size per slice), so that at every instant the requests take at
// most the capacity. A request of zero length is resident at its instant. -1 if the solver
// fails.
double IntervalAcceptanceBound(std::vector<ResidentRequest> requests, int64_t capacity);

RunMetrics UpperBoundSteadyState(const MigCluster& cluster, const std::vector<Arrival>& arrivals,
                                 size_t warmup);

}  // namespace tessera::sim::mig_replay
