#pragma once

// The geometry-free reference policy ("reference-pooled-slices", docs/mig-replay.md
// "References and bounds"; not a bound: an online greedy meets another future): the same
// arrivals and protocol, but each GPU is a pool of memory slices. A pod's instance fits a GPU
// when its intended profile's memory and compute slice counts are at most the GPU's free ones,
// wherever they are;
// the fullest such GPU is chosen (best fit). It shows what placement geometry costs: a policy
// can lose to it only through positions, instance limits and alignment.

#include <map>
#include <string>
#include <vector>

#include "sim/mig_replay/cluster.h"
#include "sim/mig_replay/protocol.h"

namespace tessera::sim::mig_replay {

inline constexpr std::string_view kReferencePooledSlices = "reference-pooled-slices";

class GeometryFreePlacer : public Placer {
 public:
  // Reads the GPUs and intended profiles of `cluster`; never changes it.
  explicit GeometryFreePlacer(const MigCluster& cluster);
  bool Place(const std::string& key, int type) override;
  void Release(const std::string& key) override;
  Snapshot Measure() const override;
  int64_t ServedSlices(const std::string& key, int type) const override;
  int64_t TotalSlices() const override { return cluster_.demand_capacity(); }

 private:
  struct Pool {
    int capacity = 0;  // memory slices
    int compute_capacity = 0;
    int free = 0;
    int compute_used = 0;
    int instances = 0;
  };
  struct Held {
    int gpu = -1;
    int slices = 0;
    int compute = 0;
    int64_t demand = 0;  // MigCluster::DemandOf
  };
  int Need(int gpu, int type) const { return need_[static_cast<size_t>(gpu) * types_ + type]; }
  int Compute(int gpu, int type) const {
    return compute_[static_cast<size_t>(gpu) * types_ + type];
  }

  const MigCluster& cluster_;
  size_t types_ = 0;
  std::vector<Pool> pools_;
  std::vector<std::vector<int>> node_gpus_;  // per node: flat GPU indices
  std::vector<int> need_;                    // [gpu][type]: memory slices, -1 if no profile
  std::vector<int> compute_;                 // [gpu][type]: compute slices
  std::map<std::string, std::vector<Held>> held_;
};

}  // namespace tessera::sim::mig_replay
