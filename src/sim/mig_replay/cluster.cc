#include "sim/mig_replay/cluster.h"

#include <bit>

#include "core/config/scheduler_config.h"

namespace tessera::sim::mig_replay {

MigCluster::MigCluster(const std::vector<model::Node>& nodes, const Workload& workload)
    : state_(config::SchedulerConfig{}), workload_(workload) {
  for (const auto& node : nodes) state_.UpsertNode(node);
  type_count_ = workload_.types.size();
  // ClusterState keeps nodes in a std::map: these pointers stay valid while it lives.
  for (const auto& node : nodes) {
    const state::NodeState* ns = state_.node(node.name);
    nodes_.push_back(ns);
    first_gpu_.push_back(gpu_count_);
    for (size_t d = 0; d < ns->devices.size(); ++d) {
      const mig::GpuMigModel& gpu = ns->mig_models[d];
      for (const auto& type : workload_.types) intended_.push_back(IntendedProfile(gpu, type));
      total_memory_slices_ += gpu.memory_slices();
      total_compute_slices_ += gpu.compute_slices();
      ++gpu_count_;
    }
  }
}

void MigCluster::Commit(const std::string& key, int node, const std::vector<InstancePick>& picks) {
  const state::NodeState& ns = *nodes_[node];
  state::PodReservation r;
  r.key = key;
  r.uid = key;
  r.node = ns.name;
  r.devices.emplace_back();
  for (size_t i = 0; i < picks.size(); ++i) {
    const InstancePick& pick = picks[i];
    const model::GpuDevice& device = ns.devices[pick.device];
    const model::MigProfile& profile = ns.mig_models[pick.device].profiles()[pick.profile];
    r.devices[0].push_back(
        codec::ContainerDevice{device.uuid, "NVIDIA", profile.memory_mib, profile.core});
    codec::MigAllocation m;
    m.container_index = 0;
    m.device_index = static_cast<int>(i);
    m.gpu_uuid = device.uuid;
    m.profile = profile.name;
    m.placement = pick.placement;
    r.mig.push_back(std::move(m));
  }
  state_.AddPod(std::move(r));
}

bool AnyPlacement(const mig::GpuMigModel& gpu, const mig::Layout& layout, int profile) {
  for (const auto& placement : gpu.profiles()[profile].placements) {
    if (gpu.CanPlace(layout, profile, placement)) return true;
  }
  return false;
}

int FreeSlices(const mig::GpuMigModel& gpu, const mig::Layout& layout) {
  return static_cast<int>(gpu.memory_slices()) - std::popcount(layout.occupied);
}

}  // namespace tessera::sim::mig_replay
