#pragma once

// What one state of a MIG cluster is worth (docs/mig-replay.md, "Metrics"). All ratios are of
// the cluster's totals, in [0, 1].

#include <utility>
#include <vector>

#include "sim/mig_replay/cluster.h"

namespace tessera::sim::mig_replay {

struct Snapshot {
  double memory_slice_ratio = 0;   // occupied memory slices / all memory slices
  double compute_slice_ratio = 0;  // compute slices of the instances / all compute slices
  double gpus_in_use_ratio = 0;    // GPUs with at least one instance / all GPUs
  // Free memory slices on GPUs where no request type of the workload can be placed any more
  // (its intended profile has no legal placement), / all memory slices: capacity nothing in
  // the demand can use.
  double stranded_ratio = 0;
  // FGD-style expected fragmentation: sum over GPUs and request types t of p(t) * free slices
  // of the GPU when t cannot be placed there, / all memory slices.
  double fragmentation_ratio = 0;
};

// Measures a MigCluster. Built once per run: it groups the workload's request types by their
// intended profile on each GPU.
class SnapshotProbe {
 public:
  explicit SnapshotProbe(const MigCluster& cluster);
  Snapshot Measure() const;

 private:
  const MigCluster& cluster_;
  // Per GPU (flat fleet order): (intended profile or -1, summed probability).
  std::vector<std::vector<std::pair<int, double>>> demand_;
};

}  // namespace tessera::sim::mig_replay
