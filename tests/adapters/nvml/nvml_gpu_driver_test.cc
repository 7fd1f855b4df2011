// The GpuDriver port over NVML, on the simulated library: discovery, create, list, destroy.

#include "adapters/nvml/nvml_gpu_driver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "support/nvml_sim.h"

namespace tessera {
namespace {

using testing::RtxPro6000;
using testing::SimulatedNvml;

const node::DriverMigProfile* Profile(const node::DriverGpu& gpu, const std::string& name) {
  for (const auto& p : gpu.mig_profiles) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

TEST(NvmlGpuDriverTest, DiscoversGpusProfilesAndPlacements) {
  SimulatedNvml sim("[" + RtxPro6000() + R"(,
      {"uuid": "GPU-t4", "name": "Tesla T4", "memoryMiB": 15360, "pciBusId": "00000000:3B:00.0"}])");
  auto driver = sim.Driver();
  auto found = driver->Discover();
  ASSERT_TRUE(found.ok()) << found.error().message;
  ASSERT_EQ(found.value().gpus.size(), 2U);
  const auto& rtx = found.value().gpus[0];
  EXPECT_EQ(rtx.uuid, "GPU-rtx-0");
  EXPECT_EQ(rtx.name, "NVIDIA RTX PRO 6000 Blackwell Server Edition");
  EXPECT_EQ(rtx.memory_mib, 97887U);
  EXPECT_TRUE(rtx.mig_capable);
  EXPECT_TRUE(rtx.mig_enabled);
  const auto* one = Profile(rtx, "1g.24gb");
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->nvml_id, 14U);
  EXPECT_EQ(one->memory_mib, 24192U);
  EXPECT_EQ(one->instance_count, 4U);
  EXPECT_EQ(one->placements, (std::vector<model::Placement>{{0, 3}, {3, 3}, {6, 3}, {9, 3}}));
  EXPECT_NE(Profile(rtx, "1g.24gb+me.all"), nullptr);
  EXPECT_NE(Profile(rtx, "4g.96gb"), nullptr);
  const auto& t4 = found.value().gpus[1];
  EXPECT_EQ(t4.index, 1U);
  EXPECT_FALSE(t4.mig_capable);
  EXPECT_TRUE(t4.mig_profiles.empty());
  EXPECT_EQ(t4.pci_bus_id, "00000000:3B:00.0");
}

// --set-mig-mode's driver calls (issue 38 G): the process count, and MIG mode enabled at once
// (H100), pending a reset (A100, with the activation status in words) or pending because the
// GPU is in use; discovery then reports the mode and, when on, the profiles.
TEST(NvmlGpuDriverTest, CountsProcessesAndEnablesMigModeOrReportsItPending) {
  SimulatedNvml sim(R"([{"uuid": "GPU-h100", "model": "H100-SXM5-80GB", "migMode": false},
                        {"uuid": "GPU-a100", "model": "A100-40GB", "migMode": false},
                        {"uuid": "GPU-busy", "model": "H100-SXM5-80GB", "processes": 3},
                        {"uuid": "GPU-t4", "name": "Tesla T4", "memoryMiB": 15360}])");
  auto driver = sim.Driver();
  auto before = driver->Discover();
  ASSERT_TRUE(before.ok()) << before.error().message;
  EXPECT_TRUE(before.value().gpus[0].mig_capable);
  EXPECT_FALSE(before.value().gpus[0].mig_enabled);
  EXPECT_FALSE(before.value().gpus[0].mig_pending_enabled);
  EXPECT_TRUE(before.value().gpus[0].mig_profiles.empty());

  auto idle = driver->ComputeProcessCount("GPU-h100");
  ASSERT_TRUE(idle.ok()) << idle.error().message;
  EXPECT_EQ(idle.value(), 0U);
  auto busy = driver->ComputeProcessCount("GPU-busy");
  ASSERT_TRUE(busy.ok()) << busy.error().message;
  EXPECT_EQ(busy.value(), 3U);

