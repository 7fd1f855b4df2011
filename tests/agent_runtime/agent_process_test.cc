// The agent's reconcile pass end to end (AgentProcess over the simulated NVML and an in-memory
// API): destroys wait for a pod view provably newer than the ledger, or for a read of the pod
// from the API server that proves it gone; a GPU lost at discovery keeps its ledger entries, a
// foreign instance at a pod's placement is reported, counted and never taken over, and a live
// pod's instances lost in a reboot are recreated (issue 38).

#include "agent_runtime/agent_process.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "agent/fake_node_api.h"
#include "core/codec/mig_allocations.h"
#include "core/model/annotations.h"
#include "core/node/mig_claims.h"
#include "support/nvml_sim.h"

namespace tessera {
namespace {

namespace ann = model::annotations;
using agent_runtime::AgentOptions;
using agent_runtime::AgentProcess;
using testing::FakeNodeApi;
using testing::RtxPro6000;
using testing::SimulatedNvml;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Pod a, running on node n1, holds two 1g.24gb at 9 and 6 on GPU-rtx-0.
model::Pod PodA() {
  model::Pod p;
  p.name = "a";
  p.uid = "uid-a";
  p.node_name = "n1";
  p.phase = "Running";
  p.resource_version = "10";
  p.containers.push_back(model::Container{"main", {}, {}, false});
  p.annotations[std::string(ann::kMigAllocations)] =
      R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-rtx-0","profile":"1g.24gb","placement":{"start":9,"size":3}},)"
      R"({"containerIndex":0,"deviceIndex":1,"gpuUUID":"GPU-rtx-0","profile":"1g.24gb","placement":{"start":6,"size":3}}])";
  return p;
}

AgentOptions Options(const SimulatedNvml& sim) {
  AgentOptions o;
  o.node_name = "n1";
  o.device.operating_mode = "mig";
  o.ledger_path = sim.Path("ledger.json");
  o.reconcile_grace = std::chrono::milliseconds(10000);
  o.sysfs_root = sim.Path("sys");
  o.serve_kubelet = false;
  return o;
}

// Pod a's instances, realized by an earlier agent `age_ms` ago.
void RealizePodA(SimulatedNvml& sim, int64_t age_ms) {
  auto driver = sim.Driver();
  agent::MigManager mig(*driver, agent::LedgerFile(sim.Path("ledger.json")),
                        [age_ms] { return NowMs() - age_ms; });
  ASSERT_TRUE(mig.Start().ok());
  const node::NodeClaims claims = node::ClaimsOnNode({PodA()}, "n1");
  ASSERT_EQ(claims.claims.size(), 1U);
  auto realized = mig.Realize(claims.claims[0], 0, claims);
  ASSERT_TRUE(realized.ok()) << realized.error().message;
}

size_t LedgerSize(const SimulatedNvml& sim) {
  auto loaded = agent::LedgerFile(sim.Path("ledger.json")).Load();
  EXPECT_TRUE(loaded.ok());
  return loaded.ok() ? loaded.value().size() : 0;
}

size_t InstancesOnTheGpu(SimulatedNvml& sim) {
  auto list = sim.Driver()->ListInstances("GPU-rtx-0");
  EXPECT_TRUE(list.ok()) << list.error().message;
  return list.value().size();
}

// Issue 38 C: the pod cache's watch silently died before pod a was bound, so the cache never
// saw pod a; it still reports synced. Pod a's instances (older than the grace period) must not
// be destroyed until a view newer than their ledger entries shows pod a gone: the read of pod
// a from the API server, once per pass, shows it there (the same uid), which proves nothing.
TEST(AgentProcessTest, AStalePodCacheNeverDestroysALivePodsInstances) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  RealizePodA(sim, /*age_ms=*/30000);
  FakeNodeApi api;                 // no pod a in the cache
  api.fresh_ms = NowMs() - 60000;  // its last event, a minute ago
  api.server_pods = {PodA()};      // but the API server has it
  auto driver = sim.Driver();
  AgentProcess process(*driver, api, Options(sim), nullptr);
  ASSERT_TRUE(process.Start([] { return true; }).ok());  // reconciles once
  api.reads.clear();
  auto report = process.Reconcile();
  EXPECT_EQ(report.destroyed, 0);
  EXPECT_EQ(report.awaiting_fresher_view.size(), 2U);
  EXPECT_EQ(api.reads, (std::vector<std::string>{"default/a"}));
  EXPECT_TRUE(report.proven_gone.empty());
  EXPECT_EQ(InstancesOnTheGpu(sim), 2U);
  EXPECT_EQ(LedgerSize(sim), 2U);
  // A relist (fresh now) shows pod a gone: now its instances go.
  api.fresh_ms.reset();
  api.server_pods.reset();
  report = process.Reconcile();
  EXPECT_EQ(report.destroyed, 2);
  EXPECT_EQ(InstancesOnTheGpu(sim), 0U);
  EXPECT_EQ(LedgerSize(sim), 0U);
}

// A pod deleted and replaced under the same name within the grace period (e2e scenario j): no
// later pod event makes the view fresh enough for its entries, but a read of the pod from the
// API server finds another pod (another uid) under its name, which proves it gone.
TEST(AgentProcessTest, AReadShowingThePodReplacedReleasesItsInstancesOnAStaleView) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  RealizePodA(sim, /*age_ms=*/1000);  // pod a's Allocate, a second ago
  FakeNodeApi api;
  model::Pod again = PodA();  // pod a's replacement, not bound yet
  again.uid = "uid-a2";
  again.node_name.clear();
  again.annotations.clear();
  api.server_pods = {again};  // the view (fresh now, not 10 s newer than the entries) has none
  auto driver = sim.Driver();
  AgentProcess process(*driver, api, Options(sim), nullptr);
  ASSERT_TRUE(process.Start([] { return true; }).ok());           // reconciles once
  EXPECT_EQ(api.reads, (std::vector<std::string>{"default/a"}));  // once for both instances
  EXPECT_EQ(InstancesOnTheGpu(sim), 0U);
  EXPECT_EQ(LedgerSize(sim), 0U);
  auto report = process.Reconcile();  // nothing waits any more: no read
  EXPECT_EQ(report.destroyed, 0);
  EXPECT_EQ(api.reads.size(), 1U);
}

