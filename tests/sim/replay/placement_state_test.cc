#include "sim/replay/placement_state.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/codec/node_register.h"
#include "core/model/annotations.h"

namespace tessera::sim::replay {
namespace {

model::Node GpuNode(const std::string& name) {
  model::GpuDevice d;
  d.uuid = "GPU-" + name;
  d.count = 10;
  d.total_mem_mib = 8000;
  d.total_cores = 100;
  d.type = "NVIDIA-T4";
  d.healthy = true;
  model::Node node;
  node.name = name;
  node.annotations[std::string(model::annotations::kNodeRegister)] = codec::EncodeNodeRegister({d});
  return node;
}

// The replay's node order is the order given, not the state's name order.
TEST(PlacementState, KeepsTheReplayNodeOrder) {
  const PlacementState placement({GpuNode("z"), GpuNode("a")});
  ASSERT_EQ(placement.node_count(), 2);
  EXPECT_EQ(placement.nodes()[0]->name, "z");
  EXPECT_EQ(placement.nodes()[1]->name, "a");
  EXPECT_EQ(placement.NodeIndex("a"), 1);
  EXPECT_EQ(placement.NodeIndex("missing"), -1);
}

TEST(PlacementState, ReserveAccountsAndReleaseFrees) {
  PlacementState placement({GpuNode("a")});
  state::PodReservation r;
  r.key = r.uid = "ns/p";
  r.node = "a";
  r.devices = {{codec::ContainerDevice{"GPU-a", "NVIDIA", 3000, 20}}};
  placement.Reserve(r);
  const state::NodeState& node = *placement.nodes()[0];
  EXPECT_EQ(node.usage[0].used_mem, 3000);
  EXPECT_EQ(node.usage[0].used_cores, 20);
  EXPECT_NE(placement.state().pod("ns/p"), nullptr);
  placement.Release("ns/p");
  EXPECT_EQ(node.usage[0].used_mem, 0);
  EXPECT_EQ(placement.state().pod("ns/p"), nullptr);
  placement.Release("ns/p");  // twice: nothing left to free
  EXPECT_EQ(node.usage[0].used_mem, 0);
}

TEST(ReplayPod, NamespaceNameAndUidFromTheKey) {
  const model::Pod pod = ReplayPod("trace/pod-7");
  EXPECT_EQ(pod.ns, "trace");
  EXPECT_EQ(pod.name, "pod-7");
  EXPECT_EQ(pod.uid, "trace/pod-7");
  EXPECT_EQ(pod.Key(), "trace/pod-7");
  EXPECT_TRUE(pod.containers.empty());
}

}  // namespace
}  // namespace tessera::sim::replay
