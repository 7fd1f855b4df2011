#pragma once

#include <span>
#include <vector>

#include "core/model/pod.h"
#include "core/sched/fragmentation.h"
#include "core/sched/mig_demand.h"
#include "core/sched/preferences.h"
#include "core/state/cluster_state.h"

namespace tessera::sched {

// The two measures the scheduler already ranks by, summed over a cluster, for the defragmentation
// planner (docs/defrag.md): how much of the MIG GPUs' free room the demand mix could still take
// (mig::GpuMigModel::Placeability with MigWeights, GiB), and how much of the shared GPUs' free
// capacity it could not (NodeFragmentation with the demand mix's target, in GPUs).
struct ClusterMeasures {
  double mig_placeability = 0;       // higher is better
  double sharing_fragmentation = 0;  // lower is better
};

// The demand mix the measures are taken for: a scheduler's observed mixes, or else that of the
// pods given (the running and the pending ones), observed as Scheduler::Schedule observes a pod:
// its shape for the sharing mix, each app container's instances for the MIG mix when the pod
// may use MIG. Built once per plan; the nodes' measures are then read from it.
// The mixes a running scheduler has observed (Scheduler::demand_mix, mig_demand_mix): the
// requests of every pod it has seen, also those that have ended.
struct ObservedDemand {
  const DemandMix* sharing = nullptr;
  const MigDemandMix* mig = nullptr;
};

class DemandMeasure {
 public:
  // With `observed`, its mixes; without (nullptr members), those of `pods`.
  DemandMeasure(std::span<const model::Pod> pods, const config::NvidiaConfig& nvidia,
                const PolicyDefaults& defaults, ObservedDemand observed = {});
  DemandMeasure(const DemandMeasure&) = delete;
  DemandMeasure& operator=(const DemandMeasure&) = delete;

  ClusterMeasures Node(const state::NodeState& node) const;
  ClusterMeasures Cluster(const state::ClusterState& state) const;

 private:
  struct Mixes {
    DemandMix sharing;
    MigDemandMix mig;
  };
  static Mixes ObserveAll(std::span<const model::Pod> pods, const config::NvidiaConfig& nvidia,
                          const PolicyDefaults& defaults, ObservedDemand observed);

  MigPrior prior_;  // MigWeights refers to it
  Mixes mixes_;
  std::vector<WeightedShape> target_;
  PreparedTarget prepared_;
  MigWeights weights_;
};

}  // namespace tessera::sched
