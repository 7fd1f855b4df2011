#pragma once

// The cluster every policy of the MIG benchmark places into: a replay::PlacementState (tessera's
// own state::ClusterState, the one cluster model of both replays), so that the production
// scheduler and the baselines see, change and are measured on exactly the same representation
// (NodeState::mig_models for the rules, usage[i].layout for occupancy), with the intended
// profile of every request type on every GPU on top.

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/mig/layout.h"
#include "core/model/pod.h"
#include "core/state/cluster_state.h"
#include "sim/mig_replay/demand.h"
#include "sim/replay/placement_state.h"

namespace tessera::sim::mig_replay {

// One MIG instance a baseline chose: GPU `device` of the node, profile index in that GPU's
// GpuMigModel, placement.
struct InstancePick {
  int device = -1;
  int profile = -1;
  model::Placement placement;
};

class MigCluster {
 public:
  // Registers `nodes` (MIG nodes, see BuildFleetNodes) and resolves every request type of
  // `workload` to its intended profile on every GPU.
  MigCluster(const std::vector<model::Node>& nodes, const Workload& workload);
  MigCluster(const MigCluster&) = delete;
  MigCluster& operator=(const MigCluster&) = delete;

  state::ClusterState& state() { return placement_.state(); }
  const state::ClusterState& state() const { return placement_.state(); }
  const Workload& workload() const { return workload_; }
  // Nodes in fleet order (their names sort in that order).
  const std::vector<const state::NodeState*>& nodes() const { return placement_.nodes(); }
  int node_count() const { return placement_.node_count(); }

  // The intended profile of request type `type` on GPU `device` of node `node`; -1 when the
  // GPU has none large enough.
  int Intended(int node, int device, int type) const {
    return intended_[(static_cast<size_t>(first_gpu_[node]) + device) * type_count_ + type];
  }

  // Reserves the instances for pod `key` on node `node` (a PodReservation with one device and
  // one codec::MigAllocation per instance, accounted with the profile's memory and cores).
  void Commit(const std::string& key, int node, const std::vector<InstancePick>& picks);
  // A reservation made elsewhere (a defragmentation plan's, on a copy of this state), committed
  // as it is.
  void Reserve(state::PodReservation reservation) { placement_.Reserve(std::move(reservation)); }
  // The pod left: its instances are free (whoever placed it, tessera's scheduler or a baseline).
  void Release(const std::string& key) { placement_.Release(key); }
  // The demand pod `key` (of type `type`) serves on the GPUs it holds, summed over its
  // instances (DemandOf); 0 when it is not placed.
  int64_t ServedSlices(const std::string& key, int type) const;
  // Whether every GPU has the same memory slices and every request type the same intended size
  // on each (served slices then do not depend on where a pod went).
  bool UniformSlices() const { return uniform_slices_; }
  // What one instance of type `type` serves on GPU `device` of node `node` (0 when the GPU has no
  // intended profile for it), in units that do not depend on where a pod went: on a fleet with
  // UniformSlices, the memory slices of its intended profile; elsewhere MiB, the memory a
  // request names (a 19000 MiB request is 4 slices of an A100-40GB but 1 of an RTX PRO 6000:
  // in slices, a pod would serve more where it wastes more), or for a fraction of a GPU its
  // intended profile's share of that GPU's memory.
  int64_t DemandOf(int node, int device, int type) const {
    return demand_[(static_cast<size_t>(first_gpu_[node]) + device) * type_count_ + type];
  }
  // What demand served is a share of, in DemandOf's unit: all memory slices, or all MiB.
  int64_t demand_capacity() const {
    return uniform_slices_ ? total_memory_slices_ : total_memory_mib_;
  }

  int gpu_count() const { return gpu_count_; }
  int64_t total_memory_slices() const { return total_memory_slices_; }
  int64_t total_compute_slices() const { return total_compute_slices_; }

 private:
  replay::PlacementState placement_;
  Workload workload_;
  std::vector<int> first_gpu_;  // per node: index of its first GPU in the flat GPU order
  size_t type_count_ = 0;
  std::vector<int> intended_;    // [gpu][type]
  std::vector<int64_t> demand_;  // [gpu][type], DemandOf
  int gpu_count_ = 0;
  int64_t total_memory_mib_ = 0;
  int64_t total_memory_slices_ = 0;
  int64_t total_compute_slices_ = 0;
  bool uniform_slices_ = true;
};

// Whether `profile` has a legal placement on top of `layout`.
bool AnyPlacement(const mig::GpuMigModel& gpu, const mig::Layout& layout, int profile);

// Free memory slices of a layout.
int FreeSlices(const mig::GpuMigModel& gpu, const mig::Layout& layout);

}  // namespace tessera::sim::mig_replay
