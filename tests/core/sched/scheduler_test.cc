#include "core/sched/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "core/codec/mig_allocations.h"
#include "core/codec/pod_devices.h"
#include "core/common/strings.h"
#include "core/model/annotations.h"
#include "core/sched/fit.h"
#include "support/builders.h"
#include "support/decisions.h"

namespace tessera::sched {
namespace {

using testing::A100Mig;
using ::testing::HasSubstr;
using testing::NodeWith;
using testing::PodBuilder;
using testing::RtxPro6000Mig;
using testing::SharingGpu;

class SchedulerTest : public ::testing::Test {
 protected:
  SchedulerTest() : state_(config::SchedulerConfig{}), scheduler_(state_, PolicyDefaults{}) {}

  void AddNode(const std::string& name, const std::vector<model::GpuDevice>& gpus,
               std::map<std::string, std::string> extra = {}) {
    model::Node n = NodeWith(name, gpus);
    for (auto& [k, v] : extra) n.annotations[k] = v;
    state_.UpsertNode(n);
  }
  Decision Schedule(const model::Pod& pod) { return scheduler_.Schedule(pod, nullptr, 1700000000); }

  state::ClusterState state_;
  Scheduler scheduler_;
};

TEST_F(SchedulerTest, TwoMigInstancesShareOneRtxPro6000) {
  AddNode("node-a", {RtxPro6000Mig("GPU-r")});
  Decision d = Schedule(PodBuilder("default/p1").MigMode().Container(2, 8000).Build());
  ASSERT_TRUE(d.scheduled()) << d.message;
  ASSERT_EQ(d.containers.size(), 1U);
  ASSERT_EQ(d.containers[0].size(), 2U);
  EXPECT_EQ(d.containers[0][0].mig_profile, "1g.24gb");
  EXPECT_EQ(d.containers[0][1].mig_profile, "1g.24gb");
  EXPECT_NE(d.containers[0][0].placement.start, d.containers[0][1].placement.start);
  // The profile's memory and cores are written, not the request's.
  EXPECT_EQ(d.annotations.at("hami.io/vgpu-devices-allocated"),
            "GPU-r,NVIDIA,24192,25:GPU-r,NVIDIA,24192,25:;");
  EXPECT_EQ(d.annotations.at("hami.io/vgpu-devices-to-allocate"),
            d.annotations.at("hami.io/vgpu-devices-allocated"));
  EXPECT_EQ(d.annotations.at("hami.io/vgpu-node"), "node-a");
  EXPECT_EQ(d.annotations.at("hami.io/vgpu-time"), "1700000000");
  auto mig = codec::DecodeMigAllocations(d.annotations.at("hami.io/vgpu-mig-allocations"));
  ASSERT_TRUE(mig.ok());
  ASSERT_EQ(mig->size(), 2U);
  EXPECT_EQ((*mig)[1].container_index, 0);
  EXPECT_EQ((*mig)[1].device_index, 1);
}

TEST_F(SchedulerTest, FifthInstanceIsRefusedForMemoryNotTimeSlicing) {
  AddNode("node-a", {RtxPro6000Mig("GPU-r")});
  ASSERT_TRUE(Schedule(PodBuilder("default/p1").MigMode().Container(2, 8000).Build()).scheduled());
  ASSERT_TRUE(Schedule(PodBuilder("default/p2").MigMode().Container(2, 8000).Build()).scheduled());
  Decision d = Schedule(PodBuilder("default/p3").MigMode().Container(1, 8000).Build());
  EXPECT_FALSE(d.scheduled());
  EXPECT_EQ(FormatNodeStatus(d.failed_nodes.at("node-a")), "1/1 CardInsufficientMemory");
  EXPECT_EQ(d.message, "0/1 nodes are available: 1 1/1 CardInsufficientMemory.");
}

TEST_F(SchedulerTest, ReleaseFreesExactlyThePodsInstances) {
  AddNode("node-a", {RtxPro6000Mig("GPU-r")});
  Decision p1 = Schedule(PodBuilder("default/p1").MigMode().Container(2, 8000).Build());
  Decision p2 = Schedule(PodBuilder("default/p2").MigMode().Container(2, 8000).Build());
  ASSERT_TRUE(p1.scheduled() && p2.scheduled());
  auto released = state_.RemovePod("default/p1");
  ASSERT_TRUE(released.has_value());
  EXPECT_EQ(released->mig.size(), 2U);
  const auto& instances = state_.node("node-a")->instances[0];
  ASSERT_EQ(instances.size(), 2U);
  for (const auto& inst : instances) EXPECT_EQ(inst.pod_key, "default/p2");
  EXPECT_EQ(state_.node("node-a")->usage[0].used_mem, 2 * 24192);
  Decision p3 = Schedule(PodBuilder("default/p3").MigMode().Container(1, 8000).Build());
  ASSERT_TRUE(p3.scheduled());
  // It reuses one of the placements p1 gave back.
  bool reused = false;
  for (const auto& g : p1.containers[0]) {
    reused = reused || g.placement == p3.containers[0][0].placement;
  }
  EXPECT_TRUE(reused);
}

TEST_F(SchedulerTest, NonMigRequestKeepsThePhysicalCountCheck) {
  AddNode("node-b", {SharingGpu("GPU-s")});
  Decision d = Schedule(PodBuilder("default/two").Container(2, 8000).Build());
  EXPECT_FALSE(d.scheduled());
  EXPECT_EQ(FormatNodeStatus(d.failed_nodes.at("node-b")), "NodeInsufficientDevice");
  EXPECT_EQ(d.message, "0/1 nodes are available: 1 NodeInsufficientDevice.");
}

TEST_F(SchedulerTest, NodesWherePreemptionCannotHelpAreUnresolvable) {
  // Room that evicting pods would free: resolvable. Everything else: unresolvable.
  AddNode("full", {SharingGpu("GPU-full", 32768)});
  ASSERT_TRUE(Schedule(PodBuilder("default/big").Container(1, 30000).Build()).scheduled());
  AddNode("mig-full", {RtxPro6000Mig("GPU-r")});
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(Schedule(PodBuilder("default/m" + std::to_string(i))
                             .MigMode()
                             .Annotation("nvidia.com/use-gpuuuid", "GPU-r")
                             .Container(2, 20000)
                             .Build())
                    .scheduled());
  }
  AddNode("small", {SharingGpu("GPU-small", 4096)});
  model::GpuDevice sick = SharingGpu("GPU-sick", 32768);
  sick.healthy = false;
  AddNode("sick", {sick});
  const std::vector<std::string> candidates = {"full", "mig-full", "small", "sick", "ghost"};
  Decision d = scheduler_.Schedule(PodBuilder("default/p").Container(1, 8000).Build(), &candidates,
                                   1700000000);
  ASSERT_FALSE(d.scheduled());
  EXPECT_EQ(FormatNodeStatus(d.failed_nodes.at("full")), "1/1 CardInsufficientMemory");
  EXPECT_EQ(FormatNodeStatus(d.failed_nodes.at("small")), "1/1 CardInsufficientMemory");
  EXPECT_EQ(FormatNodeStatus(d.failed_nodes.at("ghost")), "node unregistered");
  EXPECT_EQ(testing::UnresolvableNodes(d), (std::set<std::string>{"small", "sick", "ghost"}));
  // The same reason on both: only the node emptied of pods tells them apart.