// The same with the pod deleted for good (NotFound), and a read that fails first: a failure
// proves nothing, is reported, and the read is made again on the next pass.
TEST(AgentProcessTest, AFailedReadDestroysNothingAndIsRetriedNextPass) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  RealizePodA(sim, /*age_ms=*/1000);
  FakeNodeApi api;  // pod a deleted: neither in the view nor on the API server
  api.read_failure = agent::ApiFailure(0, "read pod default/a: connection refused");
  auto driver = sim.Driver();
  AgentProcess process(*driver, api, Options(sim), nullptr);
  ASSERT_TRUE(process.Start([] { return true; }).ok());
  api.reads.clear();
  auto report = process.Reconcile();
  EXPECT_EQ(report.destroyed, 0);
  EXPECT_EQ(report.awaiting_fresher_view.size(), 2U);
  EXPECT_EQ(api.reads, (std::vector<std::string>{"default/a"}));
  ASSERT_EQ(report.errors.size(), 1U);
  EXPECT_NE(report.errors[0].find("cannot prove pod default/a gone: read pod default/a: "
                                  "connection refused"),
            std::string::npos)
      << report.errors[0];
  EXPECT_EQ(InstancesOnTheGpu(sim), 2U);
  EXPECT_EQ(LedgerSize(sim), 2U);
  api.read_failure.reset();  // NotFound now
  report = process.Reconcile();
  EXPECT_EQ(report.destroyed, 2);
  EXPECT_EQ(report.proven_gone, (std::vector<std::string>{"default/a"}));
  EXPECT_EQ(api.reads.size(), 2U);
  EXPECT_EQ(InstancesOnTheGpu(sim), 0U);
  EXPECT_EQ(LedgerSize(sim), 0U);
}

