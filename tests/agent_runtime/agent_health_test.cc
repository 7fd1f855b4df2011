// The agent's XID handling over the simulated NVML (issue 38 D, "no crash, no flood"): a
// persistent event-set failure is retried with back-off, not in a loop that floods the log; one
// GPU whose event registration fails leaves the others' XIDs handled; XIDs that need a GPU reset
// (48, 79) never recover by themselves, while others recover after the quiet period.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>

#include "agent/fake_node_api.h"
#include "agent_runtime/agent_process.h"
#include "support/log_capture.h"
#include "support/nvml_sim.h"

namespace tessera {
namespace {

using agent_runtime::AgentOptions;
using agent_runtime::AgentProcess;
using testing::FakeNodeApi;
using testing::LogCapture;
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

// The GPUs whose replicas the device plugin would advertise as unhealthy.
std::set<std::string> UnhealthyGpus(AgentProcess& process) {
  std::set<std::string> out;
  for (const auto& d : process.Devices()) {
    if (!d.healthy) out.insert(d.id.substr(0, d.id.rfind('-')));
  }
  return out;
}

// Waits up to `timeout` for `done`.
template <class Condition>
bool WaitFor(Condition done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

bool NoEventPending(const SimulatedNvml& sim) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(sim.state_path() + ".events", ec);
  return ec || size == 0;
}

// nvmlEventSetCreate fails on every call (issue 38 D: 2.7 million warnings, 290 MB, in 3 s).
// The agent retries it with back-off (1 s, 2 s, ...) and logs each attempt once.
TEST(AgentHealthTest, APersistentEventSetFailureIsRetriedWithBackOffNotInALoop) {
  LogCapture log;
  SimulatedNvml sim("[" + RtxPro6000() + "]", "fail:nvmlEventSetCreate:*:UNKNOWN");
  FakeNodeApi api;
  auto driver = sim.Driver();
  std::atomic<int> attempts{0};
  driver->set_error_observer([&attempts](const std::string& function, int) {
    if (function == "nvmlEventSetCreate") ++attempts;
  });
  {
    AgentProcess process(*driver, api, Options(sim), nullptr);
    ASSERT_TRUE(process.Start([] { return true; }).ok());
    std::this_thread::sleep_for(std::chrono::seconds(3));
  }
  EXPECT_GE(attempts.load(), 1);
  EXPECT_LE(attempts.load(), 5);  // at 0 s, 1 s and 3 s
  EXPECT_LE(log.warnings(), 10U);
  EXPECT_TRUE(log.Contains("nvmlEventSetCreate")) << "the failure is logged";
}

// GPU-a's event registration fails on every try; GPU-b's XIDs are still handled, and GPU-a is
// not marked unhealthy for it (a failed watch says nothing about the GPU).
TEST(AgentHealthTest, OneGpusRegistrationFailureLeavesTheOtherGpusXidsHandled) {
  LogCapture log;
  SimulatedNvml sim("[" + RtxPro6000("GPU-a") + "," + RtxPro6000("GPU-b") + "]",
                    "fail:nvmlDeviceRegisterEvents@GPU-a:*:UNKNOWN");
  FakeNodeApi api;
  auto driver = sim.Driver();
  AgentProcess process(*driver, api, Options(sim), nullptr);
  ASSERT_TRUE(process.Start([] { return true; }).ok());
  sim.AppendXid("GPU-b", 48);
  EXPECT_TRUE(
      WaitFor([&] { return UnhealthyGpus(process).count("GPU-b") > 0; }, std::chrono::seconds(5)));
  EXPECT_EQ(UnhealthyGpus(process), std::set<std::string>{"GPU-b"});
  EXPECT_TRUE(log.Contains("GPU-a")) << "the failed registration names its GPU";
  EXPECT_LE(log.warnings(), 10U);
}

// With a 300 ms quiet period: XID 94 (a contained ECC error: the application restarts, the GPU
// goes on) recovers; 48 (double-bit ECC) and 79 (fallen off the bus) need a GPU reset and stay
// unhealthy until the agent restarts.
TEST(AgentHealthTest, XidsThatNeedAGpuResetNeverRecoverByThemselves) {
  SimulatedNvml sim("[" + RtxPro6000("GPU-a") + "," + RtxPro6000("GPU-b") + "," +
                    RtxPro6000("GPU-c") + "]");
  FakeNodeApi api;
  auto driver = sim.Driver();
  AgentOptions options = Options(sim);
  options.health_recovery_ms = 300;
  AgentProcess process(*driver, api, options, nullptr);
  ASSERT_TRUE(process.Start([] { return true; }).ok());
  sim.AppendXid("GPU-a", 48);
  sim.AppendXid("GPU-b", 79);
  sim.AppendXid("GPU-c", 94);
  ASSERT_TRUE(WaitFor([&] { return NoEventPending(sim); }, std::chrono::seconds(5)));
  EXPECT_TRUE(
      WaitFor([&] { return UnhealthyGpus(process).count("GPU-b") > 0; }, std::chrono::seconds(2)));
  // Recoveries are applied after each XID wait (up to 1 s): 2.5 s leaves room for one.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_EQ(UnhealthyGpus(process), (std::set<std::string>{"GPU-a", "GPU-b"}));
}

}  // namespace
}  // namespace tessera