  // A MIG GPU full of instances: evicting them makes room.
  Decision mig = scheduler_.Schedule(PodBuilder("default/q").MigMode().Container(1, 8000).Build(),
                                     &candidates, 1700000000);
  ASSERT_FALSE(mig.scheduled());
  EXPECT_FALSE(testing::UnresolvableNodes(mig).contains("mig-full"))
      << FormatNodeStatus(mig.failed_nodes.at("mig-full"));
  EXPECT_TRUE(testing::UnresolvableNodes(mig).contains("small"));  // not a MIG GPU

  // More GPUs than the node has: no eviction helps.
  Decision two = scheduler_.Schedule(PodBuilder("default/two").Container(2, 1000).Build(),
                                     &candidates, 1700000000);
  ASSERT_FALSE(two.scheduled());
  EXPECT_TRUE(testing::UnresolvableNodes(two).contains("full"));
  EXPECT_EQ(FormatNodeStatus(two.failed_nodes.at("full")), "NodeInsufficientDevice");
}

TEST_F(SchedulerTest, AUuidFilterTellsApartNodesThatAreAlikeButForUuids) {
  // Two full nodes of one spec: only the one with the named GPU could take the pod after
  // evictions (the per-spec answer must not be shared across them).
  AddNode("a", {SharingGpu("GPU-a", 32768)});
  AddNode("b", {SharingGpu("GPU-b", 32768)});
  ASSERT_TRUE(Schedule(PodBuilder("default/fa").Container(1, 30000).Build()).scheduled());
  ASSERT_TRUE(Schedule(PodBuilder("default/fb").Container(1, 30000).Build()).scheduled());
  for (const char* filter : {"nvidia.com/use-gpuuuid", "nvidia.com/nouse-gpuuuid"}) {
    Decision d =
        Schedule(PodBuilder("default/p").Annotation(filter, "GPU-b").Container(1, 8000).Build());
    ASSERT_FALSE(d.scheduled());
    const std::string refused = std::string(filter) == "nvidia.com/use-gpuuuid" ? "a" : "b";
    EXPECT_EQ(testing::UnresolvableNodes(d), std::set<std::string>{refused}) << filter;
  }
}

TEST_F(SchedulerTest, HamiCoreModeOnAMigNodeIsATypeMismatch) {
  AddNode("node-a", {RtxPro6000Mig("GPU-r")});
  Decision d = Schedule(PodBuilder("default/p")
                            .Annotation("nvidia.com/vgpu-mode", "hami-core")
                            .Container(1, 8000)
                            .Build());
  EXPECT_FALSE(d.scheduled());
  EXPECT_EQ(FormatNodeStatus(d.failed_nodes.at("node-a")), "1/1 CardTypeMismatch");
}

TEST_F(SchedulerTest, FitChecksCountTheirReasons) {
  model::GpuDevice sick = SharingGpu("GPU-sick", 32768, 0, 0);
  sick.healthy = false;
  model::GpuDevice cordoned = SharingGpu("GPU-cordoned", 32768, 0, 1);
  model::GpuDevice small = SharingGpu("GPU-small", 4096, 0, 2);
  AddNode("n", {sick, cordoned, small}, {{"hami.io/device-cordon", " GPU-cordoned ,"}});
  Decision d = Schedule(PodBuilder("default/p").Container(1, 8000, 10).Build());
  EXPECT_FALSE(d.scheduled());
  EXPECT_EQ(FormatNodeStatus(d.failed_nodes.at("n")),
            "1/3 CardCordoned, 1/3 CardInsufficientMemory, 1/3 CardNotHealth");
}

TEST_F(SchedulerTest, CoreChecksAndExclusiveUse) {
  AddNode("n", {SharingGpu("GPU-0")});
  ASSERT_TRUE(Schedule(PodBuilder("default/a").Container(1, 1000, 80).Build()).scheduled());
  Decision cores = Schedule(PodBuilder("default/b").Container(1, 1000, 30).Build());
  EXPECT_EQ(FormatNodeStatus(cores.failed_nodes.at("n")), "1/1 CardInsufficientCore");
  Decision exclusive = Schedule(PodBuilder("default/c").Container(1, 1000, 100).Build());
  EXPECT_EQ(FormatNodeStatus(exclusive.failed_nodes.at("n")), "1/1 CardInsufficientCore");
  ASSERT_TRUE(Schedule(PodBuilder("default/d").Container(1, 1000, 20).Build()).scheduled());
  Decision exhausted = Schedule(PodBuilder("default/e").Container(1, 1000, 0).Build());
  EXPECT_EQ(FormatNodeStatus(exhausted.failed_nodes.at("n")), "1/1 CardComputeUnitsExhausted");
}

TEST_F(SchedulerTest, ExclusiveRequestConflictsWithAnyUser) {
  AddNode("n", {SharingGpu("GPU-0")});
  ASSERT_TRUE(Schedule(PodBuilder("default/a").Container(1, 1000, 0).Build()).scheduled());
  Decision d = Schedule(PodBuilder("default/b").Container(1, 1000, 100).Build());
  EXPECT_EQ(FormatNodeStatus(d.failed_nodes.at("n")), "1/1 ExclusiveDeviceAllocateConflict");
}

TEST_F(SchedulerTest, SplitCountLimitsTasks) {
  model::GpuDevice gpu = SharingGpu("GPU-0");
  gpu.count = 1;
  AddNode("n", {gpu});
  ASSERT_TRUE(Schedule(PodBuilder("default/a").Container(1, 1000, 10).Build()).scheduled());
  Decision d = Schedule(PodBuilder("default/b").Container(1, 1000, 10).Build());
  EXPECT_EQ(FormatNodeStatus(d.failed_nodes.at("n")), "1/1 CardTimeSlicingExhausted");
}

TEST_F(SchedulerTest, MutexPolicyRejectsBusyGpus) {
  AddNode("n", {SharingGpu("GPU-0", 32768, 0, 0), SharingGpu("GPU-1", 32768, 0, 1)});
  ASSERT_TRUE(Schedule(PodBuilder("default/a").Container(1, 1000, 10).Build()).scheduled());
  Decision d = Schedule(PodBuilder("default/b")
                            .Annotation("hami.io/gpu-scheduler-policy", "mutex")
                            .Container(2, 1000, 10)
                            .Build());
  EXPECT_EQ(FormatNodeStatus(d.failed_nodes.at("n")),
            "1/2 AllocatedCardsInsufficientRequest, 1/2 ExclusiveDeviceAllocateConflict");
}

TEST_F(SchedulerTest, UuidFiltersAndTypeFilters) {
  AddNode("n", {SharingGpu("GPU-0", 32768, 0, 0), SharingGpu("GPU-1", 32768, 0, 1)});
  Decision use = Schedule(PodBuilder("default/a")
                              .Annotation("nvidia.com/use-gpuuuid", "GPU-1")
                              .Container(1, 1000, 10)
                              .Build());
  ASSERT_TRUE(use.scheduled());
  EXPECT_EQ(use.containers[0][0].uuid, "GPU-1");
  Decision nouse = Schedule(PodBuilder("default/b")
                                .Annotation("nvidia.com/nouse-gpuuuid", "GPU-0,GPU-1")
                                .Container(1, 1000, 10)
                                .Build());
  EXPECT_EQ(FormatNodeStatus(nouse.failed_nodes.at("n")), "2/2 CardUuidMismatch");
  Decision type = Schedule(PodBuilder("default/c")
                               .Annotation("nvidia.com/use-gputype", "A100")
                               .Container(1, 1000, 10)
                               .Build());
  EXPECT_EQ(FormatNodeStatus(type.failed_nodes.at("n")), "2/2 CardTypeMismatch");
  Decision notype = Schedule(PodBuilder("default/d")
                                 .Annotation("nvidia.com/nouse-gputype", "v100")
                                 .Container(1, 1000, 10)
                                 .Build());
  EXPECT_EQ(FormatNodeStatus(notype.failed_nodes.at("n")), "2/2 CardTypeMismatch");
}

TEST_F(SchedulerTest, GpuPolicySpreadAndBinpack) {
  AddNode("n", {SharingGpu("GPU-0", 32768, 0, 0), SharingGpu("GPU-1", 32768, 0, 1)});
  ASSERT_TRUE(Schedule(PodBuilder("default/a")
                           .Annotation("nvidia.com/use-gpuuuid", "GPU-0")
                           .Container(1, 1000, 10)
                           .Build())
                  .scheduled());
  Decision spread =
      scheduler_.Evaluate(PodBuilder("default/b").Container(1, 1000, 10).Build(), nullptr, 0);
  EXPECT_EQ(spread.containers[0][0].uuid, "GPU-1");
  Decision binpack = scheduler_.Evaluate(PodBuilder("default/b")
                                             .Annotation("hami.io/gpu-scheduler-policy", "binpack")
                                             .Container(1, 1000, 10)
                                             .Build(),
                                         nullptr, 0);
  EXPECT_EQ(binpack.containers[0][0].uuid, "GPU-0");
}

TEST_F(SchedulerTest, NodePolicyAndDeterministicTies) {
  AddNode("n2", {SharingGpu("GPU-20")});
  AddNode("n1", {SharingGpu("GPU-10")});
  AddNode("n3", {SharingGpu("GPU-30")});
  // All empty: ties break by node name.
  Decision first =
      scheduler_.Evaluate(PodBuilder("default/x").Container(1, 1000, 10).Build(), nullptr, 0);
  EXPECT_EQ(first.node, "n1");
  ASSERT_TRUE(Schedule(PodBuilder("default/a")
                           .Annotation("nvidia.com/use-gpuuuid", "GPU-30")
                           .Container(1, 4000, 10)
                           .Build())
                  .scheduled());
  Decision binpack =
      scheduler_.Evaluate(PodBuilder("default/b").Container(1, 1000, 10).Build(), nullptr, 0);
  EXPECT_EQ(binpack.node, "n3");
  Decision spread = scheduler_.Evaluate(PodBuilder("default/b")
                                            .Annotation("hami.io/node-scheduler-policy", "spread")
                                            .Container(1, 1000, 10)
                                            .Build(),
                                        nullptr, 0);
  EXPECT_EQ(spread.node, "n1");
}

// The example of issue 12: two nodes of two 8000 MiB GPUs; node1's device1 runs 2000 MiB / 25
// cores, node2's device4 runs 6000 MiB / 75 cores.
TEST_F(SchedulerTest, NamedHamiBinpackPacksTheFullestGpuWhereTesseraKeepsItsRoom) {
  AddNode("node1", {SharingGpu("device1", 8000, 0, 0), SharingGpu("device2", 8000, 0, 1)});
  AddNode("node2", {SharingGpu("device3", 8000, 0, 0), SharingGpu("device4", 8000, 0, 1)});
  ASSERT_TRUE(Schedule(PodBuilder("default/small")
                           .Annotation("nvidia.com/use-gpuuuid", "device1")
                           .Container(1, 2000, 25)
                           .Build())
                  .scheduled());
  ASSERT_TRUE(Schedule(PodBuilder("default/large")
                           .Annotation("nvidia.com/use-gpuuuid", "device4")
                           .Container(1, 6000, 75)
                           .Build())
                  .scheduled());
  DemandShape probe_shape;  // the probes' own shape is part of the observed mix
  probe_shape.gpus = 1;
  probe_shape.gpu_mem_mib = 1000;
  probe_shape.gpu_cores = 20;
  scheduler_.ObserveDemand(probe_shape);
  auto probe = [&](const char* node_policy, const char* gpu_policy) {
    PodBuilder b("default/probe");
    if (node_policy != nullptr) b.Annotation("hami.io/node-scheduler-policy", node_policy);
    if (gpu_policy != nullptr) b.Annotation("hami.io/gpu-scheduler-policy", gpu_policy);
    Decision d = scheduler_.Evaluate(b.Container(1, 1000, 20).Build(), nullptr, 0);
    EXPECT_TRUE(d.scheduled()) << d.message;
    return d.scheduled() ? d.node + "/" + d.containers[0][0].uuid : d.message;
  };
  EXPECT_EQ(probe("binpack", "binpack"), "node2/device4");
  EXPECT_EQ(probe("binpack", "spread"), "node2/device3");
  EXPECT_EQ(probe("spread", "binpack"), "node1/device1");
  EXPECT_EQ(probe("spread", "spread"), "node1/device2");
  // Unnamed (or `tessera`): the GPU where fragmentation grows least, not the fullest.
  EXPECT_EQ(probe(nullptr, nullptr), "node2/device3");
  EXPECT_EQ(probe("tessera", "tessera"), "node2/device3");
}

// HAMi ranks nodes by their score before the pod (hami-protocol.md 7.1), not after it: with a
// small idle node and a large node in light use the two orders disagree.
TEST_F(SchedulerTest, NamedHamiNodePoliciesRankByTheScoreBeforeThePod) {
  AddNode("small", {SharingGpu("GPU-s", 8000)});
  AddNode("large", {SharingGpu("GPU-l0", 8000, 0, 0), SharingGpu("GPU-l1", 8000, 0, 1),
                    SharingGpu("GPU-l2", 8000, 0, 2), SharingGpu("GPU-l3", 8000, 0, 3)});
  ASSERT_TRUE(Schedule(PodBuilder("default/running")
                           .Annotation("nvidia.com/use-gpuuuid", "GPU-l0")
                           .Container(1, 1000, 10)
                           .Build())
                  .scheduled());
  auto node_for = [&](const char* policy) {
    Decision d = scheduler_.Evaluate(PodBuilder("default/probe")
                                         .Annotation("hami.io/node-scheduler-policy", policy)
                                         .Annotation("hami.io/gpu-scheduler-policy", "spread")
                                         .Container(1, 1000, 10)
                                         .Build(),
                                     nullptr, 0);
    EXPECT_TRUE(d.scheduled()) << d.message;
    return d.node;
  };
  // Before: small 0, large 10*(1/40 + 10/400 + 1000/32000) = 0.81. After the pod the small node
  // would be the fuller one (3.25 against 1.63), which is not what HAMi compares.
  EXPECT_EQ(node_for("binpack"), "large");
  EXPECT_EQ(node_for("spread"), "small");
}

TEST_F(SchedulerTest, EqualFragmentationFillsNodesInUseThenAFixedOrder) {
  const std::vector<std::string> names = {"n1", "n2", "n3"};
  for (const auto& name : names) AddNode(name, {SharingGpu("GPU-" + name)});
  DemandShape small;
  small.gpus = 1;
  small.gpu_mem_mib = 1000;
  small.gpu_cores = 10;
  scheduler_.ObserveDemand(small);  // every node below adds no fragmentation for this mix
  // All idle: the first in the fixed order (a stable hash of the name), not the first by name.
  const std::string first = *std::min_element(
      names.begin(), names.end(),
      [](const std::string& a, const std::string& b) { return StableHash(a) < StableHash(b); });
  Decision idle =
      scheduler_.Evaluate(PodBuilder("default/x").Container(1, 1000, 10).Build(), nullptr, 0);
  EXPECT_EQ(idle.node, first);
  // A node in use comes before the idle ones (binpack), wherever it is in the order.
  const std::string used = first == "n3" ? "n2" : "n3";
  ASSERT_TRUE(Schedule(PodBuilder("default/a")
                           .Annotation("nvidia.com/use-gpuuuid", "GPU-" + used)
                           .Container(1, 1000, 10)
                           .Build())
                  .scheduled());
  Decision packed =
      scheduler_.Evaluate(PodBuilder("default/b").Container(1, 1000, 10).Build(), nullptr, 0);
  EXPECT_EQ(packed.node, used);
}

TEST_F(SchedulerTest, UnknownPolicyIsAnErrorNotAFallback) {
  AddNode("n", {SharingGpu("GPU-0")});
  Decision d = Schedule(PodBuilder("default/p")
                            .Annotation("hami.io/node-scheduler-policy", "pack")
                            .Container(1, 1000, 10)
                            .Build());
  EXPECT_FALSE(d.scheduled());
  EXPECT_TRUE(d.invalid_request());
  EXPECT_THAT(d.message, HasSubstr("hami.io/node-scheduler-policy"));
  EXPECT_THAT(d.message, HasSubstr("\"pack\""));
}

TEST_F(SchedulerTest, UnusableQuantityNamesContainerResourceAndValue) {
  AddNode("n", {SharingGpu("GPU-0")});
  model::Pod pod = PodBuilder("default/p").Container(1).Build();
  pod.containers[0].limits["nvidia.com/gpumem"] = "16Gi";
  Decision d = Schedule(pod);
  EXPECT_FALSE(d.scheduled());
  EXPECT_THAT(d.message, HasSubstr("container c0"));
  EXPECT_THAT(d.message, HasSubstr("nvidia.com/gpumem"));
  EXPECT_THAT(d.message, HasSubstr("\"16Gi\""));
}

TEST_F(SchedulerTest, NumaBindNeedsAllGpusOnOneNumaNode) {
  AddNode("n", {SharingGpu("GPU-0", 32768, 0, 0), SharingGpu("GPU-1", 32768, 1, 1),
                SharingGpu("GPU-2", 32768, 1, 2)});
  Decision d = Schedule(PodBuilder("default/p")
                            .Annotation("nvidia.com/numa-bind", "true")
                            .Container(2, 1000, 10)
                            .Build());
  ASSERT_TRUE(d.scheduled());
  EXPECT_EQ(d.containers[0].size(), 2U);
  for (const auto& g : d.containers[0]) EXPECT_NE(g.uuid, "GPU-0");
  Decision three = Schedule(PodBuilder("default/q")
                                .Annotation("nvidia.com/numa-bind", "1")
                                .Container(3, 1000, 10)
                                .Build());
  EXPECT_FALSE(three.scheduled());
  EXPECT_THAT(FormatNodeStatus(three.failed_nodes.at("n")), HasSubstr("NumaNotFit"));
}

TEST_F(SchedulerTest, TopologyAwarePicksTheBestLinkedPair) {
  AddNode("n",
          {SharingGpu("GPU-0", 32768, 0, 0), SharingGpu("GPU-1", 32768, 0, 1),
           SharingGpu("GPU-2", 32768, 0, 2)},
          {{"hami.io/node-nvidia-score", R"([{"uuid":"GPU-0","score":{"GPU-1":10,"GPU-2":100}},)"
                                         R"({"uuid":"GPU-1","score":{"GPU-0":10,"GPU-2":20}},)"
                                         R"({"uuid":"GPU-2","score":{"GPU-0":100,"GPU-1":20}}])"}});
  Decision d = Schedule(PodBuilder("default/p")
                            .Annotation("hami.io/gpu-scheduler-policy", "topology-aware")
                            .Container(2, 1000, 10)
                            .Build());
  ASSERT_TRUE(d.scheduled());
  std::set<std::string> got;
  for (const auto& g : d.containers[0]) got.insert(g.uuid);
  EXPECT_EQ(got, (std::set<std::string>{"GPU-0", "GPU-2"}));
}

TEST_F(SchedulerTest, InitContainersCountAtTheirPeak) {
  AddNode("n", {SharingGpu("GPU-0", 10000)});
  model::Pod pod =
      PodBuilder("default/p").InitContainer(1, 9000, 10).Container(1, 9000, 10).Build();
  Decision d = Schedule(pod);
  ASSERT_TRUE(d.scheduled()) << d.message;
  EXPECT_EQ(d.annotations.at("hami.io/vgpu-devices-allocated"),
            "GPU-0,NVIDIA,9000,10:;GPU-0,NVIDIA,9000,10:;");
  EXPECT_EQ(state_.node("n")->usage[0].used_mem, 9000);
}

TEST_F(SchedulerTest, ContainersWithoutGpusKeepAnEmptySlot) {
  AddNode("n", {SharingGpu("GPU-0")});
  model::Pod pod = PodBuilder("default/p").Container(0).Container(1, 1000, 10).Build();
  Decision d = Schedule(pod);
  ASSERT_TRUE(d.scheduled());
  EXPECT_EQ(d.annotations.at("hami.io/vgpu-devices-allocated"), ";GPU-0,NVIDIA,1000,10:;");
}

TEST_F(SchedulerTest, MalformedNodeAnnotationOnlyAffectsThatNode) {
  AddNode("good", {SharingGpu("GPU-0")});
  model::Node bad;
  bad.name = "bad";
  bad.annotations["hami.io/node-nvidia-register"] = "[{\"id\":42}]";
  state_.UpsertNode(bad);
  Decision d = Schedule(PodBuilder("default/p").Container(1, 1000, 10).Build());
  ASSERT_TRUE(d.scheduled());
  EXPECT_EQ(d.node, "good");
  Decision big = Schedule(PodBuilder("default/q").Container(1, 99999, 10).Build());
  EXPECT_THAT(FormatNodeStatus(big.failed_nodes.at("bad")),
              HasSubstr("hami.io/node-nvidia-register[0].id"));
}

TEST_F(SchedulerTest, RefilteringAPodThatNoLongerFitsKeepsItsReservation) {
  AddNode("n", {SharingGpu("GPU-0", 10000)});
  model::Pod pod = PodBuilder("default/p").Container(1, 6000, 10).Build();
  ASSERT_TRUE(Schedule(pod).scheduled());
  model::Pod bigger = PodBuilder("default/p").Container(1, 20000, 10).Build();
  EXPECT_FALSE(Schedule(bigger).scheduled());
  ASSERT_NE(state_.pod("default/p"), nullptr);
  EXPECT_EQ(state_.node("n")->usage[0].used_mem, 6000);
}

TEST_F(SchedulerTest, JointSearchFindsWhatContainerByContainerMisses) {
  // GPU-0 (tried first under spread: it is less used) has slices 0-3 free; GPU-1 has 4-7 free.
  // Container 1 fits a 3g on either; container 2 asks for the 4g's cores, which only GPU-0's
  // slice 0 can give. Container by container, 1 takes GPU-0 and 2 fails; jointly both fit.
  AddNode("n", {A100Mig("GPU-0", 0), A100Mig("GPU-1", 1)});
  state::PodReservation busy{
      "default/busy",
      "u",
      "n",
      0,
      {{{"GPU-0", "NVIDIA", 19968, 43}, {"GPU-1", "NVIDIA", 19968, 58}}},
      {codec::MigAllocation{0, 0, "GPU-0", "3g.20gb", {4, 4}, std::nullopt},
       codec::MigAllocation{0, 1, "GPU-1", "4g.20gb", {0, 4}, std::nullopt}}};
  state_.AddPod(busy);
  model::Pod pod =
      PodBuilder("default/p").MigMode().Container(1, 19000).Container(1, 19000, 55).Build();
  Decision d = Schedule(pod);
  ASSERT_TRUE(d.scheduled()) << d.message;
  EXPECT_EQ(d.containers[0][0].uuid, "GPU-1");
  EXPECT_EQ(d.containers[0][0].mig_profile, "3g.20gb");
  EXPECT_EQ(d.containers[0][0].placement, (model::Placement{4, 4}));
  EXPECT_EQ(d.containers[1][0].uuid, "GPU-0");
  EXPECT_EQ(d.containers[1][0].mig_profile, "4g.20gb");
  EXPECT_EQ(d.containers[1][0].placement, (model::Placement{0, 4}));
}

TEST_F(SchedulerTest, FragmentationAwareScoringKeepsGpusWholeForTheObservedDemand) {
  // Demand so far: mostly whole GPUs. A small pod should go where it strands no whole GPU.
  AddNode("a", {SharingGpu("GPU-a0", 1000, 0, 0), SharingGpu("GPU-a1", 1000, 0, 1)});
  AddNode("b", {SharingGpu("GPU-b0", 1000, 0, 0), SharingGpu("GPU-b1", 1000, 0, 1)});
  // b already has a half-used GPU.
  ASSERT_TRUE(Schedule(PodBuilder("default/half")
                           .Annotation("nvidia.com/use-gpuuuid", "GPU-b1")
                           .Container(1, 500, 0)
                           .Build())
                  .scheduled());
  for (int i = 0; i < 20; ++i) {
    DemandShape whole;
    whole.gpus = 1;
    whole.gpu_mem_mib = 1000;
    scheduler_.ObserveDemand(whole);
  }
  Decision d = Schedule(PodBuilder("default/small").Container(1, 400, 0).Build());
  ASSERT_TRUE(d.scheduled());
  // Plain binpack by node usage would also pick b; the point is the GPU: the half-used one.
  EXPECT_EQ(d.node, "b");
  EXPECT_EQ(d.containers[0][0].uuid, "GPU-b1");
}

TEST_F(SchedulerTest, EquivalentNodesGiveTheSameAnswerAsEvaluatingEachNode) {
  for (int i = 0; i < 6; ++i) {
    AddNode("n" + std::to_string(i), {SharingGpu("GPU-" + std::to_string(i) + "a", 32768, 0, 0),
                                      SharingGpu("GPU-" + std::to_string(i) + "b", 32768, 0, 1)});
  }
  ASSERT_TRUE(Schedule(PodBuilder("default/x")
                           .Annotation("nvidia.com/use-gpuuuid", "GPU-3a")
                           .Container(1, 30000, 10)
                           .Build())
                  .scheduled());
  // UUID filters turn the cache off; the same pod without them must pick the same kind of node.
  Decision cached =
      scheduler_.Evaluate(PodBuilder("default/y").Container(1, 1000, 10).Build(), nullptr, 0);
  std::vector<std::string> all;
  for (int i = 0; i < 6; ++i)
    all.push_back("GPU-" + std::to_string(i) + "a,GPU-" + std::to_string(i) + "b");
  std::string every;
  for (const auto& s : all) every += (every.empty() ? "" : ",") + s;
  Decision uncached = scheduler_.Evaluate(PodBuilder("default/y")
                                              .Annotation("nvidia.com/use-gpuuuid", every)
                                              .Container(1, 1000, 10)
                                              .Build(),
                                          nullptr, 0);
  ASSERT_TRUE(cached.scheduled() && uncached.scheduled());
  EXPECT_EQ(cached.node, uncached.node);
  EXPECT_EQ(cached.containers[0][0].uuid, uncached.containers[0][0].uuid);
}

// ---- Fast paths: they must not change what the scheduler decides.

// A random cluster of sharing GPUs (some unhealthy or cordoned, several models) with random
// reservations, and random pods, as the property tests below use them.
class RandomCluster {
 public:
  explicit RandomCluster(unsigned seed) : rng_(seed) {}
  int Pick(int n) { return static_cast<int>(rng_() % static_cast<unsigned>(n)); }

