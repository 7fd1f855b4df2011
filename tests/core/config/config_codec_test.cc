#include "core/config/config_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/config/scheduler_config.h"

namespace tessera::config {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::IsNull;
using ::testing::Pointee;

using codec::Json;

// --- DecodeSchedulerConfig --------------------------------------------------------------------

TEST(DecodeSchedulerConfigTest, NullDocumentGivesTheDefaults) {
  auto config = DecodeSchedulerConfig(Json());
  ASSERT_TRUE(config.ok()) << config.error().message;
  const NvidiaConfig& n = config->nvidia;
  EXPECT_EQ(n.resource_count_name, "nvidia.com/gpu");
  EXPECT_EQ(n.resource_memory_name, "nvidia.com/gpumem");
  EXPECT_EQ(n.resource_memory_percentage_name, "nvidia.com/gpumem-percentage");
  EXPECT_EQ(n.resource_core_name, "nvidia.com/gpucores");
  EXPECT_EQ(n.resource_priority_name, "nvidia.com/priority");
  EXPECT_FALSE(n.overwrite_env);
  EXPECT_EQ(n.default_memory, 0);
  EXPECT_EQ(n.default_cores, 0);
  EXPECT_EQ(n.default_gpu_num, 1);
  EXPECT_EQ(n.memory_factor, 1);
  EXPECT_EQ(n.gpu_core_policy, "default");
  EXPECT_EQ(n.device_split_count, 10);
  EXPECT_DOUBLE_EQ(n.device_memory_scaling, 1.0);
  EXPECT_DOUBLE_EQ(n.device_core_scaling, 1.0);
  EXPECT_THAT(n.mig_profile_allowlist, IsEmpty());
  EXPECT_THAT(config->warnings, IsEmpty());
}

TEST(DecodeSchedulerConfigTest, ReadsTheChartDefaultNvidiaSection) {
  auto config = DecodeSchedulerConfig(Json::parse(R"({"nvidia": {
    "resourceCountName": "hami.io/gpu",
    "resourceMemoryName": "hami.io/gpumem",
    "resourceMemoryPercentageName": "hami.io/gpumem-percentage",
    "resourceCoreName": "hami.io/gpucores",
    "resourcePriorityName": "hami.io/priority",
    "overwriteEnv": true,
    "defaultMemory": 1024,
    "defaultCores": 20,
    "defaultGPUNum": 2,
    "preConfiguredDeviceMemory": 512,
    "memoryFactor": 4,
    "deviceSplitCount": 5,
    "deviceMemoryScaling": 1.5,
    "deviceCoreScaling": 2,
    "enableNumaTopology": true,
    "disableCoreLimit": true,
    "gpuCorePolicy": "force",
    "libCudaLogLevel": 1,
    "runtimeClassName": "nvidia",
    "migProfileAllowlist": [
      {"models": ["A100-SXM4-40GB", "A100-PCIE-40GB"],
       "profiles": ["1g.5gb", "2g.10gb", "3g.20gb", "7g.40gb"]}]
  }})"));
  ASSERT_TRUE(config.ok()) << config.error().message;
  const NvidiaConfig& n = config->nvidia;
  EXPECT_EQ(n.resource_count_name, "hami.io/gpu");
  EXPECT_EQ(n.resource_memory_name, "hami.io/gpumem");
  EXPECT_EQ(n.resource_memory_percentage_name, "hami.io/gpumem-percentage");
  EXPECT_EQ(n.resource_core_name, "hami.io/gpucores");
  EXPECT_EQ(n.resource_priority_name, "hami.io/priority");
  EXPECT_TRUE(n.overwrite_env);
  EXPECT_EQ(n.default_memory, 1024);
  EXPECT_EQ(n.default_cores, 20);
  EXPECT_EQ(n.default_gpu_num, 2);
  EXPECT_EQ(n.pre_configured_device_memory, 512);
  EXPECT_EQ(n.memory_factor, 4);
  EXPECT_EQ(n.device_split_count, 5);
  EXPECT_DOUBLE_EQ(n.device_memory_scaling, 1.5);
  EXPECT_DOUBLE_EQ(n.device_core_scaling, 2.0);
  EXPECT_TRUE(n.enable_numa_topology);
  EXPECT_TRUE(n.disable_core_limit);
  EXPECT_EQ(n.gpu_core_policy, "force");
  EXPECT_EQ(n.runtime_class_name, "nvidia");
  ASSERT_EQ(n.mig_profile_allowlist.size(), 1u);
  EXPECT_THAT(n.mig_profile_allowlist[0].models, ElementsAre("A100-SXM4-40GB", "A100-PCIE-40GB"));
  EXPECT_THAT(n.mig_profile_allowlist[0].profiles,
              ElementsAre("1g.5gb", "2g.10gb", "3g.20gb", "7g.40gb"));
  EXPECT_THAT(config->warnings, IsEmpty());
}

