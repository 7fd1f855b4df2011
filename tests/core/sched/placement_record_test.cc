#include "core/sched/placement_record.h"

#include <gtest/gtest.h>

#include "core/codec/mig_allocations.h"
#include "support/builders.h"

namespace tessera::sched {
namespace {

using testing::A100Mig;
using testing::NodeWith;
using testing::PodBuilder;
using testing::SharingGpu;

TEST(PlacementRecordTest, ASharedGpuIsRecordedInHamisAnnotationsAndTheReservation) {
  state::ClusterState state(config::SchedulerConfig{});
  state.UpsertNode(NodeWith("node-a", {SharingGpu("GPU-0"), SharingGpu("GPU-1", 32768, 0, 1)}));
  const model::Pod pod = PodBuilder("ns/p").InitContainer(1, 1000).Container(1, 2000, 30).Build();
  PodRequest request;
  request.num_init = 1;
  NodeFit fit;
  fit.fits = true;
  fit.slots = {{DeviceAssignment{1, 1000, 0, -1, {}}}, {DeviceAssignment{0, 2000, 30, -1, {}}}};
  Decision d;
  RecordPlacement(pod, request, 250, *state.node("node-a"), fit, 1700000000, &d);
  EXPECT_TRUE(d.scheduled());
  EXPECT_EQ(d.node, "node-a");
  ASSERT_EQ(d.containers.size(), 2U);
  EXPECT_EQ(d.containers[0].at(0).uuid, "GPU-1");
  EXPECT_EQ(d.containers[1].at(0).cores, 30);
  EXPECT_EQ(d.annotations.at("hami.io/vgpu-node"), "node-a");
  EXPECT_EQ(d.annotations.at("hami.io/vgpu-time"), "1700000000");
  EXPECT_EQ(d.annotations.at("hami.io/vgpu-devices-allocated"),
            "GPU-1,NVIDIA,1000,0:;GPU-0,NVIDIA,2000,30:;");
  EXPECT_EQ(d.annotations.at("hami.io/vgpu-devices-to-allocate"),
            d.annotations.at("hami.io/vgpu-devices-allocated"));
  EXPECT_FALSE(d.annotations.contains("hami.io/vgpu-mig-allocations"));
  EXPECT_EQ(d.reservation.key, "ns/p");
  EXPECT_EQ(d.reservation.node, "node-a");
  EXPECT_EQ(d.reservation.num_init, 1);
  EXPECT_EQ(d.reservation.cpu_milli, 250);
  ASSERT_EQ(d.reservation.devices.size(), 2U);
  EXPECT_EQ(d.reservation.devices[1].at(0).used_mem, 2000);
}

TEST(PlacementRecordTest, AMigInstanceNamesItsProfileAndPlacement) {
  state::ClusterState state(config::SchedulerConfig{});
  state.UpsertNode(NodeWith("node-m", {A100Mig("GPU-m")}));
  const state::NodeState& node = *state.node("node-m");
  NodeFit fit;
  fit.fits = true;
  fit.slots = {{DeviceAssignment{0, 19968, 43, 3, model::Placement{4, 4}}}};
  Decision d;
  RecordPlacement(PodBuilder("ns/m").Container(1, 19000).MigMode().Build(), PodRequest{}, 0, node,
                  fit, 1, &d);
  ASSERT_EQ(d.containers.size(), 1U);
  EXPECT_EQ(d.containers[0].at(0).mig_profile, "3g.20gb");
  EXPECT_EQ(d.containers[0].at(0).placement, (model::Placement{4, 4}));
  auto mig = codec::DecodeMigAllocations(d.annotations.at("hami.io/vgpu-mig-allocations"));
  ASSERT_TRUE(mig.ok());
  ASSERT_EQ(mig->size(), 1U);
  EXPECT_EQ(mig->at(0).profile, "3g.20gb");
  EXPECT_EQ(mig->at(0).placement, (model::Placement{4, 4}));
  EXPECT_EQ(d.reservation.mig.size(), 1U);
}

}  // namespace
}  // namespace tessera::sched
