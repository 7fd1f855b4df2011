// One registration pass (agent/registration_publisher.h) with a fake driver and API: what is
// published and patched, which GPUs are MIG, and issue 38 G: a GPU of a "mig" node whose MIG
// mode is off is not silently shared (left out by default, an Event saying why, once), and
// --set-mig-mode enables it on an idle GPU, never on a busy one, and reports a pending reset.

#include "agent/registration_publisher.h"

#include <gtest/gtest.h>

#include "agent/fake_gpu_driver.h"
#include "agent/fake_node_api.h"
#include "core/codec/node_register.h"
#include "core/model/annotations.h"

namespace tessera {
namespace {

using agent::MigModeEnableResult;
using agent::Publication;
using agent::PublisherOptions;
using agent::RegistrationPublisher;
using testing::FakeGpuDriver;
using testing::FakeNodeApi;

const std::string kRegister(model::annotations::kNodeRegister);

node::DriverMigProfile OneSlice() {
  node::DriverMigProfile p;
  p.name = "1g.10gb";
  p.nvml_enum = 0;
  p.nvml_id = 19;
  p.slice_count = 1;
  p.instance_count = 7;
  p.sm_count = 16;
  p.memory_mib = 9984;
  for (uint32_t s = 0; s < 7; ++s) p.placements.push_back({s, 1});
  return p;
}

node::DriverGpu H100(const std::string& uuid, uint32_t index, bool mig) {
  node::DriverGpu g;
  g.uuid = uuid;
  g.index = index;
  g.name = "NVIDIA H100 80GB HBM3";
  g.memory_mib = 81559;
  g.pci_bus_id = "00000000:1" + std::to_string(index) + ":00.0";
  g.mig_capable = true;
  g.mig_enabled = mig;
  g.mig_pending_enabled = mig;
  if (mig) g.mig_profiles = {OneSlice()};
  return g;
}

node::DriverGpu T4(const std::string& uuid, uint32_t index) {
  node::DriverGpu g;
  g.uuid = uuid;
  g.index = index;
  g.name = "Tesla T4";
  g.memory_mib = 15360;
  g.pci_bus_id = "00000000:1" + std::to_string(index) + ":00.0";
  return g;
}

node::NodeDeviceConfig MigNode(node::MigFallback fallback = node::MigFallback::kNone) {
  node::NodeDeviceConfig c;
  c.operating_mode = "mig";
  c.mig_fallback = fallback;
  return c;
}

struct Fixture {
  explicit Fixture(node::NodeDeviceConfig config, bool set_mig_mode = false)
      : publisher(
            driver, api, std::move(config), PublisherOptions{set_mig_mode},
            [this](const std::string& bus) { return numa[bus]; }, [this] { return now; }) {
    driver.profiles_when_enabled = {OneSlice()};
  }
  Publication Publish(const std::set<std::string>& unhealthy = {}) {
    auto p = publisher.Publish(unhealthy);
    EXPECT_TRUE(p.ok()) << p.error().message;
    return p.ok() ? std::move(p.value()) : Publication{};
  }
  std::vector<model::GpuDevice> Published() {
    if (api.node.annotations[kRegister] == "[]") return {};  // HAMi's decoder refuses it
    auto decoded = codec::DecodeNodeRegister(api.node.annotations[kRegister]);
    EXPECT_TRUE(decoded.ok());
    return decoded.ok() ? decoded.value() : std::vector<model::GpuDevice>{};
  }
  std::vector<std::string> EventReasons() const {
    std::vector<std::string> out;
    for (const auto& e : api.node_events) out.push_back(e.substr(0, e.find(':')));
    return out;
  }

