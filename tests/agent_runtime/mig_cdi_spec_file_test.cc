// The CDI spec file of tessera's MIG instances, end to end on the simulated NVML: written when
// an Allocate creates instances (with the device nodes the driver's /proc files name), emptied
// when reconcile destroys them, and an Allocate in CDI mode fails clearly when it cannot be
// written.

#include "agent_runtime/mig_cdi_spec_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/allocator.h"
#include "agent/fake_node_api.h"
#include "core/codec/json_util.h"
#include "core/model/annotations.h"
#include "support/builders.h"
#include "support/nvml_sim.h"

namespace tessera {
namespace {

namespace ann = model::annotations;
namespace fs = std::filesystem;
using testing::FakeNodeApi;
using testing::RtxPro6000;
using testing::SimulatedNvml;

const char* kTwoSlices = "GPU-rtx-0,NVIDIA,24192,25:GPU-rtx-0,NVIDIA,24192,25:;";
const char* kAtNineAndSix =
    R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-rtx-0","profile":"1g.24gb","placement":{"start":9,"size":3}},)"
    R"({"containerIndex":0,"deviceIndex":1,"gpuUUID":"GPU-rtx-0","profile":"1g.24gb","placement":{"start":6,"size":3}}])";

model::Pod TwoSlicePod() { return testing::AllocatingPod("a", kTwoSlices, kAtNineAndSix); }

// The driver's /proc files for GPU-rtx-0 as minor 3: GI g's access is 100 + 10g, its CI c's
// 101 + 10g + c.
void WriteProcFiles(const fs::path& root) {
  fs::create_directories(root / "nvidia/gpus/0000:3b:00.0");
  std::ofstream(root / "nvidia/gpus/0000:3b:00.0/information")
      << "Model: \t\t RTX PRO 6000\nGPU UUID: \t GPU-rtx-0\nDevice Minor: \t 3\n";
  fs::create_directories(root / "nvidia-caps");
  std::ofstream minors(root / "nvidia-caps/mig-minors");
  minors << "config 1\nmonitor 2\n";
  for (int g = 0; g < 15; ++g) {
    minors << "gpu3/gi" << g << "/access " << 100 + 10 * g << "\n";
    for (int c = 0; c < 8; ++c) {
      minors << "gpu3/gi" << g << "/ci" << c << "/access " << 101 + 10 * g + c << "\n";
    }
  }
}

std::string ReadText(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Fixture {
  explicit Fixture(SimulatedNvml& sim)
      : driver(sim.Driver()),
        mig(*driver, agent::LedgerFile(sim.Path("ledger.json")), [this] { return clock; }),
        spec([this] { return mig.LedgerSnapshot(); }, *driver,
             {sim.Path("cdi"), "tessera-mig.json", "k8s.device-plugin.nvidia.com/gpu",
              sim.Path("proc")},
             nullptr),
        allocator(
            api, mig, Config(), [] { return std::string("x"); }, nullptr, &spec) {
    EXPECT_TRUE(mig.Start().ok());
    mig.SetMigGpus({"GPU-rtx-0"});
    allocator.SetMigGpus({"GPU-rtx-0"});
  }
  static agent::AllocatorConfig Config() {
    agent::AllocatorConfig c;
    c.node_name = "n1";
    c.strategy.envvar = false;
    c.strategy.cdi_annotations = true;
    return c;
  }
  int64_t clock = 1000;
  FakeNodeApi api;
  std::unique_ptr<nvml::NvmlGpuDriver> driver;
  agent::MigManager mig;
  agent_runtime::MigCdiSpecFile spec;
  agent::Allocator allocator;
};

// CDI mode handed out `k8s.device-plugin.nvidia.com/gpu=MIG-...` names that no spec contained.
TEST(MigCdiSpecFileTest, CreatedInstancesAreInTheSpecAndLeaveItWhenDestroyed) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  WriteProcFiles(sim.Path("proc"));
  Fixture f(sim);
  f.api.pods = {TwoSlicePod()};
  auto r = f.allocator.Allocate({{"GPU-rtx-0-0", "GPU-rtx-0-1"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ((*r)[0].annotations.size(), 1U);
  const std::string names = (*r)[0].annotations.begin()->second;

  const fs::path file = sim.Path("cdi/tessera-mig.json");
  ASSERT_TRUE(fs::exists(file));
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644U);
  const auto json = codec::Json::parse(ReadText(file));
  EXPECT_EQ(json["kind"], "k8s.device-plugin.nvidia.com/gpu");
  const auto instances = f.driver->ListInstances("GPU-rtx-0").value();
  ASSERT_EQ(instances.size(), 2U);
  ASSERT_EQ(json["devices"].size(), 2U);
  for (const auto& i : instances) {
    // Each name handed out is a device of the spec, with its GPU's and capabilities' nodes.
    EXPECT_NE(names.find("k8s.device-plugin.nvidia.com/gpu=" + i.mig_uuid), std::string::npos);
    const codec::Json* device = nullptr;
    for (const auto& d : json["devices"]) {
      if (d["name"] == i.mig_uuid) device = &d;
    }
    ASSERT_NE(device, nullptr) << i.mig_uuid;
    const auto nodes = (*device)["containerEdits"]["deviceNodes"];
    ASSERT_EQ(nodes.size(), 3U);
    EXPECT_EQ(nodes[0]["path"], "/dev/nvidia3");
    EXPECT_EQ(nodes[1]["path"],
              "/dev/nvidia-caps/nvidia-cap" + std::to_string(100 + 10 * i.gpu_instance_id));
    EXPECT_EQ(nodes[2]["path"],
              "/dev/nvidia-caps/nvidia-cap" +
                  std::to_string(101 + 10 * i.gpu_instance_id + i.compute_instance_id));
  }

  // The pod ends; reconcile destroys its instances and the next sync empties the spec.
  f.clock += 60000;
  auto report = f.mig.Reconcile({}, {true, f.clock + 60000});
  ASSERT_EQ(report.destroyed, 2) << (report.errors.empty() ? "" : report.errors[0]);
  ASSERT_TRUE(f.spec.Sync().ok());
  EXPECT_FALSE(fs::exists(file));  // a spec without devices is invalid: no file
  EXPECT_EQ(f.spec.write_failures(), 0U);
}

TEST(MigCdiSpecFileTest, AnAllocateInCdiModeFailsClearlyWhenTheSpecCannotBeWritten) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  std::ofstream(sim.Path("cdi")) << "a file where the spec folder should be";
  Fixture f(sim);
  f.api.pods = {TwoSlicePod()};
  auto r = f.allocator.Allocate({{"GPU-rtx-0-0", "GPU-rtx-0-1"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(
      r.error().message.find("missing from the CDI spec " + sim.Path("cdi") + "/tessera-mig.json"),
      std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("creating the CDI spec folder failed"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(*f.api.Pod("a").Annotation(std::string(ann::kBindPhase)), "failed");
  EXPECT_GE(f.spec.write_failures(), 1U);
}

// Without the driver's /proc files (the simulated NVML, a container without them) the devices
// are still named, with the control nodes the spec gives every container.
TEST(MigCdiSpecFileTest, WithoutTheDriversProcFilesDevicesAreNamedWithoutTheirNodes) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  Fixture f(sim);
  f.api.pods = {TwoSlicePod()};
  ASSERT_TRUE(f.allocator.Allocate({{"GPU-rtx-0-0", "GPU-rtx-0-1"}}).ok());
  const auto json = codec::Json::parse(ReadText(sim.Path("cdi/tessera-mig.json")));
  ASSERT_EQ(json["devices"].size(), 2U);
  EXPECT_TRUE(json["devices"][0]["containerEdits"]["deviceNodes"].empty());
  EXPECT_EQ(json["containerEdits"]["deviceNodes"].size(), 3U);
}

}  // namespace
}  // namespace tessera
