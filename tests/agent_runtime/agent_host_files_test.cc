// The agent's host files end to end (AgentProcess over the simulated NVML and an in-memory API):
// a shared container's HAMi-core folder is made at Allocate and removed by the reconcile once
// the pod view proves its pod gone, never while the pod runs or the view is too old to tell.

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "agent/fake_node_api.h"
#include "agent_runtime/agent_process.h"
#include "core/model/annotations.h"
#include "support/builders.h"
#include "support/nvml_sim.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::FakeNodeApi;
using testing::SimulatedNvml;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

model::Pod SharedPod() { return testing::AllocatingPod("s", "GPU-t4,NVIDIA,3000,30:;"); }

TEST(AgentHostFilesTest, AHamiCoreFolderLivesAsLongAsItsPod) {
  SimulatedNvml sim(R"([{"uuid": "GPU-t4", "name": "Tesla T4", "memoryMiB": 15360}])");
  agent_runtime::AgentOptions o;
  o.node_name = "n1";
  o.ledger_path = sim.Path("ledger.json");
  o.sysfs_root = sim.Path("sys");
  o.serve_kubelet = false;
  o.reconcile_grace = std::chrono::milliseconds(0);
  o.manage_hami_core_folders = true;
  o.allocator.node_name = "n1";
  o.allocator.hami_core.hook_path = sim.Path("hook");
  o.vgpu_lock_dir = sim.Path("vgpulock");
  fs::create_directories(sim.Path("sys"));
  auto driver = sim.Driver();
  FakeNodeApi api;
  agent_runtime::AgentProcess process(*driver, api, o, nullptr);
  ASSERT_TRUE(process.PublishRegistration().ok());
  api.pods = {SharedPod()};
  auto r = process.Allocate({{"GPU-t4-0"}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const fs::path folder = sim.Path("hook") + "/vgpu/containers/uid-s_main";
  ASSERT_TRUE(fs::is_directory(folder));
  EXPECT_TRUE(fs::is_directory(sim.Path("vgpulock")));

  process.Reconcile();  // the pod runs
  EXPECT_TRUE(fs::exists(folder));
  api.pods.clear();
  api.fresh_ms = NowMs() - 3'600'000;  // a view an hour old proves nothing about the folder
  process.Reconcile();
  EXPECT_TRUE(fs::exists(folder));
  api.fresh_ms = NowMs() + 1000;  // a fresh view without the pod: it is gone
  process.Reconcile();
  EXPECT_FALSE(fs::exists(folder));
}

}  // namespace
}  // namespace tessera
