// `tessera migrate-values`' conversion (issue 40, "HAMi values carry over"): HAMi v2.10's default
// values and a customised file become tessera's chart values, and every key that cannot be
// carried over is listed with its path and why.
#include "adapters/yaml/hami_values_migration.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "adapters/yaml/yaml_json.h"

namespace tessera::adapters {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using OrderedJson = nlohmann::ordered_json;

const std::string kSourceDir = TESSERA_SOURCE_DIR;

std::vector<std::string> Paths(const HamiValuesMigration& m) {
  std::vector<std::string> paths;
  for (const auto& key : m.unmapped) paths.push_back(key.path);
  return paths;
}

std::string ReasonOf(const HamiValuesMigration& m, const std::string& path) {
  for (const auto& key : m.unmapped) {
    if (key.path == path) return key.reason;
  }
  return "(not listed)";
}

HamiValuesMigration MigrateFile(const std::string& relative_path) {
  auto text = ReadFile(kSourceDir + "/" + relative_path);
  EXPECT_TRUE(text.ok()) << text.error().message;
  auto m = MigrateHamiValues(text.ok() ? text.value() : "", relative_path);
  EXPECT_TRUE(m.ok()) << m.error().message;
  return m.ok() ? std::move(m.value()) : HamiValuesMigration{};
}

// Every key the converter writes is one of tessera's chart values (deploy/helm/tessera/values.yaml)
// down to the device configs and free-form maps, whose defaults are empty.
void ExpectTesseraKeys(const OrderedJson& out, const codec::Json& tessera, const std::string& at) {
  for (auto it = out.begin(); it != out.end(); ++it) {
    const std::string path = at.empty() ? it.key() : at + "." + it.key();
    ASSERT_TRUE(tessera.is_object() && tessera.contains(it.key()))
        << path << " is not a value of tessera's chart";
    const auto& known = tessera.at(it.key());
    if (it->is_object() && known.is_object() && !known.empty() && it.key() != "devices") {
      ExpectTesseraKeys(*it, known, path);
    }
  }
}

codec::Json TesseraChartValues() {
  auto text = ReadFile(kSourceDir + "/deploy/helm/tessera/values.yaml");
  EXPECT_TRUE(text.ok()) << text.error().message;
  auto values = ParseYaml(text.ok() ? text.value() : "", "values.yaml");
  EXPECT_TRUE(values.ok()) << values.error().message;
  return values.ok() ? values.value() : codec::Json::object();
}

TEST(HamiValuesMigrationTest, HamiV210DefaultsCarryPoliciesNamesAndPathsAndListTheRest) {
  const auto m = MigrateFile("tests/adapters/yaml/testdata/hami-v2.10.0-values.yaml");
  const auto& v = m.values;
  // HAMi's chart places with binpack/spread and serves plain /metrics on :9395.
  EXPECT_EQ(v["scheduler"]["nodeSchedulerPolicy"], "binpack");
  EXPECT_EQ(v["scheduler"]["gpuSchedulerPolicy"], "spread");
  EXPECT_EQ(v["scheduler"]["metricsPort"], 9395);
  EXPECT_EQ(v["scheduler"]["replicas"], 1);
  EXPECT_EQ(v["scheduler"]["logLevel"], "debug");  // HAMi passes --debug -v=4
  EXPECT_EQ(v["scheduler"]["kubeScheduler"]["verbosity"], 4);
  EXPECT_EQ(v["webhook"]["failurePolicy"], "Ignore");
  EXPECT_EQ(v["devices"]["nvidia"]["resourceCountName"], "nvidia.com/gpu");
  EXPECT_EQ(v["devices"]["nvidia"]["resourceMemoryName"], "nvidia.com/gpumem");
  EXPECT_EQ(v["devices"]["nvidia"]["resourceCoreName"], "nvidia.com/gpucores");
  EXPECT_EQ(v["devices"]["nvidia"]["deviceSplitCount"], 10);
  EXPECT_EQ(v["devices"]["nvidia"]["overwriteEnv"], false);  // HAMi's quoted "false"
  EXPECT_EQ(v["agent"]["devices"]["nvidia"]["libCudaLogLevel"], 1);
  EXPECT_EQ(v["agent"]["hamiCoreDir"], "/usr/local/vgpu");
  EXPECT_EQ(v["agent"]["kubeletDevicePluginDir"], "/var/lib/kubelet/device-plugins");
  // Not carried: the scheduler's name, HAMi's node label for its device plugin, HAMi's example
  // node config entry; tessera's own defaults stay.
  EXPECT_FALSE(v["scheduler"].contains("name"));
  EXPECT_FALSE(v["agent"].contains("nodeSelector"));
  EXPECT_FALSE(v["agent"].contains("nodeConfig"));
  EXPECT_FALSE(v.contains("certificates"));  // HAMi's job makes one; tessera's chart does too
  ExpectTesseraKeys(v, TesseraChartValues(), "");
  // The top level in the order of tessera's values.yaml.
  std::vector<std::string> top;
  for (auto it = v.begin(); it != v.end(); ++it) top.push_back(it.key());
  EXPECT_THAT(top, ElementsAre("image", "scheduler", "webhook", "devices", "agent"));

  const auto paths = Paths(m);
  EXPECT_EQ(paths.size(), 39U) << "docs/migrating-from-hami.md quotes this count";
  EXPECT_TRUE(std::is_sorted(paths.begin(), paths.end()));
  EXPECT_EQ(std::adjacent_find(paths.begin(), paths.end()), paths.end()) << "listed twice";
  EXPECT_THAT(ReasonOf(m, "schedulerName"), HasSubstr("tessera-scheduler"));
  EXPECT_THAT(ReasonOf(m, "devicePlugin.nvidiaNodeSelector"), HasSubstr("tessera.io/agent=true"));
  EXPECT_THAT(ReasonOf(m, "devices.amd"), HasSubstr("NVIDIA GPUs only"));
  EXPECT_THAT(ReasonOf(m, "mluResourceName"), HasSubstr("NVIDIA GPUs only"));
  EXPECT_THAT(ReasonOf(m, "scheduler.kubeScheduler.image"), HasSubstr("no tag"));
  EXPECT_THAT(ReasonOf(m, "scheduler.patch"), HasSubstr("certificate"));
  EXPECT_THAT(ReasonOf(m, "devicePlugin.nodeConfiguration.config: nodeconfig[0]"),
              HasSubstr("your-node-name"));
  for (const char* listed : {"scheduler.service", "scheduler.extender.image", "devicePlugin.image",
                             "devicePlugin.monitor", "global.imageTag"}) {
    EXPECT_THAT(paths, Contains(listed));
  }
  // Features switched off (`enabled: false`), empty values and carried keys are not listed.
  for (const char* quiet :
       {"mockDevicePlugin", "devices.ascend", "devices.iluvatar", "podSecurityPolicy", "prometheus",
        "scheduler.admissionWebhook.customURL", "devicePlugin.gpuOperatorToolkitReady",
        "scheduler.admissionWebhook.namespaceSelector", "global.imageRegistry",
        "scheduler.defaultSchedulerPolicy.nodeSchedulerPolicy", "resourceName",
        "devicePlugin.deviceSplitCount", "scheduler.extender.extraArgs[0]"}) {
    EXPECT_THAT(paths, Not(Contains(quiet)));
  }
}

constexpr const char* kCustomisedHamiValues = R"(
resourceName: example.com/vgpu
resourceMem: example.com/vgpu-memory
resourceCores: example.com/vgpu-cores
schedulerName: gpu-scheduler
global:
  imagePullSecrets: [registry-key]
  gpuHookPath: /opt/hami
scheduler:
  nodeLabelSelector:
    gpu: "on"
    zone: a
  nodeSelector:
    node-role.kubernetes.io/infra: "true"
  defaultSchedulerPolicy:
    nodeSchedulerPolicy: spread
    gpuSchedulerPolicy: topology-aware
  replicas: 3
  nodeLockExpire: 2m
  kubeScheduler:
    image: {registry: mirror.example.com, repository: kube-scheduler, tag: v1.36.3}
    extraNewArgs: [--config=/config/config.yaml, -v=2, --feature-gates=Foo=true]
  extender:
    extraArgs: [-v=2, --kube-qps=20]
    frobnicate: true
  admissionWebhook:
    whitelistNamespaces: [team-a]
    failurePolicy: Fail
  certManager:
    enabled: true
devicePlugin:
  runtimeClassName: nvidia-hami
  libPath: /opt/hami/vgpu
  deviceSplitCount: 4
  disablecorelimit: "true"
  nvidiaNodeSelector:
    accelerator: nvidia
  tolerations:
    - {key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}
  nodeConfiguration:
    config: '{"nodeconfig": [{"name": "gpu-7", "operatingmode": "mig"}]}'
  extraArgs: [-v=5, --fail-on-init-error=false]
device-config:
  content: |
    nvidia:
      defaultMemory: 2000
      deviceSplitCount: 5
      migProfileAllowlist:
        - {models: [A30], profiles: [1g.6gb]}
      knownMigGeometries: []
    cambricon:
      resourceCountName: cambricon.com/vmlu
myCompany:
  costCentre: gpu-42
)";

