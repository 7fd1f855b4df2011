// Allocate as the kubelet calls it, against an in-memory API and the simulated NVML: the pod
// is found without HAMi's node lock, MIG instances appear at the reserved placements, shared
// GPUs get HAMi-core's environment, and the outcome is recorded on the pod.

#include "agent/allocator.h"

#include <gtest/gtest.h>

#include "agent/fake_node_api.h"
#include "core/codec/mig_allocations.h"
#include "core/model/annotations.h"
#include "support/nvml_sim.h"

namespace tessera {
namespace {

namespace ann = model::annotations;
using testing::FakeNodeApi;
using testing::RtxPro6000;
using testing::SimulatedNvml;

model::Pod AllocatingPod(const std::string& name, const std::string& to_allocate,
                         const std::string& mig = "") {
  model::Pod p;
  p.name = name;
  p.uid = "uid-" + name;
  p.node_name = "n1";
  p.phase = "Pending";
  p.resource_version = "10";
  p.containers.push_back(model::Container{"main", {}, {}, false});
  p.annotations[std::string(ann::kAssignedNode)] = "n1";
  p.annotations[std::string(ann::kBindPhase)] = "allocating";
  p.annotations[std::string(ann::kBindTime)] = "1700000000";
  p.annotations[std::string(ann::kDevicesToAllocate)] = to_allocate;
  p.annotations[std::string(ann::kDevicesAllocated)] = to_allocate;
  if (!mig.empty()) p.annotations[std::string(ann::kMigAllocations)] = mig;
  return p;
}

const char* kTwoSlices = "GPU-rtx-0,NVIDIA,24192,25:GPU-rtx-0,NVIDIA,24192,25:;";
const char* kAtNineAndSix =
    R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-rtx-0","profile":"1g.24gb","placement":{"start":9,"size":3}},)"
    R"({"containerIndex":0,"deviceIndex":1,"gpuUUID":"GPU-rtx-0","profile":"1g.24gb","placement":{"start":6,"size":3}}])";

struct Fixture {
  explicit Fixture(SimulatedNvml& sim)
      : driver(sim.Driver()),
        mig(*driver, agent::LedgerFile(sim.Path("ledger.json")), [] { return 1; }),
        allocator(api, mig, Config(), [this] { return "uuid-" + std::to_string(++uuids); }) {
    EXPECT_TRUE(mig.Start().ok());
    mig.SetMigGpus({"GPU-rtx-0"});
    allocator.SetMigGpus({"GPU-rtx-0"});
  }
  static agent::AllocatorConfig Config() {
    agent::AllocatorConfig c;
    c.node_name = "n1";
    return c;
  }
  int uuids = 0;
  FakeNodeApi api;
  std::unique_ptr<nvml::NvmlGpuDriver> driver;
  agent::MigManager mig;
  agent::Allocator allocator;
};

TEST(AllocatorTest, MigPodGetsItsInstancesAndTheirUuidsAreRecorded) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  Fixture f(sim);
  f.api.pods = {AllocatingPod("a", kTwoSlices, kAtNineAndSix)};
  auto r = f.allocator.Allocate({{"GPU-rtx-0-0", "GPU-rtx-0-1"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 1U);
  const std::string ids = (*r)[0].envs.at("NVIDIA_VISIBLE_DEVICES");
  auto instances = f.driver->ListInstances("GPU-rtx-0").value;
  ASSERT_EQ(instances.size(), 2U);
  EXPECT_EQ(instances[0].placement.start, 6U);
  EXPECT_EQ(instances[1].placement.start, 9U);
  EXPECT_EQ(ids, instances[1].mig_uuid + "," + instances[0].mig_uuid);  // device 0 at 9
  EXPECT_EQ((*r)[0].envs.count("CUDA_DEVICE_MEMORY_LIMIT_0"), 0U);      // no HAMi-core for MIG

  const model::Pod& pod = f.api.Pod("a");
  EXPECT_EQ(*pod.Annotation(std::string(ann::kBindPhase)), "success");
  EXPECT_EQ(*pod.Annotation(std::string(ann::kDevicesToAllocate)), ";");
  auto recorded = codec::DecodeMigAllocations(*pod.Annotation(std::string(ann::kMigAllocations)));
  ASSERT_TRUE(recorded.ok());
  ASSERT_TRUE(recorded.value()[0].runtime.has_value());
  EXPECT_EQ(recorded.value()[0].runtime->mig_uuid, instances[1].mig_uuid);
  EXPECT_EQ(recorded.value()[1].runtime->gpu_instance_id, instances[0].gpu_instance_id);
}

TEST(AllocatorTest, SharedGpuGetsHamiCoreEnvironmentAndMounts) {
  SimulatedNvml sim(R"([{"uuid": "GPU-t4", "name": "Tesla T4", "memoryMiB": 15360}])");
  Fixture f(sim);
  f.allocator.SetMigGpus({});
  f.api.pods = {AllocatingPod("s", "GPU-t4,NVIDIA,3000,30:;")};
  auto r = f.allocator.Allocate({{"GPU-t4-3"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& c = (*r)[0];
  EXPECT_EQ(c.envs.at("NVIDIA_VISIBLE_DEVICES"), "GPU-t4");
  EXPECT_EQ(c.envs.at("CUDA_DEVICE_MEMORY_LIMIT_0"), "3000m");
  EXPECT_EQ(c.envs.at("CUDA_DEVICE_SM_LIMIT"), "30");
  EXPECT_EQ(c.envs.at("CUDA_DEVICE_MEMORY_SHARED_CACHE"), "/usr/local/vgpu/vgpu/uuid-1.cache");
  ASSERT_EQ(c.mounts.size(), 4U);
  EXPECT_EQ(c.mounts[0], (node::MountSpec{"/usr/local/vgpu/vgpu/libvgpu.so",
                                          "/usr/local/vgpu/vgpu/libvgpu.so", true}));
  EXPECT_EQ(c.mounts[1].host_path, "/usr/local/vgpu/vgpu/containers/uid-s_main");
  EXPECT_EQ(c.mounts[3].container_path, "/etc/ld.so.preload");
  EXPECT_EQ(*f.api.Pod("s").Annotation(std::string(ann::kBindPhase)), "success");
}

TEST(AllocatorTest, AConcurrentPodUpdateIsRetriedNotFailed) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  Fixture f(sim);
  f.api.pods = {AllocatingPod("a", kTwoSlices, kAtNineAndSix)};
  f.api.conflicts_to_inject = 2;  // e.g. the kubelet updating the pod's status meanwhile
  auto r = f.allocator.Allocate({{"GPU-rtx-0-0", "GPU-rtx-0-1"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*f.api.Pod("a").Annotation(std::string(ann::kBindPhase)), "success");
  EXPECT_EQ(f.api.patches, 3);
}

TEST(AllocatorTest, BadRequestsFailThePodWithAReasonAndTouchNothingElse) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  Fixture f(sim);
  f.api.pods = {AllocatingPod("a", kTwoSlices, kAtNineAndSix)};
  EXPECT_FALSE(f.allocator.Allocate({{"GPU-rtx-0-0"}}).ok());  // no pod waits for 1 GPU
  // Contradictory placements: both devices at 9.
  f.api.pods = {AllocatingPod(
      "b", kTwoSlices,
      R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-rtx-0","profile":"1g.24gb","placement":{"start":9,"size":3}},)"
      R"({"containerIndex":0,"deviceIndex":1,"gpuUUID":"GPU-rtx-0","profile":"1g.24gb","placement":{"start":9,"size":3}}])")};
  auto r = f.allocator.Allocate({{"GPU-rtx-0-0", "GPU-rtx-0-1"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("pod default/b"), std::string::npos) << r.error().message;
  EXPECT_EQ(*f.api.Pod("b").Annotation(std::string(ann::kBindPhase)), "failed");
  ASSERT_EQ(f.api.events.size(), 1U);
  EXPECT_NE(f.api.events[0].find("FailedAllocateGPU"), std::string::npos);
  EXPECT_TRUE(f.driver->ListInstances("GPU-rtx-0").value.empty());
  // Malformed allocations annotation.
  f.api.pods = {AllocatingPod("c", kTwoSlices, "[{\"containerIndex\":0}]")};
  r = f.allocator.Allocate({{"GPU-rtx-0-0", "GPU-rtx-0-1"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("hami.io/vgpu-mig-allocations"), std::string::npos)
      << r.error().message;
}

TEST(AllocatorTest, PreferredAllocationPicksReplicasOfTheAnnotatedGpus) {
  SimulatedNvml sim(R"([{"uuid": "GPU-t4", "name": "Tesla T4", "memoryMiB": 15360}])");
  Fixture f(sim);
  f.api.pods = {AllocatingPod("s", ";GPU-b,NVIDIA,3000,30:GPU-a,NVIDIA,1000,10:;")};
  node::PreferredRequest req;
  req.available = {"GPU-a-0", "GPU-a-1", "GPU-b-0", "GPU-c-0"};
  req.size = 2;
  auto pref = f.allocator.Preferred({req});
  ASSERT_EQ(pref.size(), 1U);
  EXPECT_EQ(pref[0], (std::vector<std::string>{"GPU-b-0", "GPU-a-0"}));
}

TEST(AllocatorTest, TheNodeLockNamesThePodAmongSeveralAndIsReleased) {
  SimulatedNvml sim(R"([{"uuid": "GPU-t4", "name": "Tesla T4", "memoryMiB": 15360}])");
  Fixture f(sim);
  f.allocator.SetMigGpus({});
  f.api.pods = {AllocatingPod("x", "GPU-t4,NVIDIA,1000,10:;"),
                AllocatingPod("y", "GPU-t4,NVIDIA,2000,10:;")};
  f.api.pods[1].uid = "uid-y";
  f.api.node.annotations[std::string(ann::kNodeLock)] = "2026-12-01T08:00:00Z,default,y";
  auto r = f.allocator.Allocate({{"GPU-t4-0"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].envs.at("CUDA_DEVICE_MEMORY_LIMIT_0"), "2000m");
  EXPECT_EQ(f.api.node.annotations.count(std::string(ann::kNodeLock)), 0U);
}

// The lock names pod "xy": pod "x", a prefix of it, is neither chosen by it nor may release it.
// The agent passed "not disabled" for every container: HAMi-core was preloaded even where the
// pod asked for it not to be.
TEST(AllocatorTest, CudaDisableControlLeavesHamiCoreUnloaded) {
  SimulatedNvml sim(R"([{"uuid": "GPU-t4", "name": "Tesla T4", "memoryMiB": 15360}])");
  Fixture f(sim);
  f.allocator.SetMigGpus({});
  f.api.pods = {AllocatingPod("s", "GPU-t4,NVIDIA,3000,30:;")};
  f.api.pods[0].containers[0].cuda_disable_control = true;
  auto r = f.allocator.Allocate({{"GPU-t4-3"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  for (const auto& mount : (*r)[0].mounts) EXPECT_NE(mount.container_path, "/etc/ld.so.preload");
  EXPECT_EQ((*r)[0].envs.at("CUDA_DEVICE_MEMORY_LIMIT_0"), "3000m");  // the limits still apply
}

TEST(AllocatorTest, TheNodeLockMatchesWholePodNamesOnly) {
  SimulatedNvml sim(R"([{"uuid": "GPU-t4", "name": "Tesla T4", "memoryMiB": 15360}])");
  Fixture f(sim);
  f.allocator.SetMigGpus({});
  f.api.pods = {AllocatingPod("x", "GPU-t4,NVIDIA,1000,10:;"),
                AllocatingPod("xy", "GPU-t4,NVIDIA,2000,10:;")};
  f.api.pods[1].uid = "uid-xy";
  f.api.pods[1].annotations[std::string(ann::kBindTime)] = "1700000100";  // the later bind
  f.api.node.annotations[std::string(ann::kNodeLock)] = "2026-12-01T08:00:00Z,default,xy";
  auto r = f.allocator.Allocate({{"GPU-t4-0"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].envs.at("CUDA_DEVICE_MEMORY_LIMIT_0"), "2000m");
}

}  // namespace
}  // namespace tessera