  FakeGpuDriver driver;
  FakeNodeApi api;
  std::map<std::string, int32_t> numa;
  int64_t now = 1000000;
  RegistrationPublisher publisher;
};

TEST(RegistrationPublisherTest, PublishesByIndexPatchesOnlyChangesAndRestoresADeletedAnnotation) {
  Fixture f(MigNode());
  f.driver.gpus = {T4("GPU-t4", 1), H100("GPU-h", 0, true)};
  f.numa["00000000:11:00.0"] = 1;
  Publication first = f.Publish({"GPU-t4"});
  EXPECT_TRUE(first.changed);
  EXPECT_TRUE(first.patched);
  EXPECT_TRUE(first.node_write.ok());
  EXPECT_EQ(first.mig_gpus, std::vector<std::string>{"GPU-h"});
  auto devices = f.Published();
  ASSERT_EQ(devices.size(), 2U);
  EXPECT_EQ(devices[0].uuid, "GPU-h");
  EXPECT_EQ(devices[0].mode, "mig");
  EXPECT_TRUE(devices[0].healthy);
  EXPECT_EQ(devices[1].mode, "hami-core");  // a GPU that cannot run MIG is shared
  EXPECT_EQ(devices[1].numa, 1);
  EXPECT_FALSE(devices[1].healthy);
  EXPECT_TRUE(first.registration.mig_mode_off.empty());
  EXPECT_TRUE(f.api.node_events.empty());

  Publication same = f.Publish({"GPU-t4"});
  EXPECT_FALSE(same.changed);
  EXPECT_FALSE(same.patched);
  f.api.node.annotations.erase(kRegister);  // someone deleted it
  Publication restored = f.Publish({"GPU-t4"});
  EXPECT_FALSE(restored.changed);
  EXPECT_TRUE(restored.patched);
  EXPECT_EQ(f.api.node.annotations[kRegister], first.annotation);
}

TEST(RegistrationPublisherTest, DiscoveryFailureIsAnErrorAndAnUnreadableNodeIsReported) {
  Fixture f(MigNode());
  f.driver.discover_failure = node::DriverError("nvmlDeviceGetCount_v2", 999, "all GPUs: boom");
  auto failed = f.publisher.Publish({});
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message.find("GPU discovery: all GPUs: boom"), std::string::npos);

  struct UnreachableNode : FakeNodeApi {
    agent::ApiResult<model::Node> GetNode() override { return agent::ApiFailure(0, "no answer"); }
  } api;
  FakeGpuDriver driver;
  driver.gpus = {H100("GPU-h", 0, true)};
  driver.problems = {node::DriverError("nvmlDeviceGetName", 15, "GPU index 1: lost")};
  RegistrationPublisher publisher(driver, api, MigNode(), {}, nullptr, [] { return 0; });
  auto p = publisher.Publish({});
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->node_write.ok());
  EXPECT_EQ(p->node_write.message(), "no answer");
  EXPECT_EQ(p->mig_gpus, std::vector<std::string>{"GPU-h"});  // the agent still knows them
  EXPECT_EQ(p->problems, std::vector<std::string>{"GPU index 1: lost"});
}