TEST(HamiValuesMigrationTest, CustomisedValuesCarryNamesPoliciesSelectorsAndListUnknownKeys) {
  auto result = MigrateHamiValues(kCustomisedHamiValues, "custom.yaml");
  ASSERT_TRUE(result.ok()) << result.error().message;
  const auto& m = result.value();
  const auto& v = m.values;
  const auto& nvidia = v["devices"]["nvidia"];
  EXPECT_EQ(nvidia["resourceCountName"], "example.com/vgpu");
  EXPECT_EQ(nvidia["resourceMemoryName"], "example.com/vgpu-memory");
  EXPECT_EQ(nvidia["resourceCoreName"], "example.com/vgpu-cores");
  EXPECT_EQ(v["agent"]["devices"]["nvidia"]["resourceCountName"], "example.com/vgpu");
  // device-config.content replaces HAMi's generated config: its keys win.
  EXPECT_EQ(nvidia["defaultMemory"], 2000);
  EXPECT_EQ(nvidia["deviceSplitCount"], 5);
  EXPECT_EQ(v["agent"]["devices"]["nvidia"]["deviceSplitCount"], 5);
  EXPECT_FALSE(v["agent"]["devices"]["nvidia"].contains("defaultMemory"));  // scheduler side
  EXPECT_EQ(nvidia["migProfileAllowlist"][0]["profiles"][0], "1g.6gb");
  EXPECT_EQ(v["agent"]["devices"]["nvidia"]["disableCoreLimit"], true);

  EXPECT_EQ(v["scheduler"]["nodeSchedulerPolicy"], "spread");
  EXPECT_EQ(v["scheduler"]["gpuSchedulerPolicy"], "topology-aware");
  EXPECT_EQ(v["scheduler"]["replicas"], 3);
  EXPECT_EQ(v["scheduler"]["logLevel"], "info");
  EXPECT_EQ(v["scheduler"]["nodeSelector"]["node-role.kubernetes.io/infra"], "true");
  // In the order HAMi's chart passes them.
  EXPECT_EQ(v["scheduler"]["extraArgs"],
            OrderedJson::array({"--node-label-selector=gpu=on,zone=a", "--kube-qps=20"}));
  EXPECT_EQ(v["scheduler"]["kubeScheduler"]["image"], "mirror.example.com/kube-scheduler:v1.36.3");
  EXPECT_EQ(v["scheduler"]["kubeScheduler"]["verbosity"], 2);
  EXPECT_EQ(v["imagePullSecrets"], OrderedJson::parse(R"([{"name": "registry-key"}])"));
  EXPECT_EQ(v["webhook"]["failurePolicy"], "Fail");
  EXPECT_EQ(v["webhook"]["excludeNamespaces"], OrderedJson::array({"kube-system", "team-a"}));
  EXPECT_EQ(v["certificates"]["mode"], "cert-manager");
  EXPECT_EQ(v["agent"]["runtimeClassName"], "nvidia-hami");
  EXPECT_EQ(v["agent"]["hamiCoreDir"], "/opt/hami/vgpu");
  EXPECT_EQ(v["agent"]["nodeConfig"], OrderedJson::parse(R"([{"name": "gpu-7",
                                                              "operatingmode": "mig"}])"));
  EXPECT_EQ(v["agent"]["tolerations"].size(), 2U);  // tessera's nvidia.com/gpu and HAMi's
  EXPECT_EQ(v["agent"]["tolerations"][1]["key"], "dedicated");
  EXPECT_EQ(v["agent"]["extraArgs"], OrderedJson::array({"--log-level=debug"}));
  EXPECT_FALSE(v["agent"].contains("nodeSelector"));
  ExpectTesseraKeys(v, TesseraChartValues(), "");

  const auto paths = Paths(m);
  EXPECT_THAT(ReasonOf(m, "myCompany.costCentre"), HasSubstr("no tessera equivalent"));
  EXPECT_THAT(ReasonOf(m, "scheduler.extender.frobnicate"), HasSubstr("no tessera equivalent"));
  EXPECT_THAT(ReasonOf(m, "schedulerName"),
              AllOf(HasSubstr("\"gpu-scheduler\""), HasSubstr("scheduler.name")));
  EXPECT_THAT(ReasonOf(m, "devicePlugin.nvidiaNodeSelector"), HasSubstr("agent.nodeSelector"));
  EXPECT_THAT(ReasonOf(m, "devicePlugin.runtimeClassName"), HasSubstr("agent.runtimeClassName"));
  EXPECT_THAT(ReasonOf(m, "scheduler.nodeLockExpire"), HasSubstr("--node-lock-timeout"));
  EXPECT_THAT(ReasonOf(m, "scheduler.kubeScheduler.extraNewArgs[2]"),
              HasSubstr("--feature-gates=Foo=true"));
  EXPECT_THAT(ReasonOf(m, "devicePlugin.extraArgs[1]"), HasSubstr("--fail-on-init-error=false"));
  EXPECT_THAT(ReasonOf(m, "device-config.content: nvidia.knownMigGeometries"),
              HasSubstr("not a key of tessera's device config"));
  EXPECT_THAT(ReasonOf(m, "device-config.content: cambricon"), HasSubstr("NVIDIA GPUs only"));
  // gpuHookPath /opt/hami and libPath /opt/hami/vgpu agree: nothing to say.
  EXPECT_THAT(paths, Not(Contains("global.gpuHookPath")));
  EXPECT_THAT(paths, Not(Contains("scheduler.kubeScheduler.extraNewArgs[0]")));
}

