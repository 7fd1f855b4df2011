#include "core/state/cluster_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <random>

#include "core/common/strings.h"
#include "support/builders.h"
#include "support/reservations.h"

namespace tessera::state {
namespace {

using ::testing::HasSubstr;
using testing::NodeWith;
using testing::RtxPro6000Mig;
using testing::SharedGpuPod;
using testing::SharingGpu;

TEST(ClusterStateTest, AddAndRemoveTouchOnlyTheirDevices) {
  ClusterState s{config::SchedulerConfig{}};
  s.UpsertNode(NodeWith("n", {SharingGpu("GPU-0", 32768, 0, 0), SharingGpu("GPU-1", 32768, 0, 1)}));
  s.AddPod(SharedGpuPod("ns/a", "n", "GPU-1", 1000, 10));
  s.AddPod(SharedGpuPod("ns/b", "n", "GPU-1", 2000, 20));
  const NodeState* n = s.node("n");
  EXPECT_EQ(n->usage[0], DeviceUsage{});
  EXPECT_EQ(n->usage[1].used, 2);
  EXPECT_EQ(n->usage[1].used_mem, 3000);
  EXPECT_EQ(n->usage[1].used_cores, 30);
  auto removed = s.RemovePod("ns/a");
  ASSERT_TRUE(removed.has_value());
  EXPECT_EQ(n->usage[1].used, 1);
  EXPECT_EQ(n->usage[1].used_mem, 2000);
  EXPECT_FALSE(s.RemovePod("ns/a").has_value());
}

TEST(ClusterStateTest, ACopyIsIndependentAndListsItsOwnNodes) {
  ClusterState s{config::SchedulerConfig{}};
  s.UpsertNode(NodeWith("n", {SharingGpu("GPU-0")}));
  s.AddPod(SharedGpuPod("ns/a", "n", "GPU-0", 1000, 10));
  ClusterState copy = s;
  ASSERT_EQ(copy.node_list().size(), 1U);
  EXPECT_EQ(copy.node_list()[0], copy.node("n"));
  EXPECT_NE(copy.node_list()[0], s.node("n"));
  ASSERT_TRUE(copy.RemovePod("ns/a").has_value());
  EXPECT_EQ(copy.node("n")->usage[0].used, 0);
  EXPECT_EQ(s.node("n")->usage[0].used, 1);  // the original keeps its pod
  EXPECT_NE(s.pod("ns/a"), nullptr);
  copy.AddPod(SharedGpuPod("ns/b", "n", "GPU-0", 3000, 10));
  EXPECT_EQ(copy.node("n")->usage[0].used_mem, 3000);
  EXPECT_EQ(s.node("n")->usage[0].used_mem, 1000);
}

TEST(ClusterStateTest, PodBeforeItsNodeIsAppliedWhenTheNodeRegisters) {
  ClusterState s{config::SchedulerConfig{}};
  s.AddPod(SharedGpuPod("ns/a", "late", "GPU-0", 1000, 10));
  EXPECT_FALSE(s.node("late")->usable());
  s.UpsertNode(NodeWith("late", {SharingGpu("GPU-0")}));
  EXPECT_TRUE(s.node("late")->usable());
  EXPECT_EQ(s.node("late")->usage[0].used_mem, 1000);
}

TEST(ClusterStateTest, ReRegisteringANodeReappliesItsPods) {
  ClusterState s{config::SchedulerConfig{}};
  s.UpsertNode(NodeWith("n", {SharingGpu("GPU-0")}));
  s.AddPod(SharedGpuPod("ns/a", "n", "GPU-0", 1000, 10));
  s.UpsertNode(NodeWith("n", {SharingGpu("GPU-9"), SharingGpu("GPU-0", 32768, 0, 1)}));
  EXPECT_EQ(s.node("n")->usage[0].used_mem, 0);
  EXPECT_EQ(s.node("n")->usage[1].used_mem, 1000);
  s.RemovePod("ns/a");
  EXPECT_EQ(s.node("n")->usage[1], DeviceUsage{});
}

TEST(ClusterStateTest, InitContainersCountAtPeakAppContainersAddUp) {
  ClusterState s{config::SchedulerConfig{}};
  s.UpsertNode(NodeWith("n", {SharingGpu("GPU-0")}));
  PodReservation r{"ns/p",
                   "u",
                   "n",
                   2,
                   {{{"GPU-0", "NVIDIA", 5000, 30}},
                    {{"GPU-0", "NVIDIA", 7000, 10}},
                    {{"GPU-0", "NVIDIA", 3000, 20}},
                    {{"GPU-0", "NVIDIA", 2000, 20}}},
                   {}};
  s.AddPod(r);
  const DeviceUsage& u = s.node("n")->usage[0];
  EXPECT_EQ(u.used_mem, 7000);  // max(init peak 7000, app sum 5000)
  EXPECT_EQ(u.used_cores, 40);  // max(init peak 30, app sum 40)
  EXPECT_EQ(u.used, 2);         // max(1, two app slots)
}

// Pod ns/p on node n: two 1g.24gb of GPU-r (an RTX PRO 6000), at slices 0-2 and 9-11.
PodReservation TwoRtxInstances() {
  return PodReservation{"ns/p",
                        "u",
                        "n",
                        0,
                        {{{"GPU-r", "NVIDIA", 24192, 25}, {"GPU-r", "NVIDIA", 24192, 25}}},
                        {{0, 0, "GPU-r", "1g.24gb", {0, 3}, std::nullopt},
                         {0, 1, "GPU-r", "1g.24gb", {9, 3}, std::nullopt}}};
}

TEST(ClusterStateTest, MigInstancesRebuildTheLayout) {
  ClusterState s{config::SchedulerConfig{}};
  s.UpsertNode(NodeWith("n", {RtxPro6000Mig("GPU-r")}));
  const PodReservation r = TwoRtxInstances();
  s.AddPod(r);
  const DeviceUsage& u = s.node("n")->usage[0];
  EXPECT_EQ(u.layout.occupied, 0b111000000111U);
  EXPECT_TRUE(u.Trusted());
  s.RemovePod("ns/p");
  EXPECT_EQ(s.node("n")->usage[0], DeviceUsage{});
}

// How full each MIG model is (what the stranded-slice cost reads) and how many pods hold MIG
// instances follow pods, nodes, re-registration, copies and subsets.
TEST(ClusterStateTest, MigFillFollowsPodsNodesCopiesAndSubsets) {
  ClusterState s{config::SchedulerConfig{}};
  s.UpsertNode(NodeWith("n", {RtxPro6000Mig("GPU-r")}));
  s.UpsertNode(NodeWith("m", {RtxPro6000Mig("GPU-s")}));
  const int64_t per_gpu = s.node("n")->mig_models[0].memory_slices();
  ASSERT_GT(per_gpu, 0);
  using Fill = std::pair<int64_t, int64_t>;
  const auto fill = [](const ClusterState& state) {
    if (state.mig_fill().size() != 1)
      return Fill{-1, static_cast<int64_t>(state.mig_fill().size())};
    const ClusterState::MigFill& f = state.mig_fill().begin()->second;
    return Fill{f.used_slices, f.slices};
  };
  // The room per profile, summed: what each GPU's layout keeps, looked up afresh.
  const auto room_matches = [](const ClusterState& state) {
    std::array<int64_t, mig::kMaxProfiles> expected{};
    for (const NodeState* node : state.node_list()) {
      for (size_t i = 0; i < node->mig_models.size(); ++i) {
        const mig::ProfileRoom room = node->mig_models[i].Room(node->usage[i].layout);
        for (size_t p = 0; p < room.size(); ++p) expected[p] += room[p];
      }
    }
    return state.mig_fill().size() == 1 && state.mig_fill().begin()->second.room == expected;
  };
  EXPECT_EQ(fill(s), (Fill{0, 2 * per_gpu}));
  EXPECT_TRUE(room_matches(s));
  const PodReservation r = TwoRtxInstances();
  const std::array<int64_t, mig::kMaxProfiles> empty_room = s.mig_fill().begin()->second.room;
  s.AddPod(r);
  EXPECT_EQ(fill(s), (Fill{6, 2 * per_gpu}));
  EXPECT_TRUE(room_matches(s));
  EXPECT_NE(s.mig_fill().begin()->second.room, empty_room);
  EXPECT_EQ(s.mig_pods(), 1);
  s.AddPod(r);  // the same pod again replaces itself
  EXPECT_EQ(fill(s), (Fill{6, 2 * per_gpu}));
  EXPECT_EQ(s.mig_pods(), 1);
  s.UpsertNode(NodeWith("n", {RtxPro6000Mig("GPU-r")}));  // re-registered: its pod re-applied
  EXPECT_EQ(fill(s), (Fill{6, 2 * per_gpu}));

  const ClusterState copy(s);
  EXPECT_EQ(fill(copy), (Fill{6, 2 * per_gpu}));
  EXPECT_EQ(copy.mig_pods(), 1);
  const ClusterState with_pod = s.Subset({"n"});
  EXPECT_EQ(fill(with_pod), (Fill{6, per_gpu}));
  EXPECT_TRUE(room_matches(with_pod));
  EXPECT_EQ(with_pod.mig_pods(), 1);
  const ClusterState without = s.Subset({"m"});
  EXPECT_EQ(fill(without), (Fill{0, per_gpu}));
  EXPECT_EQ(without.mig_pods(), 0);

  s.RemovePod("ns/p");
  EXPECT_EQ(fill(s), (Fill{0, 2 * per_gpu}));
  EXPECT_EQ(s.mig_fill().begin()->second.room, empty_room);
  EXPECT_EQ(s.mig_pods(), 0);
  s.RemoveNode("m");
  EXPECT_EQ(fill(s), (Fill{0, per_gpu}));
  s.RemoveNode("n");
  EXPECT_TRUE(s.mig_fill().empty());
  EXPECT_EQ(fill(copy), (Fill{6, 2 * per_gpu}));  // the copy is its own
}

TEST(ClusterStateTest, ContradictoryAnnotationsFailClosedUntilRemoved) {
  ClusterState s{config::SchedulerConfig{}};
  s.UpsertNode(NodeWith("n", {RtxPro6000Mig("GPU-r"), SharingGpu("GPU-s", 32768, 0, 1)}));
  // A MIG GPU used without a placement: its occupancy is unknown.
  s.AddPod(SharedGpuPod("ns/no-placement", "n", "GPU-r", 24192, 25));
  EXPECT_FALSE(s.node("n")->usage[0].Trusted());
  s.RemovePod("ns/no-placement");
  EXPECT_TRUE(s.node("n")->usage[0].Trusted());
  // Two pods claiming overlapping placements.
  PodReservation a{"ns/a",
                   "u",
                   "n",
                   0,
                   {{{"GPU-r", "NVIDIA", 48512, 50}}},
                   {{0, 0, "GPU-r", "2g.48gb", {0, 6}, std::nullopt}}};
  PodReservation b{"ns/b",
                   "u",
                   "n",
                   0,
                   {{{"GPU-r", "NVIDIA", 24192, 25}}},
                   {{0, 0, "GPU-r", "1g.24gb", {3, 3}, std::nullopt}}};
  s.AddPod(a);
  s.AddPod(b);
  EXPECT_FALSE(s.node("n")->usage[0].Trusted());
  s.RemovePod("ns/b");
  EXPECT_TRUE(s.node("n")->usage[0].Trusted());
  // A MIG instance on a GPU that is not in MIG mode.
  PodReservation c{"ns/c",
                   "u",
                   "n",
                   0,
                   {{{"GPU-s", "NVIDIA", 1000, 0}}},
                   {{0, 0, "GPU-s", "1g.24gb", {3, 3}, std::nullopt}}};
  s.AddPod(c);
  EXPECT_FALSE(s.node("n")->usage[1].Trusted());
  s.RemovePod("ns/c");
  EXPECT_TRUE(s.node("n")->usage[1].Trusted());
}

TEST(ClusterStateTest, ReservationFromAnnotations) {
  model::Pod pod = testing::PodBuilder("ns/p").Container(1).Build();
  auto none = ClusterState::ReservationFromAnnotations(pod);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  pod.annotations["hami.io/vgpu-node"] = "n";
  pod.annotations["hami.io/vgpu-devices-allocated"] = "GPU-0,NVIDIA,100,10:;";
  auto some = ClusterState::ReservationFromAnnotations(pod);
  ASSERT_TRUE(some.ok());
  ASSERT_TRUE(some->has_value());
  EXPECT_EQ((*some)->node, "n");
  pod.annotations["hami.io/vgpu-mig-allocations"] = "[{\"containerIndex\":0}]";
  // Unreadable: what decodes still counts, and every GPU either annotation names is held.
  auto bad = ClusterState::ReservationFromAnnotations(pod);
  ASSERT_TRUE(bad.ok());
  ASSERT_TRUE(bad->has_value());
  EXPECT_THAT((*bad)->problem, HasSubstr("pod ns/p: annotation hami.io/vgpu-mig-allocations"));
  EXPECT_EQ((*bad)->devices.size(), 1U);
  EXPECT_EQ((*bad)->held_gpus, (std::vector<std::string>{"GPU-0"}));
}

TEST(ClusterStateTest, InitContainersSharesAreFreedOnceTheyAllSucceeded) {
  ClusterState s{config::SchedulerConfig{}};
  s.UpsertNode(testing::NodeWith("n", {testing::SharingGpu("GPU-0", 16000)}));
  model::Pod pod = testing::PodBuilder("ns/p").InitContainer(1, 5000).Container(1, 3000).Build();
  pod.node_name = "n";
  pod.annotations["hami.io/vgpu-node"] = "n";
  pod.annotations["hami.io/vgpu-devices-allocated"] = "GPU-0,NVIDIA,5000,0:;GPU-0,NVIDIA,3000,0:;";
  auto running = ClusterState::ReservationFromAnnotations(pod);
  ASSERT_TRUE(running.ok() && running->has_value());
  s.AddPod(**running);
  EXPECT_EQ(s.node("n")->usage[0].used_mem, 5000) << "the init container's peak while it may run";
  // A failed init container is retried: its share stays.
  pod.init_container_statuses = {{"i0", true, 1}};
  EXPECT_EQ((*ClusterState::ReservationFromAnnotations(pod))->devices[0].size(), 1U);
  pod.init_container_statuses = {{"i0", true, 0}};
  auto done = ClusterState::ReservationFromAnnotations(pod);
  ASSERT_TRUE(done.ok() && done->has_value());
  EXPECT_TRUE((*done)->devices[0].empty());
  s.AddPod(**done);
  EXPECT_EQ(s.node("n")->usage[0].used_mem, 3000);
  s.UpsertQuota({"ns", "gpu", {{"limits.nvidia.com/gpumem", "10000"}}});
  EXPECT_EQ(s.quotas().HeadroomFor("ns")->mem, 7000);
}

TEST(ClusterStateTest, StateClassesGroupExactlyTheNodesInTheSameState) {
  // Random pods come and go on nodes of two GPU kinds and two CPU sizes; nodes re-register and
  // leave. After every change, two nodes share a state class exactly when SameAs says so, and
  // the node list is in name order with each node's position and tie order current.
  ClusterState s{config::SchedulerConfig{}};
  std::mt19937 rng(5);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  auto node = [&](int i) {
    const int mem = i % 3 == 0 ? 16384 : 32768;
    model::Node n = NodeWith("n" + std::to_string(i),
                             {SharingGpu("GPU-" + std::to_string(i) + "a", mem, 0, 0),
                              SharingGpu("GPU-" + std::to_string(i) + "b", mem, 0, 1)});
    if (i % 4 != 3) n.allocatable["cpu"] = i % 2 == 0 ? "8" : "16";
    return n;
  };
  constexpr int kNodes = 12;
  for (int i = 0; i < kNodes; ++i) s.UpsertNode(node(i));
  std::vector<std::string> pods;
  for (int step = 0; step < 1500; ++step) {
    const int action = pick(10);
    if (action < 6) {
      const int i = pick(kNodes);
      PodReservation r = SharedGpuPod("ns/p" + std::to_string(step), "n" + std::to_string(i),
                                      "GPU-" + std::to_string(i) + (pick(2) == 0 ? "a" : "b"),
                                      1000 * (1 + pick(2)), 10);
      r.cpu_milli = 1000 * pick(3);
      pods.push_back(r.key);
      s.AddPod(std::move(r));
    } else if (action < 9 && !pods.empty()) {
      const size_t k = static_cast<size_t>(pick(static_cast<int>(pods.size())));
      s.RemovePod(pods[k]);
      pods.erase(pods.begin() + static_cast<std::ptrdiff_t>(k));
    } else if (pick(2) == 0) {
      s.UpsertNode(node(pick(kNodes)));
    } else {
      s.RemoveNode("n" + std::to_string(pick(kNodes)));
    }
    const auto& list = s.node_list();
    ASSERT_EQ(list.size(), s.nodes().size());
    for (size_t a = 0; a < list.size(); ++a) {
      ASSERT_GE(list[a]->state_class, 0);
      ASSERT_LT(static_cast<size_t>(list[a]->state_class), s.state_class_bound());
      EXPECT_EQ(list[a]->name_order, static_cast<int>(a));
      EXPECT_EQ(list[a]->tie_order, StableHash(list[a]->name));
      if (a > 0) {
        EXPECT_LT(list[a - 1]->name, list[a]->name);
      }
      for (size_t b = a + 1; b < list.size(); ++b) {
        EXPECT_EQ(list[a]->state_class == list[b]->state_class, list[a]->SameAs(*list[b]))
            << "step " << step << ": " << list[a]->name << ", " << list[b]->name;
      }
    }
    // Classes are reused: never more than one per node (and the pods' unregistered nodes).
    EXPECT_LE(s.state_class_bound(), static_cast<size_t>(2 * kNodes));
  }
}

}  // namespace
}  // namespace tessera::state

namespace tessera::state {
namespace {

TEST(ClusterStateTest, RegisterEntriesOfOtherVendorsAreIgnored) {
  ClusterState s{config::SchedulerConfig{}};
  model::Node n;
  n.name = "mixed";
  n.annotations["hami.io/node-nvidia-register"] =
      R"([{"id":"GPU-0","count":10,"devmem":16384,"devcore":100,"type":"NVIDIA-Tesla T4","mode":"hami-core","health":true},)"
      R"({"id":"MX-1","count":10,"devmem":65536,"devcore":100,"type":"Metax-GPU","mode":"hami-core","health":true},)"
      R"({"id":"DCU-2","count":10,"devmem":32768,"devcore":100,"type":"DCU","mode":"hami-core","health":true}])";
  s.UpsertNode(n);
  ASSERT_EQ(s.node("mixed")->devices.size(), 1U);
  EXPECT_EQ(s.node("mixed")->devices[0].uuid, "GPU-0");
}

}  // namespace
}  // namespace tessera::state