// Issue 38 G: today's main registered this GPU for HAMi-core sharing without a word.
TEST(RegistrationPublisherTest, MigModeOffIsLeftOutWithOneEventNotSilentlyShared) {
  Fixture f(MigNode());
  f.driver.gpus = {H100("GPU-off", 0, false), H100("GPU-on", 1, true)};
  Publication p = f.Publish();
  auto devices = f.Published();
  ASSERT_EQ(devices.size(), 1U);
  EXPECT_EQ(devices[0].uuid, "GPU-on");
  EXPECT_EQ(p.registration.mig_mode_off,
            (std::vector<node::MigModeOff>{{"GPU-off", 0, false, false}}));
  ASSERT_EQ(f.api.node_events.size(), 1U);
  EXPECT_EQ(f.EventReasons(), std::vector<std::string>{"MigModeOff"});
  EXPECT_NE(f.api.node_events[0].find("GPU GPU-off (index 0) is configured for MIG"),
            std::string::npos)
      << f.api.node_events[0];
  EXPECT_NE(f.api.node_events[0].find("not registered, so no pod is placed on it"),
            std::string::npos);
  EXPECT_NE(f.api.node_events[0].find("nvidia-smi -i 0 -mig 1"), std::string::npos);
  ASSERT_EQ(p.notices.size(), 1U);
  EXPECT_TRUE(p.notices[0].warning);
  EXPECT_TRUE(f.driver.set_mig_mode_calls.empty());  // never without --set-mig-mode

  f.Publish();
  f.Publish();
  EXPECT_EQ(f.api.node_events.size(), 1U);  // once per change, not every pass

  // Turned on by hand: registered as MIG; turned off again: reported again.
  f.driver.Gpu("GPU-off") = H100("GPU-off", 0, true);
  Publication on = f.Publish();
  EXPECT_EQ(on.mig_gpus, (std::vector<std::string>{"GPU-off", "GPU-on"}));
  EXPECT_EQ(f.api.node_events.size(), 1U);
  f.driver.Gpu("GPU-off") = H100("GPU-off", 0, false);
  f.Publish();
  EXPECT_EQ(f.EventReasons(), (std::vector<std::string>{"MigModeOff", "MigModeOff"}));
}

TEST(RegistrationPublisherTest, TheHamiCoreFallbackSharesTheGpuAndStillSaysWhy) {
  Fixture f(MigNode(node::MigFallback::kHamiCore));
  f.driver.gpus = {H100("GPU-off", 0, false)};
  Publication p = f.Publish();
  auto devices = f.Published();
  ASSERT_EQ(devices.size(), 1U);
  EXPECT_EQ(devices[0].mode, "hami-core");
  EXPECT_EQ(devices[0].count, 10);
  EXPECT_TRUE(p.mig_gpus.empty());
  EXPECT_EQ(p.registration.mig_mode_off,
            (std::vector<node::MigModeOff>{{"GPU-off", 0, false, true}}));
  ASSERT_EQ(f.api.node_events.size(), 1U);
  EXPECT_NE(f.api.node_events[0].find("shared with HAMi-core instead (migFallback: hami-core)"),
            std::string::npos)
      << f.api.node_events[0];
}

TEST(RegistrationPublisherTest, SetMigModeEnablesAnIdleGpuAndRegistersItAsMig) {
  Fixture f(MigNode(), /*set_mig_mode=*/true);
  f.driver.gpus = {H100("GPU-off", 0, false)};
  Publication p = f.Publish();
  EXPECT_EQ(f.driver.set_mig_mode_calls, std::vector<std::string>{"GPU-off"});
  EXPECT_EQ(p.enable_tries, std::vector<MigModeEnableResult>{MigModeEnableResult::kEnabled});
  EXPECT_EQ(p.mig_gpus, std::vector<std::string>{"GPU-off"});
  EXPECT_TRUE(p.registration.mig_mode_off.empty());
  auto devices = f.Published();
  ASSERT_EQ(devices.size(), 1U);
  EXPECT_EQ(devices[0].mode, "mig");
  EXPECT_EQ(devices[0].mig_profiles.size(), 1U);  // discovered again after the change
  ASSERT_EQ(f.EventReasons(), std::vector<std::string>{"MigModeEnabled"});
  EXPECT_FALSE(p.notices[0].warning);
  f.Publish();
  EXPECT_EQ(f.driver.set_mig_mode_calls.size(), 1U);
}