// Issue 38 B: GPU_IS_LOST at discovery (and on every lookup) empties nothing: the ledger keeps
// pod a's instances, and once the GPU is back they are destroyed (pod a ended meanwhile).
TEST(AgentProcessTest, AGpuLostAtDiscoveryKeepsItsLedgerEntries) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  RealizePodA(sim, /*age_ms=*/30000);
  FakeNodeApi api;  // pod a ended and is gone
  SimulatedNvml::SetFaults(
      "fail:nvmlDeviceGetHandleByIndex_v2:*:GPU_IS_LOST,"
      "fail:nvmlDeviceGetHandleByUUID:*:GPU_IS_LOST");
  {
    auto driver = sim.Driver();
    AgentProcess process(*driver, api, Options(sim), nullptr);
    ASSERT_TRUE(process.Start([] { return true; }).ok());
    auto report = process.Reconcile();
    EXPECT_EQ(report.forgotten, 0);
    EXPECT_FALSE(report.errors.empty());
    EXPECT_EQ(LedgerSize(sim), 2U);
  }
  SimulatedNvml::SetFaults("");
  auto driver = sim.Driver();
  AgentProcess restarted(*driver, api, Options(sim), nullptr);
  ASSERT_TRUE(restarted.Start([] { return true; }).ok());  // reconciles once
  EXPECT_EQ(InstancesOnTheGpu(sim), 0U);
  EXPECT_EQ(LedgerSize(sim), 0U);
}

double Gauge(agent_runtime::AgentMetrics& metrics, const std::string& name) {
  for (const auto& family : metrics.registry().Collect()) {
    if (family.name == name && !family.metric.empty()) return family.metric[0].gauge.value;
  }
  ADD_FAILURE() << name << " not found";
  return -1;
}

double Counter(agent_runtime::AgentMetrics& metrics, const std::string& name) {
  for (const auto& family : metrics.registry().Collect()) {
    if (family.name == name && !family.metric.empty()) return family.metric[0].counter.value;
  }
  ADD_FAILURE() << name << " not found";
  return -1;
}

// Issue 38 A: an instance nvidia-mig-parted (or an operator) made at pod a's reserved placement
// is not adopted: no ledger entry, no UUID on the pod, kept when pod a ends; it is reported on
// the pod once, and counted as foreign.
TEST(AgentProcessTest, AForeignInstanceAtAPodsPlacementIsReportedNotTakenOver) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  {
    auto driver = sim.Driver();
    auto gi = driver->CreateGpuInstance("GPU-rtx-0", "1g.24gb", {9, 3});
    ASSERT_TRUE(gi.ok() && driver->CreateComputeInstance(gi.value()).ok());
  }
  FakeNodeApi api;
  api.pods = {PodA()};
  agent_runtime::AgentMetrics metrics;
  auto driver = sim.Driver();
  AgentProcess process(*driver, api, Options(sim), &metrics);
  ASSERT_TRUE(process.Start([] { return true; }).ok());
  auto report = process.Reconcile();  // a second pass reports nothing new
  EXPECT_EQ(report.adopted + report.kept, 0);
  ASSERT_EQ(api.events.size(), 1U);
  EXPECT_NE(api.events[0].find("default/a ForeignMigInstance"), std::string::npos) << api.events[0];
  auto recorded =
      codec::DecodeMigAllocations(*api.Pod("a").Annotation(std::string(ann::kMigAllocations)));
  ASSERT_TRUE(recorded.ok());
  EXPECT_FALSE(recorded.value()[0].runtime.has_value());  // no foreign UUID in the pod
  EXPECT_EQ(LedgerSize(sim), 0U);
  EXPECT_EQ(process.foreign_instances().size(), 1U);
  EXPECT_EQ(Gauge(metrics, "tessera_agent_foreign_mig_instances"), 1.0);
  // The scheduler is told: the node's annotation lists it, and one Node Event says so.
  const std::string* published = api.node.Annotation(std::string(ann::kForeignMigInstances));
  ASSERT_NE(published, nullptr);
  EXPECT_NE(published->find(R"({"gpu":"GPU-rtx-0","profile":"1g.24gb","start":9,"size":3,)"),
            std::string::npos)
      << *published;
  EXPECT_EQ(
      std::count_if(api.node_events.begin(), api.node_events.end(),
                    [](const std::string& e) { return e.starts_with("ForeignMigInstances:"); }),
      1);
  // Pod a ends: the instance it never owned stays.
  api.pods.clear();
  report = process.Reconcile();
  EXPECT_EQ(report.destroyed, 0);
  EXPECT_EQ(InstancesOnTheGpu(sim), 1U);
}

