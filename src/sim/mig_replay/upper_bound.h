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
//  Pending queue: the most measured arrivals any policy can place by the run's end when a
//   request may wait (PendingPlacementBound), a capacity bound; acceptance on arrival is bounded
//   as in steady state (the waiting pods only take capacity away).
// Where a request's served slices depend on the GPU it gets (mixed-rtx, UniformSlices false),
// the pod counts are bounded in MiB (MemoryUnits) and the demand served by the usable capacity.
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

// What a bound counts capacity and requests in.
struct BoundUnits {
  int64_t capacity = 0;               // of the whole cluster
  std::vector<int64_t> size_by_type;  // one request of each type; 0: no GPU can hold it
};
// Memory slices of intended profiles (UsableCapacity, IntendedServedSlices): exact where a
// request's slices are the same on every GPU (UniformSlices).
BoundUnits SliceUnits(const MigCluster& cluster);
// MiB of intended profiles, on any fleet: per GPU the most intended memory its memory slices can
// hold (any number of each type's intended profile), and per request its instances' smallest
// intended memory over the GPUs. A policy's pods on a GPU never hold more than that GPU's
// capacity, and each holds at least its size.
BoundUnits MemoryUnits(const MigCluster& cluster);

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

// One measured request of the pending-queue protocol.
struct WaitingRequest {
  double arrival = 0;
  double lifetime = 0;
  int64_t size = 0;
};

// The most of `requests` (arriving in [start, end]) a policy can place by `end` when a request
// that does not fit waits and, once placed at p >= arrival, holds `size` on [p, p + lifetime).
// Those still resident at `end` hold at most `capacity` together; those gone by then
// (arrival + lifetime <= end) used size x lifetime of the capacity-time capacity x (end -
// start). The LP relaxation of these two knapsacks (each request in at most one, in part), by
// GLPK; -1 if the solver fails.
double PendingPlacementBound(const std::vector<WaitingRequest>& requests, int64_t capacity,
                             double start, double end);

RunMetrics UpperBoundPendingQueue(const MigCluster& cluster, const std::vector<Arrival>& arrivals,
                                  size_t warmup);

}  // namespace tessera::sim::mig_replay
