#include "sim/mig_replay/cluster.h"

#include <algorithm>
#include <bit>

namespace tessera::sim::mig_replay {

MigCluster::MigCluster(const std::vector<model::Node>& nodes, const Workload& workload)
    : placement_(nodes), workload_(workload) {
  type_count_ = workload_.types.size();
  std::vector<int> first_sizes;  // intended sizes on the first GPU, per type
  uint32_t first_slices = 0;
  for (const state::NodeState* ns : placement_.nodes()) {
    first_gpu_.push_back(gpu_count_);
    for (size_t d = 0; d < ns->devices.size(); ++d) {
      const mig::GpuMigModel& gpu = ns->mig_models[d];
      std::vector<int> sizes;
      for (const auto& type : workload_.types) {
        const int profile = IntendedProfile(gpu, type);
        intended_.push_back(profile);
        sizes.push_back(
            profile < 0 ? -1 : static_cast<int>(gpu.profiles()[profile].placements.front().size));
      }
      if (gpu_count_ == 0) {
        first_sizes = sizes;
        first_slices = gpu.memory_slices();
      }
      uniform_slices_ =
          uniform_slices_ && sizes == first_sizes && gpu.memory_slices() == first_slices;
      total_memory_slices_ += gpu.memory_slices();
      total_compute_slices_ += gpu.compute_slices();
      total_memory_mib_ += ns->devices[d].total_mem_mib;
      ++gpu_count_;
    }
  }
  // Known only now whether slices mean the same on every GPU.
  demand_.assign(intended_.size(), 0);
  size_t gpu = 0;
  for (const state::NodeState* ns : placement_.nodes()) {
    for (size_t d = 0; d < ns->devices.size(); ++d, ++gpu) {
      const mig::GpuMigModel& model = ns->mig_models[d];
      for (size_t t = 0; t < type_count_; ++t) {
        const int profile = intended_[gpu * type_count_ + t];
        if (profile < 0) continue;
        const int64_t slices = model.profiles()[profile].placements.front().size;
        const RequestType& type = workload_.types[t];
        int64_t& demand = demand_[gpu * type_count_ + t];
        if (uniform_slices_) {
          demand = slices;
        } else if (type.memory_mib > 0) {
          demand = type.memory_mib;
        } else {
          demand =
              slices * ns->devices[d].total_mem_mib / std::max<int64_t>(1, model.memory_slices());
        }
      }
    }
  }
}

void MigCluster::Commit(const std::string& key, int node, const std::vector<InstancePick>& picks) {
  const state::NodeState& ns = *nodes()[node];
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
  placement_.Reserve(std::move(r));
}

int64_t MigCluster::ServedSlices(const std::string& key, int type) const {
  const state::PodReservation* pod = state().pod(key);
  if (pod == nullptr) return 0;
  const int node = placement_.NodeIndex(pod->node);
  if (node < 0) return 0;
  const state::NodeState& ns = *nodes()[node];
  int64_t total = 0;
  for (const codec::MigAllocation& m : pod->mig) {
    for (size_t d = 0; d < ns.devices.size(); ++d) {
      if (ns.devices[d].uuid != m.gpu_uuid) continue;
      total += DemandOf(node, static_cast<int>(d), type);
      break;
    }
  }
  return total;
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