TEST(RegistrationPublisherTest, SetMigModeNeverTouchesABusyGpuAndRetriesWithBackOff) {
  Fixture f(MigNode(), /*set_mig_mode=*/true);
  f.driver.gpus = {H100("GPU-busy", 0, false)};
  f.driver.processes["GPU-busy"] = 2;
  Publication p = f.Publish();
  EXPECT_TRUE(f.driver.set_mig_mode_calls.empty());
  EXPECT_EQ(p.enable_tries, std::vector<MigModeEnableResult>{MigModeEnableResult::kBusy});
  EXPECT_TRUE(f.Published().empty());  // left out meanwhile
  EXPECT_EQ(f.EventReasons(), (std::vector<std::string>{"MigModeEnableFailed", "MigModeOff"}));
  EXPECT_NE(f.api.node_events[0].find("is used by 2 compute process(es)"), std::string::npos)
      << f.api.node_events[0];

  // Not tried again before its back-off (1 s, then 2 s, ...), and not reported again.
  EXPECT_TRUE(f.Publish().enable_tries.empty());
  f.now += 1000;
  EXPECT_EQ(f.Publish().enable_tries.size(), 1U);
  f.now += 1000;
  EXPECT_TRUE(f.Publish().enable_tries.empty());
  EXPECT_EQ(f.api.node_events.size(), 2U);

  // Idle now: enabled at its next turn.
  f.driver.processes.clear();
  f.now += 2000;
  Publication enabled = f.Publish();
  EXPECT_EQ(enabled.enable_tries, std::vector<MigModeEnableResult>{MigModeEnableResult::kEnabled});
  EXPECT_EQ(enabled.mig_gpus, std::vector<std::string>{"GPU-busy"});
}

TEST(RegistrationPublisherTest, SetMigModeReportsAPendingResetAndDoesNotAskAgain) {
  Fixture f(MigNode(), /*set_mig_mode=*/true);
  f.driver.gpus = {H100("GPU-a", 0, false)};
  f.driver.set_mig_mode_needs_reset = true;  // Ampere
  Publication p = f.Publish();
  EXPECT_EQ(p.enable_tries, std::vector<MigModeEnableResult>{MigModeEnableResult::kResetPending});
  EXPECT_EQ(p.registration.mig_mode_off,
            (std::vector<node::MigModeOff>{{"GPU-a", 0, true, false}}));
  EXPECT_TRUE(f.Published().empty());
  ASSERT_EQ(f.EventReasons(), std::vector<std::string>{"MigModeResetPending"});
  EXPECT_NE(f.api.node_events[0].find("the driver said: GPU requires reset (NVML code 16)"),
            std::string::npos)
      << f.api.node_events[0];
  EXPECT_NE(f.api.node_events[0].find("nvidia-smi -r -i 0"), std::string::npos);
  f.now += 600000;
  f.Publish();
  EXPECT_EQ(f.driver.set_mig_mode_calls.size(), 1U);  // only a reset applies it
  EXPECT_EQ(f.api.node_events.size(), 1U);

  // After the reset (pending mode applied): registered as MIG, nothing more reported.
  f.driver.Gpu("GPU-a") = H100("GPU-a", 0, true);
  EXPECT_EQ(f.Publish().mig_gpus, std::vector<std::string>{"GPU-a"});
  EXPECT_EQ(f.api.node_events.size(), 1U);
}

TEST(RegistrationPublisherTest, AMigModeAlreadyPendingIsReportedWithoutATry) {
  Fixture f(MigNode(), /*set_mig_mode=*/true);
  node::DriverGpu gpu = H100("GPU-a", 0, false);
  gpu.mig_pending_enabled = true;  // someone ran nvidia-smi -mig 1 before
  f.driver.gpus = {gpu};
  Publication p = f.Publish();
  EXPECT_TRUE(p.enable_tries.empty());
  EXPECT_TRUE(f.driver.set_mig_mode_calls.empty());
  EXPECT_EQ(f.EventReasons(), std::vector<std::string>{"MigModeResetPending"});
}