  auto h100 = driver->SetMigMode("GPU-h100", true);
  ASSERT_TRUE(h100.ok()) << h100.error().message;
  EXPECT_TRUE(h100.value().current_enabled);
  EXPECT_TRUE(h100.value().pending_enabled);
  EXPECT_TRUE(h100.value().activation.empty());
  auto a100 = driver->SetMigMode("GPU-a100", true);
  ASSERT_TRUE(a100.ok()) << a100.error().message;
  EXPECT_FALSE(a100.value().current_enabled);
  EXPECT_TRUE(a100.value().pending_enabled);
  EXPECT_FALSE(a100.value().gpu_in_use);
  EXPECT_NE(a100.value().activation.find("GPU requires reset (NVML code 16)"), std::string::npos)
      << a100.value().activation;
  auto in_use = driver->SetMigMode("GPU-busy", true);
  ASSERT_TRUE(in_use.ok()) << in_use.error().message;
  EXPECT_FALSE(in_use.value().current_enabled);
  EXPECT_TRUE(in_use.value().gpu_in_use);
  auto t4 = driver->SetMigMode("GPU-t4", true);
  ASSERT_FALSE(t4.ok());
  EXPECT_EQ(t4.error().origin, "nvmlDeviceSetMigMode");
  EXPECT_EQ(t4.error().origin_code, node::kDriverNotSupported);

  auto after = driver->Discover();
  ASSERT_TRUE(after.ok()) << after.error().message;
  EXPECT_TRUE(after.value().gpus[0].mig_enabled);
  EXPECT_NE(Profile(after.value().gpus[0], "1g.10gb"), nullptr);
  EXPECT_FALSE(after.value().gpus[1].mig_enabled);
  EXPECT_TRUE(after.value().gpus[1].mig_pending_enabled);
  // The GPU now in MIG mode takes instances through the same driver (its cache was dropped).
  auto gi = driver->CreateGpuInstance("GPU-h100", "1g.10gb", {0, 1});
  EXPECT_TRUE(gi.ok()) << gi.error().message;
}

TEST(NvmlGpuDriverTest, SetMigModeWithoutPermissionIsAnErrorNamingTheCall) {
  SimulatedNvml sim(R"([{"uuid": "GPU-h100", "model": "H100-SXM5-80GB", "migMode": false}])",
                    "fail:nvmlDeviceSetMigMode:*:NO_PERMISSION");
  auto driver = sim.Driver();
  auto set = driver->SetMigMode("GPU-h100", true);
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.error().origin_code, node::kDriverNoPermission);
  EXPECT_NE(set.error().message.find("nvmlDeviceSetMigMode (GPU-h100: enabling MIG)"),
            std::string::npos)
      << set.error().message;
}

TEST(NvmlGpuDriverTest, CreatesAtExactlyThePlacementAndDestroysAgain) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  auto driver = sim.Driver();
  auto gi = driver->CreateGpuInstance("GPU-rtx-0", "1g.24gb", {9, 3});
  ASSERT_TRUE(gi.ok()) << gi.error().message;
  EXPECT_FALSE(gi.value().has_compute_instance);
  auto ci = driver->CreateComputeInstance(gi.value());
  ASSERT_TRUE(ci.ok()) << ci.error().message;
  EXPECT_EQ(ci.value().mig_uuid.rfind("MIG-", 0), 0U);
  auto list = driver->ListInstances("GPU-rtx-0");
  ASSERT_TRUE(list.ok()) << list.error().message;
  ASSERT_EQ(list.value().size(), 1U);
  EXPECT_EQ(list.value()[0], ci.value());

  auto illegal = driver->CreateGpuInstance("GPU-rtx-0", "1g.24gb", {1, 3});
  EXPECT_FALSE(illegal.ok());
  EXPECT_NE(illegal.error().message.find("not a legal placement"), std::string::npos);
  auto taken = driver->CreateGpuInstance("GPU-rtx-0", "1g.24gb", {9, 3});
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.error().origin_code, NVML_ERROR_INSUFFICIENT_RESOURCES);
  EXPECT_NE(taken.error().message.find("Insufficient Resources"), std::string::npos);

  ASSERT_TRUE(driver->DestroyInstance(ci.value()).ok());
  EXPECT_TRUE(driver->ListInstances("GPU-rtx-0").value().empty());
  EXPECT_TRUE(driver->DestroyInstance(ci.value()).ok());  // already gone counts as done
}