// Issue 38 E: the node reboots (or the GPU is reset, the driver reloaded) while pod a runs;
// every instance is gone and the agent restarts. The kubelet will restart pod a's containers
// without asking again, so the agent makes pod a's instances again at their placements and
// records the new MIG UUIDs on the pod, with a Warning Event and a count.
TEST(AgentProcessTest, AfterARebootALivePodsInstancesAreRecreatedAndRecorded) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  RealizePodA(sim, /*age_ms=*/30000);
  FakeNodeApi api;
  api.pods = {PodA()};
  std::vector<std::string> before;
  {
    auto driver = sim.Driver();
    AgentProcess process(*driver, api, Options(sim), nullptr);
    ASSERT_TRUE(process.Start([] { return true; }).ok());  // records pod a's identities
    auto recorded =
        codec::DecodeMigAllocations(*api.Pod("a").Annotation(std::string(ann::kMigAllocations)));
    ASSERT_TRUE(recorded.ok());
    for (const auto& a : recorded.value()) {
      ASSERT_TRUE(a.runtime.has_value());
      before.push_back(a.runtime->mig_uuid);
    }
  }
  sim.Reboot();
  agent_runtime::AgentMetrics metrics;
  auto driver = sim.Driver();
  ASSERT_EQ(driver->ListInstances("GPU-rtx-0").value().size(), 0U);
  AgentProcess restarted(*driver, api, Options(sim), &metrics);
  ASSERT_TRUE(restarted.Start([] { return true; }).ok());  // reconciles once
  auto list = driver->ListInstances("GPU-rtx-0");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list.value().size(), 2U);
  auto recorded =
      codec::DecodeMigAllocations(*api.Pod("a").Annotation(std::string(ann::kMigAllocations)));
  ASSERT_TRUE(recorded.ok());
  for (size_t i = 0; i < recorded.value().size(); ++i) {
    const auto& a = recorded.value()[i];
    ASSERT_TRUE(a.runtime.has_value());
    EXPECT_NE(a.runtime->mig_uuid, before[i]);
    const bool exists =
        std::any_of(list.value().begin(), list.value().end(), [&](const auto& inst) {
          return node::Matches(inst, a) && inst.mig_uuid == a.runtime->mig_uuid;
        });
    EXPECT_TRUE(exists) << a.runtime->mig_uuid;
  }
  ASSERT_EQ(api.events.size(), 3U);
  EXPECT_NE(api.events[0].find("default/a MigInstanceRecreated"), std::string::npos)
      << api.events[0];
  EXPECT_NE(api.events[0].find("(was MIG-"), std::string::npos) << api.events[0];
  EXPECT_EQ(LedgerSize(sim), 2U);
  EXPECT_EQ(Counter(metrics, "tessera_agent_mig_instances_recreated_total"), 2.0);
  // The kubelet restarts pod a's containers with the MIG UUIDs it cached, which are gone: the
  // pod is failed, once, so that its controller replaces it.
  ASSERT_EQ(api.failed.size(), 1U);
  EXPECT_NE(api.failed[0].find("default/a MigInstanceReplaced"), std::string::npos)
      << api.failed[0];
  EXPECT_NE(api.events[2].find("default/a MigInstanceReplaced"), std::string::npos)
      << api.events[2];
  EXPECT_EQ(Counter(metrics, "tessera_agent_pods_failed_total"), 1.0);
  auto report = restarted.Reconcile();
  EXPECT_EQ(api.failed.size(), 1U);
  EXPECT_EQ(api.events.size(), 3U);
  // A read of pod a proves it terminal, so its instances are reclaimed at once.
  EXPECT_EQ(report.destroyed, 2);
}

// With --fail-lost-after=0 the pod is only told, and its recreated instances are kept.
TEST(AgentProcessTest, WithFailingOffARecreatedPodIsKept) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  RealizePodA(sim, /*age_ms=*/30000);
  FakeNodeApi api;
  api.pods = {PodA()};
  {
    auto driver = sim.Driver();
    AgentProcess process(*driver, api, Options(sim), nullptr);
    ASSERT_TRUE(process.Start([] { return true; }).ok());
  }
  sim.Reboot();
  auto driver = sim.Driver();
  AgentOptions options = Options(sim);
  options.fail_lost_after = std::chrono::milliseconds(0);
  AgentProcess restarted(*driver, api, options, nullptr);
  ASSERT_TRUE(restarted.Start([] { return true; }).ok());
  EXPECT_EQ(api.events.size(), 2U);
  EXPECT_TRUE(api.failed.empty());
  auto report = restarted.Reconcile();
  EXPECT_EQ(report.kept, 2);
}

