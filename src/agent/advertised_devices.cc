#include "agent/advertised_devices.h"

#include <algorithm>

namespace tessera::agent {

int32_t ReplicaCount(const model::GpuDevice& gpu, int32_t device_split_count) {
  return gpu.IsMig() ? std::max(device_split_count, gpu.count) : device_split_count;
}

std::vector<node::PluginDevice> AdvertisedDevices(const std::vector<model::GpuDevice>& registered,
                                                  const std::set<std::string>& unhealthy,
                                                  int32_t device_split_count, bool numa_topology) {
  std::vector<node::PluginDevice> out;
  for (const auto& d : registered) {
    const bool healthy = unhealthy.count(d.uuid) == 0;
    auto ids = node::ReplicaDevices({d.uuid}, {healthy}, {numa_topology ? d.numa : -1},
                                    ReplicaCount(d, device_split_count));
    out.insert(out.end(), ids.begin(), ids.end());
  }
  return out;
}

}  // namespace tessera::agent