TEST(DecodeSchedulerConfigTest, MatchesNvidiaKeysCaseInsensitively) {
  auto config = DecodeSchedulerConfig(
      Json::parse(R"({"nvidia": {"DEFAULTGPUNUM": 3, "resourcecountname": "x/gpu"}})"));
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->nvidia.default_gpu_num, 3);
  EXPECT_EQ(config->nvidia.resource_count_name, "x/gpu");
  EXPECT_THAT(config->warnings, IsEmpty());
}

TEST(DecodeSchedulerConfigTest, ReadsAnNvidiaSectionSpelledInAnotherCaseWithoutAWarning) {
  auto config = DecodeSchedulerConfig(Json::parse(R"({"NVIDIA": {"defaultGPUNum": 3}})"));
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->nvidia.default_gpu_num, 3);
  EXPECT_THAT(config->warnings, IsEmpty());
}

TEST(DecodeSchedulerConfigTest, EmptyGpuCorePolicyMeansDefault) {
  auto config = DecodeSchedulerConfig(Json::parse(R"({"nvidia": {"gpuCorePolicy": ""}})"));
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->nvidia.gpu_core_policy, "default");
}

TEST(DecodeSchedulerConfigTest, OtherVendorSectionsAreIgnoredWithAWarning) {
  auto config = DecodeSchedulerConfig(Json::parse(
      R"({"nvidia": {}, "hygon": {"resourceCountName": "hygon.com/dcunum"}, "iluvatars": []})"));
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_THAT(config->warnings,
              ElementsAre("ignoring device-config section \"hygon\": tessera schedules NVIDIA "
                          "GPUs only",
                          "ignoring device-config section \"iluvatars\": tessera schedules NVIDIA "
                          "GPUs only"));
}

TEST(DecodeSchedulerConfigTest, UnknownSectionsAreIgnoredWithAWarning) {
  auto config = DecodeSchedulerConfig(Json::parse(R"({"nvidai": {"defaultGPUNum": 3}})"));
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->nvidia.default_gpu_num, 1);
  EXPECT_THAT(config->warnings, ElementsAre("ignoring unknown device-config section \"nvidai\""));
}

TEST(DecodeSchedulerConfigTest, UnknownNvidiaKeysAreIgnoredWithAWarning) {
  auto config = DecodeSchedulerConfig(
      Json::parse(R"({"nvidia": {"defaultGpuNumber": 3, "knownMigGeometries": []}})"));
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->nvidia.default_gpu_num, 1);
  EXPECT_THAT(config->warnings, ElementsAre("ignoring unknown key nvidia.defaultGpuNumber",
                                            "ignoring unknown key nvidia.knownMigGeometries"));
}

TEST(DecodeSchedulerConfigTest, DocumentThatIsNotAMappingIsAnError) {
  auto config = DecodeSchedulerConfig(Json::parse("[1]"));
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message, "device config: expected a mapping with an `nvidia` section");
}