TEST(NvmlGpuDriverTest, DestroyNeverTakesANewerInstanceThatReusedTheId) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  auto driver = sim.Driver();
  auto old_gi = driver->CreateGpuInstance("GPU-rtx-0", "1g.24gb", {0, 3});
  ASSERT_TRUE(old_gi.ok());
  ASSERT_TRUE(driver->DestroyInstance(old_gi.value()).ok());
  auto reused = driver->CreateGpuInstance("GPU-rtx-0", "1g.24gb", {6, 3});
  ASSERT_TRUE(reused.ok());
  ASSERT_EQ(reused.value().gpu_instance_id,
            old_gi.value().gpu_instance_id);  // the driver reuses ids
  ASSERT_TRUE(driver->DestroyInstance(old_gi.value()).ok());
  EXPECT_EQ(driver->ListInstances("GPU-rtx-0").value().size(), 1U);
}

TEST(NvmlGpuDriverTest, ReportsFailedCallsByFunctionAndCode) {
  SimulatedNvml sim("[" + RtxPro6000() + "]",
                    "fail:nvmlGpuInstanceCreateComputeInstance:1:INSUFFICIENT_RESOURCES");
  auto driver = sim.Driver();
  std::vector<std::pair<std::string, int>> seen;
  driver->set_error_observer([&](const std::string& f, int code) { seen.emplace_back(f, code); });
  auto gi = driver->CreateGpuInstance("GPU-rtx-0", "1g.24gb", {3, 3});
  ASSERT_TRUE(gi.ok());
  auto ci = driver->CreateComputeInstance(gi.value());
  ASSERT_FALSE(ci.ok());
  EXPECT_EQ(ci.error().origin, "nvmlGpuInstanceCreateComputeInstance");
  ASSERT_EQ(seen.size(), 1U);
  EXPECT_EQ(seen[0], std::make_pair(std::string("nvmlGpuInstanceCreateComputeInstance"),
                                    static_cast<int>(NVML_ERROR_INSUFFICIENT_RESOURCES)));
}

TEST(NvmlGpuDriverTest, AMissingLibraryOrSymbolIsAClearError) {
  auto missing = nvml::NvmlLibrary::Open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
  auto no_symbols = nvml::NvmlLibrary::Open("libm.so.6");
  ASSERT_FALSE(no_symbols.ok());
  EXPECT_NE(no_symbols.error().message.find("missing symbol nvmlInit_v2"), std::string::npos);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

TEST(NvmlGpuDriverTest, WaitsForXidEventsOfWatchedGpus) {
  testing::SimulatedNvml sim("[" + testing::RtxPro6000() + "]");
  auto driver = sim.Driver();
  ASSERT_TRUE(driver->Discover().ok());
  auto unwatched = driver->WaitXid(10);  // nothing watched yet: an empty wait, not an error
  ASSERT_TRUE(unwatched.ok()) << unwatched.error().message;
  ASSERT_TRUE(driver->WatchXid("GPU-rtx-0").ok());
  ASSERT_TRUE(driver->WatchXid("GPU-rtx-0").ok());  // again: already watched
  auto none = driver->WaitXid(10);
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_TRUE(none.value().empty());
  sim.AppendXid("GPU-rtx-0", 48);
  auto got = driver->WaitXid(1000);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got.value().size(), 1U);
  EXPECT_EQ(got.value()[0].gpu_uuid, "GPU-rtx-0");
  EXPECT_EQ(got.value()[0].xid, 48U);
}