// Issue 38 E: after the reboot an operator made an instance at pod a's placement before the
// agent came back. It is not taken over (although the driver gave it pod a's old GPU instance
// id); pod a is told once, loudly, and counted.
TEST(AgentProcessTest, AfterARebootAPodWhosePlacementWasTakenIsReportedLost) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  RealizePodA(sim, /*age_ms=*/30000);
  sim.Reboot();
  {
    auto driver = sim.Driver();
    auto gi = driver->CreateGpuInstance("GPU-rtx-0", "1g.24gb", {9, 3});
    ASSERT_TRUE(gi.ok() && driver->CreateComputeInstance(gi.value()).ok());
  }
  FakeNodeApi api;
  api.pods = {PodA()};
  agent_runtime::AgentMetrics metrics;
  auto driver = sim.Driver();
  AgentProcess process(*driver, api, Options(sim), &metrics);
  ASSERT_TRUE(process.Start([] { return true; }).ok());
  auto report = process.Reconcile();  // a second pass reports nothing new
  EXPECT_EQ(report.kept, 1);          // the one at 6, recreated by the first pass
  ASSERT_EQ(report.lost.size(), 1U);
  size_t lost_events = 0;
  for (const auto& e : api.events) {
    if (e.find("default/a MigInstanceLost") != std::string::npos) {
      ++lost_events;
      EXPECT_NE(e.find("at 9:3"), std::string::npos) << e;
    }
  }
  EXPECT_EQ(lost_events, 1U);
  EXPECT_EQ(Gauge(metrics, "tessera_agent_lost_mig_instances"), 1.0);
  EXPECT_EQ(process.foreign_instances().size(), 1U);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// The usage loop end to end over the simulated NVML: a read goes into /metrics and, with the
// next registration pass, into tessera.io/gpu-usage on the Node (one write: the annotation was
// not there); a call NVML fails is counted and leaves that value unknown, and the agent goes on.
TEST(AgentProcessTest, AUsageReadReachesTheMetricsAndTheNodeAndAFailureIsCounted) {
  SimulatedNvml sim(R"([{"uuid": "GPU-t4", "name": "Tesla T4", "memoryMiB": 15360,
                         "utilization": 37, "memoryUsedMiB": 12000},
                        {"uuid": "GPU-t4b", "name": "Tesla T4", "memoryMiB": 15360}])",
                    "fail:nvmlDeviceGetUtilizationRates@GPU-t4b:*:GPU_IS_LOST");
  FakeNodeApi api;
  auto driver = sim.Driver();
  agent_runtime::AgentMetrics metrics;
  AgentOptions options = Options(sim);
  options.device.operating_mode = "hami-core";
  AgentProcess process(*driver, api, options, &metrics);
  ASSERT_TRUE(process.Start([] { return true; }).ok());  // discovers and registers
  const int writes = api.node_patches;
  process.ReadUsage();
  EXPECT_EQ(Gauge(metrics, "tessera_agent_gpu_utilization_percent"), 37);
  EXPECT_EQ(Counter(metrics, "tessera_agent_usage_read_errors_total"), 1);
  ASSERT_TRUE(process.PublishRegistration().ok());
  EXPECT_EQ(api.node_patches, writes + 1);
  const std::string* usage = api.node.Annotation(std::string(ann::kGpuUsage));
  ASSERT_NE(usage, nullptr);
  EXPECT_NE(usage->find(";GPU-t4=37,12000;GPU-t4b=-,0"), std::string::npos) << *usage;
  EXPECT_EQ(Counter(metrics, "tessera_agent_usage_annotation_patches_total"), 1);
  // Read again at once: the same values, and the refresh holds back a usage-only write.
  process.ReadUsage();
  ASSERT_TRUE(process.PublishRegistration().ok());
  EXPECT_EQ(api.node_patches, writes + 1);
}

}  // namespace
}  // namespace tessera
