// The kubelet's view of the registered GPUs (agent/advertised_devices.h): deviceSplitCount
// replicas each, at least the instance count for a MIG GPU (W18), health and NUMA per GPU.

#include "agent/advertised_devices.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

model::GpuDevice Gpu(const std::string& uuid, const std::string& mode, int32_t count,
                     int32_t numa) {
  model::GpuDevice d;
  d.uuid = uuid;
  d.mode = mode;
  d.count = count;
  d.numa = numa;
  return d;
}

TEST(AdvertisedDevicesTest, MigGpusGetAtLeastTheirInstanceCountSharedOnesTheSplitCount) {
  EXPECT_EQ(agent::ReplicaCount(Gpu("GPU-a", "hami-core", 10, 0), 4), 4);
  EXPECT_EQ(agent::ReplicaCount(Gpu("GPU-m", "mig", 7, 0), 4), 7);
  EXPECT_EQ(agent::ReplicaCount(Gpu("GPU-m", "mig", 7, 0), 10), 10);
}

TEST(AdvertisedDevicesTest, ReplicasCarryTheirGpusHealthAndNumaWhenAsked) {
  const std::vector<model::GpuDevice> registered = {Gpu("GPU-a", "hami-core", 2, 1),
                                                    Gpu("GPU-m", "mig", 3, 0)};
  auto devices = agent::AdvertisedDevices(registered, {"GPU-m"}, 2, /*numa_topology=*/true);
  ASSERT_EQ(devices.size(), 5U);
  EXPECT_EQ(devices[0], (node::PluginDevice{"GPU-a-0", true, 1}));
  EXPECT_EQ(devices[1], (node::PluginDevice{"GPU-a-1", true, 1}));
  EXPECT_EQ(devices[4], (node::PluginDevice{"GPU-m-2", false, 0}));
  auto without_numa = agent::AdvertisedDevices(registered, {}, 2, /*numa_topology=*/false);
  EXPECT_EQ(without_numa[0], (node::PluginDevice{"GPU-a-0", true, -1}));
  EXPECT_TRUE(agent::AdvertisedDevices({}, {}, 10, false).empty());
}

}  // namespace
}  // namespace tessera