// Each GPU is registered on its own (issue 38 D): GPU-a's registration fails, GPU-b's XIDs
// still arrive.
TEST(NvmlGpuDriverTest, OneGpusFailedRegistrationLeavesTheOthersWatched) {
  testing::SimulatedNvml sim(
      "[" + testing::RtxPro6000("GPU-a") + "," + testing::RtxPro6000("GPU-b") + "]",
      "fail:nvmlDeviceRegisterEvents@GPU-a:*:UNKNOWN");
  auto driver = sim.Driver();
  ASSERT_TRUE(driver->Discover().ok());
  auto a = driver->WatchXid("GPU-a");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().origin, "nvmlDeviceRegisterEvents");
  EXPECT_NE(a.error().message.find("GPU-a"), std::string::npos) << a.error().message;
  ASSERT_TRUE(driver->WatchXid("GPU-b").ok());
  sim.AppendXid("GPU-b", 79);
  auto got = driver->WaitXid(1000);
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got.value().size(), 1U);
  EXPECT_EQ(got.value()[0].gpu_uuid, "GPU-b");
  EXPECT_FALSE(driver->WatchXid("GPU-a").ok());  // every try on GPU-a fails, as configured
}

TEST(NvmlGpuDriverTest, AFailedEventSetIsAnErrorOfTheWatchNotACrash) {
  testing::SimulatedNvml sim("[" + testing::RtxPro6000() + "]",
                             "fail:nvmlEventSetCreate:1:UNKNOWN");
  auto driver = sim.Driver();
  ASSERT_TRUE(driver->Discover().ok());
  auto first = driver->WatchXid("GPU-rtx-0");
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.error().origin, "nvmlEventSetCreate");
  EXPECT_TRUE(driver->WatchXid("GPU-rtx-0").ok());  // the next try creates the set
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// Three T4s (two computing, one idle, one with its values set in the state file) and an A100 in
// MIG mode with two 3g.20gb instances, one computing and one with its memory set.
constexpr const char* kUsageGpus = R"([
  {"uuid": "GPU-busy", "name": "Tesla T4", "memoryMiB": 15360, "processes": 2},
  {"uuid": "GPU-idle", "name": "Tesla T4", "memoryMiB": 15360},
  {"uuid": "GPU-set", "name": "Tesla T4", "memoryMiB": 15360, "utilization": 37,
   "memoryUsedMiB": 12000},
  {"uuid": "GPU-mig", "model": "A100-40GB", "migMode": true, "gpuInstances": [
    {"id": 1, "profile": "3g.20gb", "start": 4, "size": 4, "computeInstances": [
      {"id": 0, "profileId": 2, "uuid": "MIG-busy", "processes": 1}]},
    {"id": 2, "profile": "3g.20gb", "start": 0, "size": 4, "computeInstances": [
      {"id": 0, "profileId": 2, "uuid": "MIG-set", "memoryUsedMiB": 5000}]}]}])";

std::pair<uint32_t, uint64_t> BusyGpu(const node::UsageReading& r) {
  return {r.gpus[0].usage.utilization_percent.value_or(999),
          r.gpus[0].usage.memory_used_mib.value_or(999999)};
}

