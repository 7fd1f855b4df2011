// The agent's readiness follows whether MIG instances can be made (issue 38 D): a ledger that
// cannot be written (here its path is a folder) would fail every MIG Allocate, so the agent is
// not ready while its node has MIG GPUs, and is ready again once the ledger can be written.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "agent/fake_node_api.h"
#include "agent_runtime/agent_process.h"
#include "support/nvml_sim.h"

namespace tessera {
namespace {

using agent_runtime::AgentOptions;
using agent_runtime::AgentProcess;
using testing::FakeNodeApi;
using testing::RtxPro6000;
using testing::SimulatedNvml;

AgentOptions Options(const SimulatedNvml& sim) {
  AgentOptions o;
  o.node_name = "n1";
  o.device.operating_mode = "mig";
  o.ledger_path = sim.Path("ledger.json");
  o.sysfs_root = sim.Path("sys");
  o.serve_kubelet = false;
  return o;
}

// Runs the agent's loop on a thread for the test's life.
class Running {
 public:
  explicit Running(AgentProcess& process)
      : thread_([this, &process] { process.Run([this] { return stop_.load(); }); }) {}
  ~Running() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Whether `ready` becomes `want` within `timeout`.
bool ReadyBecomes(const AgentProcess& process, bool want, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (process.ready() == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return process.ready() == want;
}

TEST(AgentReadinessTest, ALedgerPathThatIsAFolderIsNeverReady) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  AgentOptions options = Options(sim);
  std::filesystem::create_directories(options.ledger_path);
  FakeNodeApi api;
  auto driver = sim.Driver();
  AgentProcess process(*driver, api, options, nullptr);
  ASSERT_TRUE(process.Start([] { return true; }).ok());
  Running running(process);
  EXPECT_FALSE(ReadyBecomes(process, true, std::chrono::milliseconds(2500)));
}

TEST(AgentReadinessTest, NotReadyWhileTheLedgerCannotBeWritten) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  AgentOptions options = Options(sim);
  FakeNodeApi api;
  auto driver = sim.Driver();
  AgentProcess process(*driver, api, options, nullptr);
  ASSERT_TRUE(process.Start([] { return true; }).ok());
  Running running(process);
  EXPECT_TRUE(process.ready());
  std::filesystem::remove(options.ledger_path);
  std::filesystem::create_directories(options.ledger_path);
  EXPECT_TRUE(ReadyBecomes(process, false, std::chrono::seconds(5)));
  std::filesystem::remove_all(options.ledger_path);
  EXPECT_TRUE(ReadyBecomes(process, true, std::chrono::seconds(5)));
}

// A node without MIG GPUs never writes the ledger: its readiness does not depend on it.
TEST(AgentReadinessTest, ALedgerProblemDoesNotMatterWithoutMigGpus) {
  SimulatedNvml sim(R"([{"uuid": "GPU-t4", "name": "Tesla T4", "memoryMiB": 15360}])");
  AgentOptions options = Options(sim);
  options.device.operating_mode = "hami-core";
  std::filesystem::create_directories(options.ledger_path);
  FakeNodeApi api;
  auto driver = sim.Driver();
  AgentProcess process(*driver, api, options, nullptr);
  ASSERT_TRUE(process.Start([] { return true; }).ok());
  Running running(process);
  EXPECT_TRUE(ReadyBecomes(process, true, std::chrono::seconds(1)));
}

}  // namespace
}  // namespace tessera
