#include "core/sched/placement_record.h"

#include <string>
#include <vector>

#include "core/codec/mig_allocations.h"
#include "core/codec/pod_devices.h"
#include "core/model/annotations.h"

namespace tessera::sched {

namespace ann = model::annotations;

void RecordPlacement(const model::Pod& pod, const PodRequest& request, int64_t cpu_milli,
                     const state::NodeState& node, const NodeFit& fit, int64_t now_unix,
                     Decision* decision) {
  decision->outcome = Outcome::kScheduled;
  decision->node = node.name;
  codec::PodDevices pod_devices(fit.slots.size());
  std::vector<codec::MigAllocation> mig;
  decision->containers.resize(fit.slots.size());
  for (size_t slot = 0; slot < fit.slots.size(); ++slot) {
    for (size_t pos = 0; pos < fit.slots[slot].size(); ++pos) {
      const DeviceAssignment& a = fit.slots[slot][pos];
      const model::GpuDevice& d = node.devices[a.device];
      GrantedDevice g{d.uuid, a.mem, a.cores, "", a.placement};
      if (a.mig_profile >= 0) {
        g.mig_profile = node.mig_models[a.device].profiles()[a.mig_profile].name;
        mig.push_back(codec::MigAllocation{static_cast<int>(slot), static_cast<int>(pos), d.uuid,
                                           g.mig_profile, a.placement, std::nullopt});
      }
      pod_devices[slot].push_back(
          codec::ContainerDevice{d.uuid, std::string(ann::kNvidiaType), a.mem, a.cores});
      decision->containers[slot].push_back(std::move(g));
    }
  }
  const std::string encoded = codec::EncodePodDevices(pod_devices);
  decision->annotations[std::string(ann::kAssignedNode)] = node.name;
  decision->annotations[std::string(ann::kAssignedTime)] = std::to_string(now_unix);
  decision->annotations[std::string(ann::kDevicesToAllocate)] = encoded;
  decision->annotations[std::string(ann::kDevicesAllocated)] = encoded;
  if (std::string m = codec::EncodeMigAllocations(mig); !m.empty()) {
    decision->annotations[std::string(ann::kMigAllocations)] = m;
  }
  decision->reservation = state::PodReservation{
      pod.Key(),      pod.uid,  node.name, request.num_init, std::move(pod_devices),
      std::move(mig), cpu_milli};
  decision->reservation.priority = pod.priority;
  decision->reservation.labels = pod.labels;
  decision->reservation.controller_kind = pod.controller_kind;
}

}  // namespace tessera::sched