  void Fill(state::ClusterState& state, int nodes) {
    for (int i = 0; i < nodes; ++i) {
      std::vector<model::GpuDevice> gpus;
      const int count = 1 + Pick(8);
      const int mem = std::vector<int>{16384, 24576, 32768}[Pick(3)];
      const std::string type = std::vector<std::string>{"NVIDIA A10", "NVIDIA T4", "V100"}[Pick(3)];
      std::string cordon;
      for (int g = 0; g < count; ++g) {
        model::GpuDevice d = SharingGpu("GPU-" + std::to_string(i) + "-" + std::to_string(g), mem,
                                        g % 2, static_cast<uint32_t>(g));
        d.type = type;
        d.count = 1 + Pick(6);
        d.healthy = Pick(12) != 0;
        if (Pick(12) == 0) cordon += (cordon.empty() ? "" : ",") + d.uuid;
        gpus.push_back(d);
      }
      model::Node n = testing::NodeWith("node-" + std::to_string(i), gpus);
      if (!cordon.empty()) n.annotations[std::string(model::annotations::kDeviceCordon)] = cordon;
      state.UpsertNode(n);
      // Reservations: 0-6 shares on random GPUs of the node.
      for (int p = Pick(7); p > 0; --p) {
        const auto& d = gpus[static_cast<size_t>(Pick(count))];
        state.AddPod(
            state::PodReservation{"fill/" + std::to_string(i) + "-" + std::to_string(p),
                                  "u",
                                  n.name,
                                  0,
                                  {{{d.uuid, "NVIDIA", 1000 * (1 + Pick(12)), 10 * Pick(6)}}},
                                  {},
                                  1000});
      }
    }
  }