TEST(RegistrationPublisherTest, ARefusedSetMigModeIsReportedOnceWithTheDriversError) {
  Fixture f(MigNode(), /*set_mig_mode=*/true);
  f.driver.gpus = {H100("GPU-h", 0, false)};
  f.driver.set_mig_mode_failure = node::DriverError(
      "nvmlDeviceSetMigMode", node::kDriverNoPermission,
      "nvmlDeviceSetMigMode (GPU-h: enabling MIG): Insufficient Permissions (NVML code 4)");
  Publication p = f.Publish();
  EXPECT_EQ(p.enable_tries, std::vector<MigModeEnableResult>{MigModeEnableResult::kFailed});
  ASSERT_EQ(f.EventReasons(), (std::vector<std::string>{"MigModeEnableFailed", "MigModeOff"}));
  EXPECT_NE(f.api.node_events[0].find("Insufficient Permissions"), std::string::npos);
  EXPECT_NE(f.api.node_events[0].find("the agent needs root"), std::string::npos);
  for (int i = 0; i < 5; ++i) {
    f.now += 400000;
    f.Publish();
  }
  EXPECT_EQ(f.driver.set_mig_mode_calls.size(), 6U);  // retried, on its back-off
  EXPECT_EQ(f.api.node_events.size(), 2U);            // reported once
}

TEST(RegistrationPublisherTest, ANonMigNodeNeverReportsOrChangesMigMode) {
  Fixture f(node::NodeDeviceConfig{}, /*set_mig_mode=*/true);
  f.driver.gpus = {H100("GPU-off", 0, false)};
  Publication p = f.Publish();
  EXPECT_TRUE(p.registration.mig_mode_off.empty());
  EXPECT_TRUE(f.driver.set_mig_mode_calls.empty());
  EXPECT_TRUE(f.api.node_events.empty());
  ASSERT_EQ(f.Published().size(), 1U);
  EXPECT_EQ(f.Published()[0].mode, "hami-core");
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

const std::string kUsageKey(model::annotations::kGpuUsage);

codec::NodeGpuUsage Usage(int64_t time, uint32_t util) {
  codec::NodeGpuUsage u;
  u.time_s = time;
  u.gpus.push_back({"GPU-t4", {util, 1000U}, {}});
  return u;
}

// tessera.io/gpu-usage rides on the registration's write; alone, it is written only when it
// changed and at most once per refresh (5 min by default), so 5 000 nodes add at most ~17
// writes a second.
TEST(RegistrationPublisherTest, UsageRidesOnTheRegistrationAndIsRefreshedAtMostOncePerPeriod) {
  Fixture f(node::NodeDeviceConfig{});
  f.driver.gpus = {T4("GPU-t4", 0)};
  f.publisher.SetUsage(Usage(100, 37));
  Publication first = f.Publish();
  EXPECT_TRUE(first.patched);
  EXPECT_TRUE(first.usage_patched);
  EXPECT_EQ(f.api.node_patches, 1);  // one write for both
  EXPECT_EQ(f.api.node.annotations[kUsageKey], "100;GPU-t4=37,1000");

  // The same measurements later: nothing to write.
  f.now += 600000;
  f.publisher.SetUsage(Usage(700, 37));
  EXPECT_FALSE(f.Publish().usage_patched);
  EXPECT_EQ(f.api.node_patches, 1);

  // A change is written once the refresh since the last write has passed, not before.
  f.publisher.SetUsage(Usage(710, 80));
  Publication refreshed = f.Publish();
  EXPECT_FALSE(refreshed.patched);
  EXPECT_TRUE(refreshed.usage_patched);
  EXPECT_EQ(f.api.node_patches, 2);
  EXPECT_EQ(f.api.node.annotations[kUsageKey], "710;GPU-t4=80,1000");
  f.now += 299000;
  f.publisher.SetUsage(Usage(1009, 10));
  EXPECT_FALSE(f.Publish().usage_patched);
  EXPECT_EQ(f.api.node_patches, 2);
  f.now += 1000;
  EXPECT_TRUE(f.Publish().usage_patched);
  EXPECT_EQ(f.api.node_patches, 3);

  // A registration change carries the latest usage at once, whatever the refresh says.
  f.publisher.SetUsage(Usage(1011, 55));
  f.driver.gpus = {T4("GPU-t4", 0), T4("GPU-t4b", 1)};
  Publication changed = f.Publish();
  EXPECT_TRUE(changed.patched);
  EXPECT_TRUE(changed.usage_patched);
  EXPECT_EQ(f.api.node_patches, 4);
  EXPECT_EQ(f.api.node.annotations[kUsageKey], "1011;GPU-t4=55,1000");
}

TEST(RegistrationPublisherTest, WithoutARefreshUsageIsWrittenOnlyWithTheRegistration) {
  FakeGpuDriver driver;
  FakeNodeApi api;
  int64_t now = 0;
  agent::PublisherOptions options;
  options.usage_refresh_ms = 0;
  RegistrationPublisher publisher(
      driver, api, node::NodeDeviceConfig{}, options, [](const std::string&) { return 0; },
      [&] { return now; });
  driver.gpus = {T4("GPU-t4", 0)};
  ASSERT_TRUE(publisher.Publish({}).ok());  // no usage read yet: the registration alone
  EXPECT_EQ(api.node.annotations.count(kUsageKey), 0U);
  publisher.SetUsage(Usage(5, 90));
  now += 3600000;
  auto p = publisher.Publish({});
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p.value().usage_patched);
  EXPECT_EQ(api.node_patches, 1);
}

