#pragma once

// An upper bound on the GPU allocation ratio any policy can reach in the FGD replay
// (docs/replay.md "Upper bound"): a linear-programming relaxation of packing the arrived pods
// into the cluster, solved with GLPK.
//
// Any placement of any subset of the arrived pods (the online policy's placed pods are one)
// gives x[t][k] = pods of type t on nodes of class k (nodes equal in CPU, memory, GPU count and
// model) with, per class k of N nodes of G GPUs:
//   sum_t x[t][k] * cpu_t         <= N * cpu_k            (and the same for memory)
//   sum_t x[t][k] * gpu_milli_t   <= N * G * 1000         (a pod's total milli-GPU)
//   sum_{t: per-GPU milli > 500} x[t][k] * num_gpu_t <= N * G
//                                  (two such requests never share one GPU)
//   sum_{t: per-GPU milli = s} x[t][k] * num_gpu_t <= sum_p a[s][p] * y[p][k]  for every size s,
//   sum_p y[p][k] <= N * G
//       (y[p][k]: GPUs of the class filled as pattern p, one of the maximal multisets of request
//       sizes that fit 1000 milli: an 810 leaves 190, which only the requests of at most 190
//       can use, however many other pods wait)
//   sum_{t: num_gpu_t > G / 2}     x[t][k] <= N            (two such pods never share a node)
// and sum_k x[t][k] <= pods of type t, x[t][k] = 0 where one pod of type t does not fit one
// node of class k (CPU, memory, GPU count, accepted model). The LP optimum of the allocated
// milli-GPU over these x is at least every policy's allocation: what it relaxes is the order of
// arrival (a policy must decide without the future) and the packing within a node and a GPU.

#include <cstdint>
#include <span>
#include <vector>

#include "core/common/result.h"
#include "sim/replay/trace.h"

namespace tessera::sim::replay {

struct AllocationBound {
  double gpu_alloc_pct = 0;  // bound on allocated milli-GPU / capacity, in %
  double gpu_milli = 0;      // the LP optimum
  // A feasible offline packing of the same pods (best-fit decreasing, knowing them all): the
  // offline optimum lies between it and the bound.
  double offline_packing_pct = 0;
  int node_classes = 0;  // rows of the relaxation, for the report
  int gpu_patterns = 0;  // maximal ways to fill one GPU (0: too many, left out)
  int pod_types = 0;     // GPU pod types (CPU-only pods allocate nothing and are left out)
  double solve_seconds = 0;
};

// The bound for placing any subset of `pods` on `nodes`. Fails only if the solver does.
Result<AllocationBound> AllocationUpperBound(const std::vector<TraceNode>& nodes,
                                             std::span<const TracePod> pods);

// The bound at 130% arrived load (the end of the stream) of each seed's replay: the same
// inflated workload RunSeed draws for that seed. Results in the order of `seeds`.
Result<std::vector<AllocationBound>> UpperBoundPerSeed(const std::vector<TraceNode>& nodes,
                                                       const std::vector<TracePod>& pods,
                                                       const std::vector<uint64_t>& seeds,
                                                       double tune = 1.3);

}  // namespace tessera::sim::replay
