#include "core/state/gpu_holders.h"

#include <algorithm>

namespace tessera::state {

std::vector<std::vector<size_t>> PodsHoldingEachGpu(const ClusterState& state,
                                                    const NodeState& node, bool shared_only) {
  std::vector<std::vector<size_t>> holders(node.devices.size());
  auto counted = [&](int dev) {
    return dev >= 0 && !(shared_only && node.devices[static_cast<size_t>(dev)].IsMig());
  };
  if (shared_only && std::none_of(node.devices.begin(), node.devices.end(),
                                  [](const model::GpuDevice& d) { return !d.IsMig(); })) {
    return holders;
  }
  size_t position = 0;
  for (const std::string& key : node.pods) {
    const size_t p = position++;
    const PodReservation* r = state.pod(key);
    if (r == nullptr) continue;
    auto mark = [&](const std::string& uuid) {
      const int dev = node.DeviceIndex(uuid);
      if (!counted(dev)) return;
      auto& list = holders[static_cast<size_t>(dev)];
      if (list.empty() || list.back() != p) list.push_back(p);  // once per pod
    };
    for (const auto& slot : r->devices) {
      for (const auto& cd : slot) mark(cd.uuid);
    }
    for (const auto& uuid : r->held_gpus) mark(uuid);
  }
  return holders;
}

}  // namespace tessera::state