// An API server that refuses the usage key (an admission policy older than the agent).
class RefusingUsageApi : public FakeNodeApi {
 public:
  agent::ApiResult<model::Node> PatchNode(const agent::AnnotationPatch& patch,
                                          const std::string& resource_version) override {
    if (patch.count(kUsageKey) > 0) {
      ++refused;
      return agent::ApiFailure(403, "denied by the agent's admission policy");
    }
    return FakeNodeApi::PatchNode(patch, resource_version);
  }
  int refused = 0;
};

TEST(RegistrationPublisherTest, ARefusedUsageNeverKeepsTheRegistrationFromBeingWritten) {
  FakeGpuDriver driver;
  RefusingUsageApi api;
  int64_t now = 0;
  RegistrationPublisher publisher(
      driver, api, node::NodeDeviceConfig{}, agent::PublisherOptions{},
      [](const std::string&) { return 0; }, [&] { return now; });
  driver.gpus = {T4("GPU-t4", 0)};
  publisher.SetUsage(Usage(5, 90));
  auto first = publisher.Publish({});
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first.value().node_write.ok()) << first.value().node_write.message();
  EXPECT_TRUE(first.value().patched);
  EXPECT_FALSE(first.value().usage_patched);
  EXPECT_NE(first.value().usage_refused.find("refused"), std::string::npos);
  EXPECT_EQ(api.node.annotations.count(kRegister), 1U);
  EXPECT_EQ(api.refused, 1);
  // Never tried again: a registration change is written alone, said nothing more.
  publisher.SetUsage(Usage(6, 10));
  now += 3600000;
  driver.gpus = {T4("GPU-t4", 0), T4("GPU-t4b", 1)};
  auto second = publisher.Publish({});
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second.value().patched);
  EXPECT_TRUE(second.value().usage_refused.empty());
  EXPECT_EQ(api.refused, 1);
}

TEST(RegistrationPublisherTest, TheUsageAnnotationListsGpusInOrderAndKeepsUnknowns) {
  node::UsageReading r;
  node::DriverGpuUsage g;
  g.uuid = "GPU-mig";
  g.usage = {std::nullopt, 9000U, 40960U};
  node::DriverMigUsage m;
  m.placement = {4, 4};
  m.usage = {std::nullopt, 9000U, 19968U};
  g.mig.push_back(m);
  r.gpus.push_back(g);
  EXPECT_EQ(codec::EncodeGpuUsage(agent::UsageAnnotation(r, 42)), "42;GPU-mig=-,9000|4:-,9000");
}

}  // namespace
}  // namespace tessera
