// Issue 38 G end to end (AgentProcess over the simulated NVML and an in-memory API): a GPU of
// a "mig" node whose MIG mode is off is not silently shared, the node gets an Event and
// /metrics a gauge saying why, the agent stays ready; --set-mig-mode enables MIG mode on an
// idle H100 and registers it as MIG, and leaves an A100's mode pending until a reset.

#include <gtest/gtest.h>

#include "agent/fake_node_api.h"
#include "agent_runtime/agent_process.h"
#include "core/codec/node_register.h"
#include "support/nvml_sim.h"

namespace tessera {
namespace {

using agent_runtime::AgentMetrics;
using agent_runtime::AgentOptions;
using agent_runtime::AgentProcess;
using testing::FakeNodeApi;
using testing::SimulatedNvml;

AgentOptions Options(const SimulatedNvml& sim, bool set_mig_mode) {
  AgentOptions o;
  o.node_name = "n1";
  o.device.operating_mode = "mig";
  o.ledger_path = sim.Path("ledger.json");
  o.sysfs_root = sim.Path("sys");
  o.serve_kubelet = false;
  o.set_mig_mode = set_mig_mode;
  return o;
}

double Sample(AgentMetrics& metrics, const std::string& name, const std::string& label,
              const std::string& value) {
  for (const auto& family : metrics.registry().Collect()) {
    if (family.name != name) continue;
    for (const auto& m : family.metric) {
      for (const auto& l : m.label) {
        if (l.name == label && l.value == value) {
          return family.type == prometheus::MetricType::Gauge ? m.gauge.value : m.counter.value;
        }
      }
    }
  }
  return -1;
}

std::vector<model::GpuDevice> Registered(const AgentProcess& process) {
  auto decoded = codec::DecodeNodeRegister(process.last_registration());
  EXPECT_TRUE(decoded.ok());
  return decoded.ok() ? decoded.value() : std::vector<model::GpuDevice>{};
}

TEST(AgentMigModeTest, MigModeOffIsLeftOutWithAnEventAndAMetricAndTheAgentStaysReady) {
  SimulatedNvml sim(R"([{"uuid": "GPU-off", "model": "H100-SXM5-80GB", "migMode": false},
                        {"uuid": "GPU-on", "model": "H100-SXM5-80GB", "migMode": true}])");
  auto driver = sim.Driver();
  FakeNodeApi api;
  AgentMetrics metrics;
  AgentProcess process(*driver, api, Options(sim, false), &metrics);
  ASSERT_TRUE(process.Start([] { return true; }).ok());
  auto registered = Registered(process);
  ASSERT_EQ(registered.size(), 1U);
  EXPECT_EQ(registered[0].uuid, "GPU-on");
  EXPECT_EQ(process.Devices().size(), 10U);  // the kubelet is not offered GPU-off either
  ASSERT_EQ(api.node_events.size(), 1U);
  EXPECT_EQ(api.node_events[0].rfind("MigModeOff: GPU GPU-off (index 0)", 0), 0U)
      << api.node_events[0];
  EXPECT_EQ(Sample(metrics, "tessera_agent_mig_mode_off_gpus", "state", "off"), 1);
  EXPECT_EQ(Sample(metrics, "tessera_agent_mig_mode_off_gpus", "state", "reset-pending"), 0);
  EXPECT_TRUE(process.ready());  // the other GPU serves; the Event says what to do
  ASSERT_TRUE(process.PublishRegistration().ok());
  EXPECT_EQ(api.node_events.size(), 1U);
}

TEST(AgentMigModeTest, SetMigModeEnablesAnIdleH100AndLeavesAnA100PendingAReset) {
  SimulatedNvml sim(R"([{"uuid": "GPU-h100", "model": "H100-SXM5-80GB", "migMode": false},
                        {"uuid": "GPU-a100", "model": "A100-40GB", "migMode": false},
                        {"uuid": "GPU-busy", "model": "H100-SXM5-80GB", "processes": 1}])");
  FakeNodeApi api;
  AgentMetrics metrics;
  {
    auto driver = sim.Driver();
    AgentProcess process(*driver, api, Options(sim, true), &metrics);
    ASSERT_TRUE(process.Start([] { return true; }).ok());
    auto registered = Registered(process);
    ASSERT_EQ(registered.size(), 1U);
    EXPECT_EQ(registered[0].uuid, "GPU-h100");
    EXPECT_EQ(registered[0].mode, "mig");
    EXPECT_FALSE(registered[0].mig_profiles.empty());
    EXPECT_EQ(Sample(metrics, "tessera_agent_mig_mode_enable_total", "result", "enabled"), 1);
    EXPECT_EQ(Sample(metrics, "tessera_agent_mig_mode_enable_total", "result", "reset-pending"), 1);
    EXPECT_EQ(Sample(metrics, "tessera_agent_mig_mode_enable_total", "result", "busy"), 1);
    EXPECT_EQ(Sample(metrics, "tessera_agent_mig_mode_off_gpus", "state", "off"), 1);
    EXPECT_EQ(Sample(metrics, "tessera_agent_mig_mode_off_gpus", "state", "reset-pending"), 1);
    std::string reasons;
    for (const auto& e : api.node_events) reasons += e.substr(0, e.find(':')) + " ";
    EXPECT_EQ(reasons, "MigModeEnabled MigModeEnableFailed MigModeResetPending MigModeOff ");
  }
  // A reboot applies the pending mode and ends the busy GPU's processes: that GPU is idle now.
  sim.Reboot();
  auto driver = sim.Driver();
  AgentProcess restarted(*driver, api, Options(sim, true), &metrics);
  ASSERT_TRUE(restarted.Start([] { return true; }).ok());
  auto registered = Registered(restarted);
  ASSERT_EQ(registered.size(), 3U);
  for (const auto& d : registered) EXPECT_EQ(d.mode, "mig") << d.uuid;
  EXPECT_EQ(Sample(metrics, "tessera_agent_mig_mode_off_gpus", "state", "off"), 0);
}

}  // namespace
}  // namespace tessera