TEST(DecodeSchedulerConfigTest, WrongTypeOrValueIsAnErrorNamingTheField) {
  struct Case {
    const char* nvidia;
    const char* want;  // after "device config: "
  };
  const std::vector<Case> cases = {
      {"[]", "nvidia: expected a mapping"},
      {R"({"resourceCountName": 1})", "nvidia.resourceCountName: expected a string, got 1"},
      {R"({"resourceMemoryName": []})", "nvidia.resourceMemoryName: expected a string, got []"},
      {R"({"resourceMemoryPercentageName": true})",
       "nvidia.resourceMemoryPercentageName: expected a string, got true"},
      {R"({"resourceCoreName": 1})", "nvidia.resourceCoreName: expected a string, got 1"},
      {R"({"resourcePriorityName": 1})", "nvidia.resourcePriorityName: expected a string, got 1"},
      {R"({"overwriteEnv": "false"})",
       "nvidia.overwriteEnv: expected true or false, got \"false\""},
      {R"({"defaultMemory": "1Gi"})", "nvidia.defaultMemory: expected a number, got \"1Gi\""},
      {R"({"defaultMemory": -1})", "nvidia.defaultMemory: -1 is out of range [0, 2147483647]"},
      {R"({"defaultCores": 101})", "nvidia.defaultCores: 101 is out of range [0, 100]"},
      {R"({"defaultGPUNum": 1.5})", "nvidia.defaultGPUNum: expected a whole number, got 1.5"},
      {R"({"memoryFactor": -2})", "nvidia.memoryFactor: -2 is out of range [0, 2147483647]"},
      {R"({"disableCoreLimit": 1})", "nvidia.disableCoreLimit: expected true or false, got 1"},
      {R"({"gpuCorePolicy": 1})", "nvidia.gpuCorePolicy: expected a string, got 1"},
      {R"({"gpuCorePolicy": "strict"})",
       "nvidia.gpuCorePolicy: \"strict\" is not one of default, force, disable"},
      {R"({"runtimeClassName": false})", "nvidia.runtimeClassName: expected a string, got false"},
      {R"({"deviceSplitCount": -1})",
       "nvidia.deviceSplitCount: -1 is out of range [0, 2147483647]"},
      {R"({"deviceMemoryScaling": "1"})",
       "nvidia.deviceMemoryScaling: expected a number, got \"1\""},
      {R"({"deviceMemoryScaling": 0})", "nvidia.deviceMemoryScaling: must be positive"},
      {R"({"deviceCoreScaling": -1.5})", "nvidia.deviceCoreScaling: must be positive"},
      {R"({"preConfiguredDeviceMemory": "x"})",
       "nvidia.preConfiguredDeviceMemory: expected a number, got \"x\""},
      {R"({"enableNumaTopology": "true"})",
       "nvidia.enableNumaTopology: expected true or false, got \"true\""},
      {R"({"migFallback": "share"})",
       "nvidia.migFallback: \"share\" is not one of none, hami-core"},
      {R"({"migFallback": true})", "nvidia.migFallback: expected a string, got true"},
      {R"({"migProfileAllowlist": {}})", "nvidia.migProfileAllowlist: expected a list"},
      {R"({"migProfileAllowlist": ["A100"]})", "nvidia.migProfileAllowlist[0]: expected a mapping"},
      {R"({"migProfileAllowlist": [{"models": "A100", "profiles": ["1g.5gb"]}]})",
       "nvidia.migProfileAllowlist[0].models: expected a list of strings"},
      {R"({"migProfileAllowlist": [{"models": ["A100"], "profiles": ["1g.5gb", 7]}]})",
       "nvidia.migProfileAllowlist[0].profiles[1]: expected a string, got 7"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.nvidia);
    auto config =
        DecodeSchedulerConfig(Json::parse(std::string(R"({"nvidia": )") + c.nvidia + "}"));
    ASSERT_FALSE(config.ok());
    EXPECT_EQ(config.error().message, std::string("device config: ") + c.want);
  }
}

TEST(DecodeSchedulerConfigTest, InvalidAllowlistIsAnErrorWithTheHamiPrefix) {
  auto config = DecodeSchedulerConfig(Json::parse(
      R"({"nvidia": {"migProfileAllowlist": [{"models": ["A30"], "profiles": ["5gb"]}]}})"));
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().message,
            "device config: invalid MIG profile allowlist: nvidia.migProfileAllowlist[0]: profile "
            "\"5gb\" is not of the form <N>g.<size> (e.g. 1g.5gb)");
}

// --- ValidateMigAllowlist ---------------------------------------------------------------------

