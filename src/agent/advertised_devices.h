#pragma once

// What the kubelet is told: the replica ids of each registered GPU (ListAndWatch), by HAMi's
// rule and tessera's one change for MIG GPUs (hami-node.md 6.3, W18).

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/model/device.h"
#include "core/node/device_plugin.h"

namespace tessera::agent {

// deviceSplitCount replicas per GPU in both modes, as HAMi; a MIG GPU at least as many as it
// can hold instances, so the kubelet never caps MIG density below what the scheduler placed.
int32_t ReplicaCount(const model::GpuDevice& gpu, int32_t device_split_count);

// Every registered GPU's replicas with its health (`unhealthy`: GPU UUIDs), and its NUMA node
// when `numa_topology` (enableNumaTopology).
std::vector<node::PluginDevice> AdvertisedDevices(const std::vector<model::GpuDevice>& registered,
                                                  const std::set<std::string>& unhealthy,
                                                  int32_t device_split_count, bool numa_topology);

}  // namespace tessera::agent
