#include "core/sched/defrag_measure.h"

#include "core/sched/cycle_state.h"
#include "core/sched/node_scoring.h"

namespace tessera::sched {
namespace {

bool OpenMigGpu(const state::NodeState& node, size_t d) {
  const model::GpuDevice& device = node.devices[d];
  return device.IsMig() && device.healthy && node.usage[d].Trusted() &&
         node.cordoned.count(device.uuid) == 0;
}

}  // namespace

DemandMeasure::Mixes DemandMeasure::ObserveAll(std::span<const model::Pod> pods,
                                               const config::NvidiaConfig& nvidia,
                                               const PolicyDefaults& defaults,
                                               ObservedDemand observed) {
  Mixes mixes{DemandMix(defaults.demand_decay), MigDemandMix(defaults.demand_decay)};
  if (observed.sharing != nullptr) mixes.sharing = *observed.sharing;
  if (observed.mig != nullptr) mixes.mig = *observed.mig;
  for (const model::Pod& pod : pods) {
    const ParsedPod parsed = ParsePod(pod, nvidia, defaults);
    if (!parsed.request.ok()) continue;
    const PodRequest& request = parsed.request.value();
    if (auto shape = ShapeOf(request, parsed.cpu_milli, parsed.demand_type);
        shape && observed.sharing == nullptr) {
      mixes.sharing.Observe(*shape);
    }
    if (observed.mig != nullptr) continue;
    if (!parsed.vgpu_mode.ok() || !MayUseMig(parsed.vgpu_mode.value())) continue;
    for (size_t i = 0; i < request.slots.size(); ++i) {
      const ContainerRequest& k = request.slots[i];
      if (request.IsInit(i) || k.Empty()) continue;
      mixes.mig.Observe(MigDemandOf(k), k.nums);
    }
  }
  return mixes;
}

DemandMeasure::DemandMeasure(std::span<const model::Pod> pods, const config::NvidiaConfig& nvidia,
                             const PolicyDefaults& defaults, ObservedDemand observed)
    : prior_(defaults.mig_prior),
      mixes_(ObserveAll(pods, nvidia, defaults, observed)),
      target_(mixes_.sharing.Target()),
      prepared_(target_),
      weights_(mixes_.mig, prior_) {}

ClusterMeasures DemandMeasure::Node(const state::NodeState& node) const {
  ClusterMeasures m;
  if (!node.usable()) return m;
  for (size_t d = 0; d < node.devices.size(); ++d) {
    if (!OpenMigGpu(node, d)) continue;
    const mig::GpuMigModel& model = node.mig_models[d];
    m.mig_placeability +=
        model.Placeability(node.usage[d].layout, weights_.For(model), weights_.Stranded(model));
  }
  if (!target_.empty()) m.sharing_fragmentation = NodeFragmentation(CapacityOf(node), prepared_);
  return m;
}

ClusterMeasures DemandMeasure::Cluster(const state::ClusterState& state) const {
  ClusterMeasures sum;
  for (const state::NodeState* node : state.node_list()) {
    const ClusterMeasures m = Node(*node);
    sum.mig_placeability += m.mig_placeability;
    sum.sharing_fragmentation += m.sharing_fragmentation;
  }
  return sum;
}

}  // namespace tessera::sched