TEST(ValidateMigAllowlistTest, AcceptsTheChartDefaultProfiles) {
  std::vector<MigAllowlistEntry> allowlist = {
      {{"A30"}, {"1g.6gb", "2g.12gb", "4g.24gb"}},
      {{"A100-SXM4-40GB", "A100-40GB-PCIe"}, {"1g.5gb", "2g.10gb", "3g.20gb", "7g.40gb"}},
      {{"H200"}, {"1g.18gb", "2g.35gb", "3g.71gb", "7g.141gb"}},
      {{"RTX PRO 6000 Blackwell Server Edition"}, {"1g.24gb", "2g.48gb", "4g.96gb"}},
      {{"A100-80GB"}, {"1g.10gb+me", "10g.1"}},
  };
  Status s = ValidateMigAllowlist(allowlist);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(ValidateMigAllowlistTest, EmptyAllowlistIsValid) {
  EXPECT_TRUE(ValidateMigAllowlist({}).ok());
}

TEST(ValidateMigAllowlistTest, EntryWithoutModelsIsAnError) {
  Status s = ValidateMigAllowlist({{{"A30"}, {"1g.6gb"}}, {{}, {"1g.6gb"}}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "invalid MIG profile allowlist: nvidia.migProfileAllowlist[1].models is empty");
}

TEST(ValidateMigAllowlistTest, EntryWithoutProfilesIsAnError) {
  Status s = ValidateMigAllowlist({{{"A30"}, {}}});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "invalid MIG profile allowlist: nvidia.migProfileAllowlist[0].profiles is empty");
}

TEST(ValidateMigAllowlistTest, ProfileNotOfTheFormNgDotSizeIsAnError) {
  for (const char* profile : {"5gb", "g.5gb", ".5gb", "1x.5gb", "1g", "", "1G.5gb"}) {
    SCOPED_TRACE(profile);
    Status s = ValidateMigAllowlist({{{"A100"}, {"1g.5gb", profile}}});
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.message(), std::string("invalid MIG profile allowlist: "
                                       "nvidia.migProfileAllowlist[0]: profile \"") +
                               profile + "\" is not of the form <N>g.<size> (e.g. 1g.5gb)");
  }
}

// --- NvidiaConfig::AllowedProfiles ------------------------------------------------------------

NvidiaConfig ConfigWithAllowlist() {
  NvidiaConfig c;
  c.mig_profile_allowlist = {
      {{"A100-SXM4-40GB", "A100-PCIE-40GB"}, {"1g.5gb", "7g.40gb"}},
      {{"A100"}, {"1g.10gb"}},
      {{"H100"}, {"1g.10gb", "7g.80gb"}},
  };
  return c;
}

TEST(AllowedProfilesTest, MatchesAModelThatIsASubstringOfTheGpuType) {
  NvidiaConfig c = ConfigWithAllowlist();
  EXPECT_THAT(c.AllowedProfiles("NVIDIA H100 80GB HBM3"),
              Pointee(ElementsAre("1g.10gb", "7g.80gb")));
}

TEST(AllowedProfilesTest, FirstMatchingEntryWins) {
  NvidiaConfig c = ConfigWithAllowlist();
  EXPECT_THAT(c.AllowedProfiles("NVIDIA A100-SXM4-40GB"),
              Pointee(ElementsAre("1g.5gb", "7g.40gb")));
  EXPECT_THAT(c.AllowedProfiles("NVIDIA A100-SXM4-80GB"), Pointee(ElementsAre("1g.10gb")));
}

TEST(AllowedProfilesTest, IgnoresCase) {
  NvidiaConfig c = ConfigWithAllowlist();
  EXPECT_THAT(c.AllowedProfiles("nvidia a100-pcie-40gb"),
              Pointee(ElementsAre("1g.5gb", "7g.40gb")));
}

TEST(AllowedProfilesTest, NoMatchingEntryIsNull) {
  NvidiaConfig c = ConfigWithAllowlist();
  EXPECT_THAT(c.AllowedProfiles("NVIDIA A30"), IsNull());
  EXPECT_THAT(NvidiaConfig().AllowedProfiles("NVIDIA A100-SXM4-40GB"), IsNull());
}

TEST(AllowedProfilesTest, EmptyModelMatchesNothing) {
  NvidiaConfig c;
  c.mig_profile_allowlist = {{{""}, {"1g.5gb"}}};
  EXPECT_THAT(c.AllowedProfiles("NVIDIA A100"), IsNull());
}

}  // namespace
}  // namespace tessera::config