TEST(NvmlGpuDriverTest, ReadsTheSimulatedSyntheticUsageOfGpusAndMigDevices) {
  testing::SimulatedNvml sim(kUsageGpus);
  auto driver = sim.Driver();
  ASSERT_TRUE(driver->Discover().ok());
  auto read = driver->ReadUsage();
  ASSERT_TRUE(read.ok()) << read.error().message;
  const node::UsageReading& r = read.value();
  EXPECT_TRUE(r.problems.empty());
  ASSERT_EQ(r.gpus.size(), 4U);
  EXPECT_EQ(r.gpus[0].uuid, "GPU-busy");
  EXPECT_EQ(r.gpus[0].name, "Tesla T4");
  // 2 processes: 50 % plus up to 24, 15360*2/8 MiB plus up to 1023.
  const auto [util, used] = BusyGpu(r);
  EXPECT_GE(util, 50U);
  EXPECT_LE(util, 74U);
  EXPECT_GE(used, 3840U);
  EXPECT_LE(used, 3840U + 1023U);
  EXPECT_EQ(r.gpus[0].usage.memory_total_mib, 15360U);
  EXPECT_EQ(r.gpus[1].usage.utilization_percent, 0U);  // idle: a real 0, not unknown
  EXPECT_EQ(r.gpus[1].usage.memory_used_mib, 0U);
  EXPECT_EQ(r.gpus[2].usage.utilization_percent, 37U);
  EXPECT_EQ(r.gpus[2].usage.memory_used_mib, 12000U);
  EXPECT_TRUE(r.gpus[0].mig.empty());

  const node::DriverGpuUsage& mig = r.gpus[3];
  EXPECT_FALSE(mig.usage.utilization_percent.has_value());  // MIG mode: not supported
  ASSERT_EQ(mig.mig.size(), 2U);
  EXPECT_EQ(mig.mig[0].placement, (model::Placement{0, 4}));
  EXPECT_EQ(mig.mig[0].mig_uuid, "MIG-set");
  EXPECT_EQ(mig.mig[0].profile, "3g.20gb");
  EXPECT_EQ(mig.mig[0].gpu_instance_id, 2U);
  EXPECT_FALSE(mig.mig[0].usage.utilization_percent.has_value());  // unknown, never 0
  EXPECT_EQ(mig.mig[0].usage.memory_used_mib, 5000U);
  const uint64_t memory = mig.mig[1].usage.memory_total_mib.value_or(0);
  EXPECT_GT(memory, 19000U);
  EXPECT_EQ(mig.mig[1].mig_uuid, "MIG-busy");
  const uint64_t busy = mig.mig[1].usage.memory_used_mib.value_or(0);
  EXPECT_GE(busy, memory / 4);
  EXPECT_LE(busy, memory / 4 + 255);
  EXPECT_EQ(mig.usage.memory_used_mib, 5000U + busy);  // the GPU: its instances' sum

  // Deterministic: the same state reads the same, in this process and the next.
  auto again = driver->ReadUsage();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(BusyGpu(again.value()), BusyGpu(r));
  driver.reset();
  auto next = sim.Driver();
  ASSERT_TRUE(next->Discover().ok());
  EXPECT_EQ(BusyGpu(next->ReadUsage().value()), BusyGpu(r));
  next.reset();

  // The seed varies the synthetic values, reproducibly.
  std::ofstream(sim.state_path()) << "{\"usageSeed\": 7, \"gpus\": " << kUsageGpus << "}\n";
  auto seeded = sim.Driver();
  ASSERT_TRUE(seeded->Discover().ok());
  EXPECT_NE(BusyGpu(seeded->ReadUsage().value()), BusyGpu(r));
}

TEST(NvmlGpuDriverTest, AFailedUsageCallIsAProblemAndAnUnknownValue) {
  testing::SimulatedNvml sim(kUsageGpus, "fail:nvmlDeviceGetUtilizationRates@GPU-busy:*:15");
  auto driver = sim.Driver();
  std::vector<std::string> failed;
  driver->set_error_observer([&](const std::string& fn, int) { failed.push_back(fn); });
  ASSERT_TRUE(driver->Discover().ok());
  auto read = driver->ReadUsage();
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read.value().problems.size(), 1U);
  EXPECT_EQ(read.value().problems[0].origin, "nvmlDeviceGetUtilizationRates");
  EXPECT_EQ(failed, std::vector<std::string>{"nvmlDeviceGetUtilizationRates"});
  EXPECT_FALSE(read.value().gpus[0].usage.utilization_percent.has_value());
  EXPECT_TRUE(read.value().gpus[0].usage.memory_used_mib.has_value());
  EXPECT_EQ(read.value().gpus[1].usage.utilization_percent, 0U);  // the others are read
}

}  // namespace
}  // namespace tessera
