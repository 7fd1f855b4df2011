#pragma once

// The FGD paper's workload preparation: shuffle the trace's pods and inflate them to `tune`
// (1.3) times the cluster's GPU capacity, as pkg/simulator/core.go (Simulate), simulator.go
// (SortClusterPods, TunePodsByNodeTotalResource, tuneUpPods, tuneDownPods) do.
//
// Go's math/rand stream cannot be reproduced cheaply, so the draws come from std::mt19937_64;
// compare means over seeds, not single seeds. All draws go through UniformIndex and Shuffle
// below, which are defined here (not by the standard library) so that a seed gives the same
// workload with every compiler.

#include <cstdint>
#include <random>
#include <vector>

#include "sim/replay/trace.h"

namespace tessera::sim::replay {

// Uniform integer in [0, n), n > 0, without modulo bias.
size_t UniformIndex(std::mt19937_64& rng, size_t n);

// Fisher-Yates shuffle drawing as Go's rand.Shuffle (from the last element down).
void Shuffle(std::vector<TracePod>& pods, std::mt19937_64& rng);

// The scheduler's node list of one run (syncClusterResourceList): the nodes sorted by name, then
// put in a uniformly random order (the simulator prefixes the names with rand.Perm indices and
// sorts again). Drawn after Inflate, as there.
std::vector<TraceNode> SchedulerNodeOrder(const std::vector<TraceNode>& nodes,
                                          std::mt19937_64& rng);

// The replay order of one run:
//  1. the trace's pods sorted by name, then shuffled (SortClusterPods with shufflePod=true);
//  2. tuned to `tune` x total_gpu_milli of GPU requests (TunePodsByNodeTotalResource):
//     - below the target, copies of pods drawn uniformly with replacement from the name-sorted
//       trace are APPENDED until the next draw would pass the target (tuneUpPods; like the
//       simulator, that test uses the drawn pod's per-GPU gpu_milli, not its total);
//     - above it, random pods are removed until it is reached (tuneDownPods).
// The appended copies stay at the end, unshuffled, as in the simulator: shuffling happens
// before tuning there. Copies are named "<name>-tuned-<i>". tune <= 0 leaves the pods as they
// are (only shuffled).
std::vector<TracePod> Inflate(const std::vector<TracePod>& pods, int64_t total_gpu_milli,
                              double tune, std::mt19937_64& rng);
std::vector<TracePod> Inflate(const std::vector<TracePod>& pods, int64_t total_gpu_milli,
                              double tune, uint64_t seed);

}  // namespace tessera::sim::replay