  model::Pod Pod(const std::string& key) {
    PodBuilder b(key);
    if (Pick(5) == 0) b.InitContainer(1 + Pick(2), 1000 * (1 + Pick(8)), 10 * Pick(4));
    const int containers = 1 + Pick(2);
    for (int c = 0; c < containers; ++c) {
      if (Pick(4) == 0) {
        b.With(testing::ContainerBuilder("c" + std::to_string(c))
                   .Gpu(1 + Pick(3))
                   .GpuMemPercent(10 * (1 + Pick(10)))
                   .Build());
      } else {
        b.Container(1 + Pick(4), 1000 * (1 + Pick(20)), Pick(3) == 0 ? -1 : 10 * Pick(11));
      }
    }
    if (Pick(4) == 0) b.Annotation(std::string(model::annotations::kUseGpuType), "A10,T4");
    if (Pick(6) == 0) b.Annotation(std::string(model::annotations::kNoUseGpuType), "T4");
    if (Pick(6) == 0) b.Annotation(std::string(model::annotations::kGpuPolicy), "mutex");
    if (Pick(8) == 0) b.Annotation(std::string(model::annotations::kNumaBind), "true");
    return b.Build();
  }

 private:
  std::mt19937 rng_;
};

TEST(MayFitTest, RulesOutOnlyNodesWhereTheFullFitFails) {
  RandomCluster random(3);
  state::ClusterState state{config::SchedulerConfig{}};
  random.Fill(state, 200);
  state.UpsertNode(testing::NodeWith("mig-node", {A100Mig("GPU-m0"), A100Mig("GPU-m1", 1)}));
  int ruled_out = 0;
  int fits = 0;
  for (int i = 0; i < 300; ++i) {
    const model::Pod pod = random.Pod("ns/p" + std::to_string(i));
    auto request = DerivePodRequest(pod, state.config().nvidia);
    auto prefs = ParsePreferences(pod, PolicyDefaults{});
    ASSERT_TRUE(request.ok() && prefs.ok());
    for (const state::NodeState* ns : state.node_list()) {
      const bool may = MayFit(*ns, *request, *prefs);
      const NodeFit fit = FitPodOnNode(*ns, *request, *prefs);
      if (!may) {
        ++ruled_out;
        EXPECT_FALSE(fit.fits) << ns->name << " for pod " << i;
      }
      fits += fit.fits ? 1 : 0;
    }
    EXPECT_TRUE(MayFit(*state.node("mig-node"), *request, *prefs));
  }
  EXPECT_GT(ruled_out, 10000);  // the check does rule nodes out
  EXPECT_GT(fits, 1000);
}

TEST(SchedulerFastPathTest, SameDecisionsWithoutFailureReasonsAndOverNodePointers) {
  // Three schedulers on three copies of one random cluster: by node names with reasons, by names
  // without reasons, by node pointers without reasons. They place every pod alike.
  state::ClusterState a{config::SchedulerConfig{}};
  state::ClusterState b{config::SchedulerConfig{}};
  state::ClusterState c{config::SchedulerConfig{}};
  RandomCluster fill_a(9), fill_b(9), fill_c(9);
  fill_a.Fill(a, 60);
  fill_b.Fill(b, 60);
  fill_c.Fill(c, 60);
  Scheduler by_name(a, PolicyDefaults{});
  Scheduler quiet(b, PolicyDefaults{});
  quiet.set_explain_failures(false);
  Scheduler by_pointer(c, PolicyDefaults{});
  by_pointer.set_explain_failures(false);
  RandomCluster pods(13);
  int scheduled = 0;
  int refused = 0;
  for (int i = 0; i < 400; ++i) {
    const model::Pod pod = pods.Pod("ns/p" + std::to_string(i));
    std::vector<std::string> names;
    std::vector<const state::NodeState*> pointers;
    for (const state::NodeState* ns : c.node_list()) {
      if (pods.Pick(3) == 0) continue;  // a candidate subset, as kube-scheduler passes
      names.push_back(ns->name);
      pointers.push_back(ns);
    }
    const Decision x = by_name.Schedule(pod, &names, 1700000000);
    const Decision y = quiet.Schedule(pod, &names, 1700000000);
    const Decision z = by_pointer.Schedule(pod, pointers, 1700000000);
    ASSERT_EQ(x.scheduled(), y.scheduled()) << i;
    ASSERT_EQ(x.scheduled(), z.scheduled()) << i;
    EXPECT_EQ(x.node, y.node) << i;
    EXPECT_EQ(x.node, z.node) << i;
    EXPECT_EQ(x.annotations, y.annotations) << i;
    EXPECT_EQ(x.annotations, z.annotations) << i;
    if (x.scheduled()) {
      ++scheduled;
    } else {
      ++refused;
      EXPECT_FALSE(x.failed_nodes.empty());
      EXPECT_TRUE(y.failed_nodes.empty());
      EXPECT_TRUE(z.failed_nodes.empty());
    }
  }
  EXPECT_GT(scheduled, 100);
  EXPECT_GT(refused, 10);
}

// ---- quotas ------------------------------------------------------------------------------------

TEST_F(SchedulerTest, QuotaCountsInitContainersAtTheirPeakWhenFitting) {
  AddNode("n1", {SharingGpu("GPU-A", 32768)});
  state_.UpsertQuota({"team", "gpu", {{"limits.nvidia.com/gpumem", "10000"}}});
  // Init 9000 then app 6000 on the one GPU: counted max(9000, 6000) = 9000.
  auto fits = PodBuilder("team/p").InitContainer(1, 9000).Container(1, 6000).Build();
  Decision d = Schedule(fits);
  ASSERT_TRUE(d.scheduled()) << d.message;
  EXPECT_EQ(state_.quotas().HeadroomFor("team")->mem, 1000);
  // Two app containers of 1000 add up to 2000: over the 1000 left.
  auto over = PodBuilder("team/q").Container(1, 1000).Container(1, 1000).Build();
  Decision o = Schedule(over);
  EXPECT_FALSE(o.scheduled());
  EXPECT_EQ(FormatNodeStatus(o.failed_nodes.at("n1")), "1/1 ResourceQuotaNotFit")
      << "the first container took the last 1000 MiB; the second found none";
  state_.RemovePod("team/p");
  EXPECT_EQ(state_.quotas().HeadroomFor("team")->mem, 10000);
  EXPECT_TRUE(Schedule(over).scheduled());
}

// Preview (prioritize) sets the pod's own reservation aside: neither its GPU share nor its quota
// use is in its way, and both are back afterwards.
TEST_F(SchedulerTest, PreviewSetsThePodsOwnReservationAsideAndPutsItBack) {
  AddNode("n1", {SharingGpu("GPU-A", 10000)});
  state_.UpsertQuota({"team", "gpu", {{"limits.nvidia.com/gpumem", "10000"}}});
  auto pod = PodBuilder("team/p").Container(1, 10000).Build();
  ASSERT_TRUE(Schedule(pod).scheduled());
  const std::vector<std::string> n1 = {"n1"};
  // Counted against itself it would fit neither the GPU nor the quota.
  EXPECT_FALSE(scheduler_.Evaluate(pod, &n1, 0).scheduled());
  Decision preview = scheduler_.Preview(pod, &n1, 0);
  ASSERT_TRUE(preview.scheduled()) << preview.message;
  EXPECT_EQ(preview.node, "n1");
  ASSERT_NE(state_.pod("team/p"), nullptr);
  EXPECT_EQ(state_.node("n1")->usage[0].used_mem, 10000);
  EXPECT_EQ(state_.quotas().HeadroomFor("team")->mem, 0);
}

// WouldPlace answers as Preview does, for fits and refusals, among the given nodes only, and
// leaves the state, the pod's own reservation included, as it was.
TEST_F(SchedulerTest, WouldPlaceAnswersAsPreviewWithoutChangingAnything) {
  AddNode("n1", {SharingGpu("GPU-A", 10000)});
  AddNode("n2", {SharingGpu("GPU-B", 4000)});
  auto holder = PodBuilder("team/holder").Container(1, 7000).Build();
  const std::vector<std::string> n1 = {"n1"};
  const std::vector<std::string> n2 = {"n2"};
  ASSERT_TRUE(scheduler_.Schedule(holder, &n1, 0).scheduled());
  auto big = PodBuilder("team/big").Container(1, 5000).Build();
  auto small = PodBuilder("team/small").Container(1, 3000).Build();
  for (const auto* nodes : {&n1, &n2, static_cast<const std::vector<std::string>*>(nullptr)}) {
    for (const auto& pod : {big, small, holder}) {
      EXPECT_EQ(scheduler_.WouldPlace(pod, nodes), scheduler_.Preview(pod, nodes, 0).scheduled())
          << pod.Key() << " on " << (nodes ? nodes->front() : "every node");
    }
  }
  EXPECT_FALSE(scheduler_.WouldPlace(big, &n1));
  EXPECT_TRUE(scheduler_.WouldPlace(small, &n1));
  EXPECT_FALSE(scheduler_.WouldPlace(big, &n2));
  EXPECT_TRUE(scheduler_.WouldPlace(holder, &n1)) << "its own reservation is not in its way";
  ASSERT_NE(state_.pod("team/holder"), nullptr);
  EXPECT_EQ(state_.node("n1")->usage[0].used_mem, 7000);
  EXPECT_EQ(state_.pod("team/small"), nullptr) << "nothing reserved";
  auto malformed = PodBuilder("team/bad").Container(1, 1000).Build();
  malformed.containers[0].limits["nvidia.com/gpumem"] = "lots";
  EXPECT_FALSE(scheduler_.WouldPlace(malformed, nullptr));
}

TEST_F(SchedulerTest, QuotaCountsTheMigProfileMemoryThePodIsGiven) {
  AddNode("n1", {RtxPro6000Mig("GPU-M")});
  // 8000 MiB asked, but the smallest profile (1g.24gb) holds about 24 GiB: that is what the pod
  // takes, and what its namespace is charged.
  state_.UpsertQuota({"team", "gpu", {{"limits.nvidia.com/gpumem", "16000"}}});
  Decision d = Schedule(PodBuilder("team/p").Container(1, 8000).MigMode().Build());
  EXPECT_FALSE(d.scheduled());
  EXPECT_EQ(FormatNodeStatus(d.failed_nodes.at("n1")), "1/1 ResourceQuotaNotFit") << d.message;
  state_.UpsertQuota({"team", "gpu", {{"limits.nvidia.com/gpumem", "30000"}}});
  Decision ok = Schedule(PodBuilder("team/p").Container(1, 8000).MigMode().Build());
  ASSERT_TRUE(ok.scheduled()) << ok.message;
  EXPECT_LT(*state_.quotas().HeadroomFor("team")->mem, 30000 - 8000);
}

// kube-scheduler filters a pending pod again on every retry; the pod is still one request of the
// demand mix, or pods that wait (the large ones) would crowd out the rest of it.
TEST_F(SchedulerTest, APendingPodRetriedCountsOnceInTheDemandMix) {
  AddNode("n1", {RtxPro6000Mig("GPU-M")});
  const model::Pod big = PodBuilder("ns/big").Container(1, 200000).MigMode().Build();
  for (int retry = 0; retry < 3; ++retry) EXPECT_FALSE(Schedule(big).scheduled());
  EXPECT_DOUBLE_EQ(scheduler_.mig_demand_mix().total(), 1.0);
  EXPECT_EQ(scheduler_.demand_mix().version(), 1U);
  ASSERT_TRUE(Schedule(PodBuilder("ns/small").Container(1, 8000).MigMode().Build()).scheduled());
  EXPECT_NEAR(scheduler_.mig_demand_mix().total(), 1.0 * 0.9995 + 1.0, 1e-9);
}

TEST_F(SchedulerTest, AnInvalidVgpuModeDoesNotCountInTheMigDemand) {
  AddNode("n1", {RtxPro6000Mig("GPU-M")});
  Decision d = Schedule(
      PodBuilder("ns/bad").Container(1, 8000).Annotation("nvidia.com/vgpu-mode", "migx").Build());
  EXPECT_TRUE(d.invalid_request());
  EXPECT_EQ(scheduler_.mig_demand_mix().total(), 0.0);
  ASSERT_TRUE(
      Schedule(
          PodBuilder("ns/ok").Container(1, 8000).Annotation("nvidia.com/vgpu-mode", "mig").Build())
          .scheduled());
  EXPECT_GT(scheduler_.mig_demand_mix().total(), 0.0);
}

}  // namespace
}  // namespace tessera::sched