TEST(HamiValuesMigrationTest, AHookPathThatDisagreesWithTheLibraryFolderIsListed) {
  auto m = MigrateHamiValues(
      "global: {gpuHookPath: /usr/local}\n"
      "devicePlugin: {libPath: /data/vgpu}\n",
      "hook.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->values["agent"]["hamiCoreDir"], "/data/vgpu");
  EXPECT_THAT(Paths(*m), ElementsAre("global.gpuHookPath"));
}

TEST(HamiValuesMigrationTest, BadTypesAreListedNotCarried) {
  auto m = MigrateHamiValues(
      "scheduler:\n  overwriteEnv: maybe\n  replicas: 2\n"
      "  metricsBindAddress: localhost\n",
      "types.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_THAT(ReasonOf(*m, "scheduler.overwriteEnv"), HasSubstr("expected true or false"));
  EXPECT_THAT(ReasonOf(*m, "scheduler.metricsBindAddress"), HasSubstr("HOST:PORT"));
  EXPECT_FALSE(m->values.contains("devices"));
  EXPECT_EQ(m->values["scheduler"]["replicas"], 2);
}

TEST(HamiValuesMigrationTest, AnEmptyFileConvertsToNothing) {
  auto m = MigrateHamiValues("# nothing set\n", "empty.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_TRUE(m->values.empty());
  EXPECT_THAT(m->unmapped, IsEmpty());
}

TEST(HamiValuesMigrationTest, BadYamlAndNonMappingsAreErrorsNamingTheFile) {
  auto bad = MigrateHamiValues("scheduler: [1, 2\n", "values.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("values.yaml: invalid YAML at line"));
  auto list = MigrateHamiValues("- a\n- b\n", "list.yaml");
  ASSERT_FALSE(list.ok());
  EXPECT_THAT(list.error().message, HasSubstr("list.yaml: expected a mapping"));
}

TEST(HamiValuesMigrationTest, ValuesYamlReadsBackAsTheSameValues) {
  const auto values = OrderedJson::parse(R"({
    "agent": {"nodeSelector": {"gpu": "on"}, "port": 9394, "enabled": true,
              "nodeConfig": [], "extraArgs": ["--log-level=debug"], "resources": {}},
    "devices": {"nvidia": {"deviceMemoryScaling": 1.5, "defaultGPUNum": "1", "x": null}}
  })");
  const std::string yaml = ValuesYaml(values);
  EXPECT_THAT(yaml, HasSubstr("gpu: \"on\""));
  auto back = ParseYaml(yaml, "emitted");
  ASSERT_TRUE(back.ok()) << back.error().message << "\n" << yaml;
  EXPECT_EQ(back.value(), codec::Json::parse(values.dump())) << yaml;
}

}  // namespace
}  // namespace tessera::adapters
