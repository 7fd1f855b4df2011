// Allocate as the kubelet calls it, against an in-memory API and the simulated NVML: the pod
// is found without HAMi's node lock, MIG instances appear at the reserved placements, shared
// GPUs get HAMi-core's environment, and the outcome is recorded on the pod.

#include "agent/allocator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "agent/fake_node_api.h"
#include "core/codec/mig_allocations.h"
#include "core/model/annotations.h"
#include "support/builders.h"
#include "support/nvml_sim.h"

namespace tessera {
namespace {

namespace ann = model::annotations;
using testing::FakeNodeApi;
using ::testing::HasSubstr;
using testing::RtxPro6000;
using testing::SimulatedNvml;

using testing::AllocatingPod;

const char* kTwoSlices = "GPU-rtx-0,NVIDIA,24192,25:GPU-rtx-0,NVIDIA,24192,25:;";
const char* kAtNineAndSix =
    R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-rtx-0","profile":"1g.24gb","placement":{"start":9,"size":3}},)"
    R"({"containerIndex":0,"deviceIndex":1,"gpuUUID":"GPU-rtx-0","profile":"1g.24gb","placement":{"start":6,"size":3}}])";

// HAMi-core's host folders, in memory: what Prepare was asked for, and an injected failure.
struct FakeFolders : agent::HamiCoreFolders {
  std::vector<std::string> prepared;  // "<podUID>_<container>"
  std::string fail_with;
  Status Prepare(const std::string& pod_uid, const std::string& container) override {
    if (!fail_with.empty()) return Error{fail_with};
    prepared.push_back(node::ContainerFolderName(pod_uid, container));
    return Status::Ok();
  }
  Result<std::vector<node::ContainerFolder>> List() override {
    return std::vector<node::ContainerFolder>{};
  }
  Status Remove(const std::string&) override { return Status::Ok(); }
};

// Where MIG devices are described (the CDI spec), in memory; `fail_with` set: nothing is.
struct FakeExport : agent::MigDeviceExport {
  std::vector<std::string> exported;
  std::string fail_with;
  Status Export(const std::vector<std::string>& mig_uuids) override {
    if (!fail_with.empty()) return Error{fail_with};
    exported.insert(exported.end(), mig_uuids.begin(), mig_uuids.end());
    return Status::Ok();
  }
};

struct Fixture {
  explicit Fixture(SimulatedNvml& sim, agent::HamiCoreFolders* folders = nullptr,
                   agent::MigDeviceExport* mig_export = nullptr,
                   const agent::AllocatorConfig& config = Config())
      : driver(sim.Driver()),
        mig(*driver, agent::LedgerFile(sim.Path("ledger.json")), [] { return 1; }),
        allocator(
            api, mig, config, [this] { return "uuid-" + std::to_string(++uuids); }, folders,
            mig_export) {
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
  auto instances = f.driver->ListInstances("GPU-rtx-0").value();
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
  EXPECT_EQ(c.envs.at("CUDA_DEVICE_MEMORY_SHARED_CACHE"), "/usr/local/vgpu/uuid-1.cache");
  ASSERT_EQ(c.mounts.size(), 4U);
  EXPECT_EQ(c.mounts[0],
            (node::MountSpec{"/usr/local/vgpu/libvgpu.so", "/usr/local/vgpu/libvgpu.so", true}));
  EXPECT_EQ(c.mounts[1].host_path, "/usr/local/vgpu/containers/uid-s_main");
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
  EXPECT_TRUE(f.driver->ListInstances("GPU-rtx-0").value().empty());
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

// HAMi-core's folders were never made: the runtime created the mount source root-only (or
// failed on it), so HAMi-core in a non-root container could not write its cache.
TEST(AllocatorTest, SharedContainersGetTheirHamiCoreFoldersMadeAndMounted) {
  SimulatedNvml sim(R"([{"uuid": "GPU-t4", "name": "Tesla T4", "memoryMiB": 15360}])");
  FakeFolders folders;
  Fixture f(sim, &folders);
  f.allocator.SetMigGpus({});
  f.api.pods = {AllocatingPod("s", "GPU-t4,NVIDIA,3000,30:;")};
  auto r = f.allocator.Allocate({{"GPU-t4-3"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(folders.prepared, (std::vector<std::string>{"uid-s_main"}));
  const auto& mounts = (*r)[0].mounts;
  ASSERT_EQ(mounts.size(), 4U);
  EXPECT_EQ(mounts[1],
            (node::MountSpec{"/usr/local/vgpu", "/usr/local/vgpu/containers/uid-s_main", false}));
  EXPECT_EQ(mounts[2], (node::MountSpec{"/tmp/vgpulock", "/tmp/vgpulock", false}));
}

TEST(AllocatorTest, FoldersThatCannotBeMadeFailThePodNamingThePath) {
  SimulatedNvml sim(R"([{"uuid": "GPU-t4", "name": "Tesla T4", "memoryMiB": 15360}])");
  FakeFolders folders;
  folders.fail_with = "/usr/local/vgpu/containers/uid-s_main: Read-only file system";
  Fixture f(sim, &folders);
  f.allocator.SetMigGpus({});
  f.api.pods = {AllocatingPod("s", "GPU-t4,NVIDIA,3000,30:;")};
  auto r = f.allocator.Allocate({{"GPU-t4-3"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("HAMi-core's folders: /usr/local/vgpu/containers/"),
            std::string::npos)
      << r.error().message;
  EXPECT_EQ(*f.api.Pod("s").Annotation(std::string(ann::kBindPhase)), "failed");
}

// CUDA_DISABLE_CONTROL: HAMi-core is not loaded, so neither its folders nor their mounts.
TEST(AllocatorTest, CudaDisableControlMakesNoHamiCoreFolder) {
  SimulatedNvml sim(R"([{"uuid": "GPU-t4", "name": "Tesla T4", "memoryMiB": 15360}])");
  FakeFolders folders;
  Fixture f(sim, &folders);
  f.allocator.SetMigGpus({});
  f.api.pods = {AllocatingPod("s", "GPU-t4,NVIDIA,3000,30:;")};
  f.api.pods[0].containers[0].cuda_disable_control = true;
  auto r = f.allocator.Allocate({{"GPU-t4-3"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(folders.prepared.empty());
  ASSERT_EQ((*r)[0].mounts.size(), 1U);  // libvgpu.so only
  EXPECT_EQ((*r)[0].mounts[0].container_path, "/usr/local/vgpu/libvgpu.so");
}

// A MIG Allocate read the node's pods three times (the cache, again for the claims, and a list
// when the cache missed); now once from the cache, plus one list only when the cache lags.
TEST(AllocatorTest, OneAllocateReadsTheNodesPodsOnce) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  Fixture f(sim);
  f.api.pods = {AllocatingPod("a", kTwoSlices, kAtNineAndSix)};
  ASSERT_TRUE(f.allocator.Allocate({{"GPU-rtx-0-0", "GPU-rtx-0-1"}}).ok());
  EXPECT_EQ(f.api.cache_reads, 1);
  EXPECT_EQ(f.api.fresh_lists, 0);

  // The informer has not seen the scheduler's bind yet: one list from the API server.
  f.api.pods.push_back(AllocatingPod(
      "b", kTwoSlices,
      R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-rtx-0","profile":"1g.24gb","placement":{"start":3,"size":3}},)"
      R"({"containerIndex":0,"deviceIndex":1,"gpuUUID":"GPU-rtx-0","profile":"1g.24gb","placement":{"start":0,"size":3}}])"));
  f.api.pods[1].uid = "uid-b";
  f.api.cached_pods = std::vector<model::Pod>{f.api.pods[0]};
  f.api.cache_reads = 0;
  auto r = f.allocator.Allocate({{"GPU-rtx-0-2", "GPU-rtx-0-3"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(f.api.cache_reads, 1);
  EXPECT_EQ(f.api.fresh_lists, 1);
  EXPECT_EQ(f.driver->ListInstances("GPU-rtx-0").value().size(), 4U);
}

// In CDI mode the container is handed `<kind>=MIG-<uuid>`: an instance missing from the spec
// (it could not be written) fails the Allocate with the reason, not the container later.
TEST(AllocatorTest, CdiModeFailsClearlyWhenTheInstanceIsInNoSpec) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  agent::AllocatorConfig config = Fixture::Config();
  config.strategy.envvar = false;
  config.strategy.cdi_cri = true;
  FakeExport exporter;
  Fixture f(sim, nullptr, &exporter, config);
  f.api.pods = {AllocatingPod("a", kTwoSlices, kAtNineAndSix)};
  auto r = f.allocator.Allocate({{"GPU-rtx-0-0", "GPU-rtx-0-1"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(exporter.exported.size(), 2U);
  EXPECT_EQ((*r)[0].cdi_devices,
            (std::vector<std::string>{"k8s.device-plugin.nvidia.com/gpu=" + exporter.exported[0],
                                      "k8s.device-plugin.nvidia.com/gpu=" + exporter.exported[1]}));

  exporter.fail_with = "MIG device(s) missing from the CDI spec /var/run/cdi/tessera-mig.json";
  f.api.pods.push_back(AllocatingPod(
      "b", kTwoSlices,
      R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-rtx-0","profile":"1g.24gb","placement":{"start":3,"size":3}},)"
      R"({"containerIndex":0,"deviceIndex":1,"gpuUUID":"GPU-rtx-0","profile":"1g.24gb","placement":{"start":0,"size":3}}])"));
  f.api.pods[1].uid = "uid-b";
  r = f.allocator.Allocate({{"GPU-rtx-0-2", "GPU-rtx-0-3"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("pod default/b container main: MIG device(s) missing from the "
                                   "CDI spec /var/run/cdi/tessera-mig.json"),
            std::string::npos)
      << r.error().message;
  EXPECT_EQ(*f.api.Pod("b").Annotation(std::string(ann::kBindPhase)), "failed");
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

// Found by the chaos soak (docs/reliability.md): without a lock naming the pod, the agent took
// the oldest bind, while the kubelet admits in its own order; one pod's devices went to
// another's container. Now a guess is made only where it cannot matter.
TEST(AllocatorTest, PodsWaitingForDifferentDevicesWithoutALockAreNotGuessed) {
  SimulatedNvml sim(R"([{"uuid": "GPU-t4", "name": "Tesla T4", "memoryMiB": 15360}])");
  Fixture f(sim);
  f.allocator.SetMigGpus({});
  f.api.pods = {AllocatingPod("x", "GPU-t4,NVIDIA,1000,10:;"),
                AllocatingPod("y", "GPU-t4,NVIDIA,3000,10:;")};
  f.api.pods[1].uid = "uid-y";
  auto r = f.allocator.Allocate({{"GPU-t4-0"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message,
              HasSubstr("cannot tell which pod the kubelet is admitting: pods default/x, "
                        "default/y wait for different devices on node n1"));
  EXPECT_THAT(r.error().message, HasSubstr("--node-lock hami"));
  for (const char* name : {"x", "y"}) {  // neither is recorded, nor failed
    EXPECT_EQ(*f.api.Pod(name).Annotation(std::string(ann::kBindPhase)), "allocating") << name;
  }
  EXPECT_EQ(f.api.patches, 0);
}

TEST(AllocatorTest, MigPodsWithoutALockAreNeverGuessed) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  Fixture f(sim);
  f.api.pods = {AllocatingPod("a", kTwoSlices, kAtNineAndSix),
                AllocatingPod("b", kTwoSlices, kAtNineAndSix)};
  f.api.pods[1].uid = "uid-b";
  auto r = f.allocator.Allocate({{"GPU-rtx-0-0", "GPU-rtx-0-1"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("cannot tell which pod the kubelet is admitting"));
  EXPECT_TRUE(f.mig.LedgerSnapshot().empty());  // nothing created for either
}

TEST(AllocatorTest, InterchangeablePodsWithoutALockGetTheOldestBind) {
  SimulatedNvml sim(R"([{"uuid": "GPU-t4", "name": "Tesla T4", "memoryMiB": 15360}])");
  Fixture f(sim);
  f.allocator.SetMigGpus({});
  f.api.pods = {AllocatingPod("late", "GPU-t4,NVIDIA,1000,10:;"),
                AllocatingPod("early", "GPU-t4,NVIDIA,1000,10:;")};
  f.api.pods[0].annotations[std::string(ann::kBindTime)] = "1700000100";
  f.api.pods[1].uid = "uid-early";
  auto r = f.allocator.Allocate({{"GPU-t4-0"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*f.api.Pod("early").Annotation(std::string(ann::kBindPhase)), "success");
  EXPECT_EQ(*f.api.Pod("late").Annotation(std::string(ann::kBindPhase)), "allocating");
}

}  // namespace
}  // namespace tessera
