#include "core/node/node_config.h"

#include <gtest/gtest.h>

#include "core/config/config_codec.h"
#include "core/node/device_plugin.h"

namespace tessera::node {
namespace {

TEST(NodeConfigTest, TheNodesEntriesOverrideTheDeviceConfigInOrder) {
  config::NvidiaConfig nvidia;
  nvidia.device_split_count = 10;
  nvidia.resource_count_name = "example.com/gpu";
  auto json = codec::Json::parse(R"({"nodeconfig":[
      {"name":"n1","operatingmode":"mig","devicesplitcount":4},
      {"name":"n2","operatingmode":"mps"},
      {"name":"n1","devicememoryscaling":1.5,"filterdevices":{"uuid":["GPU-x"],"index":[3]},
       "enablegetpreferredallocation":false}]})");
  auto c = ApplyNodeConfig(FromDeviceConfig(nvidia), &json, "n1");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->operating_mode, "mig");
  EXPECT_EQ(c->device_split_count, 4);
  EXPECT_EQ(c->device_memory_scaling, 1.5);
  EXPECT_EQ(c->filter_uuids, (std::set<std::string>{"GPU-x"}));
  EXPECT_EQ(c->filter_indexes, (std::set<uint32_t>{3}));
  EXPECT_FALSE(c->preferred_allocation);
  EXPECT_EQ(c->resource_count_name, "example.com/gpu");
  auto other = ApplyNodeConfig(FromDeviceConfig(nvidia), nullptr, "n3");
  EXPECT_EQ(other->operating_mode, "hami-core");  // no file: HAMi's default, not ""
}

// tessera's migFallback (issue 38 G): "none" unless the device config or the node's entry says
// "hami-core"; anything else is an error naming the field.
TEST(NodeConfigTest, MigFallbackIsNoneUnlessConfiguredPerClusterOrPerNode) {
  config::NvidiaConfig nvidia;
  EXPECT_EQ(FromDeviceConfig(nvidia).mig_fallback, MigFallback::kNone);
  nvidia.mig_fallback = "hami-core";
  EXPECT_EQ(FromDeviceConfig(nvidia).mig_fallback, MigFallback::kHamiCore);
  auto json = codec::Json::parse(R"({"nodeconfig":[{"name":"n1","migfallback":"none"}]})");
  auto c = ApplyNodeConfig(FromDeviceConfig(nvidia), &json, "n1");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->mig_fallback, MigFallback::kNone);
  json = codec::Json::parse(R"({"nodeconfig":[{"name":"n1","migfallback":"shared"}]})");
  auto bad = ApplyNodeConfig({}, &json, "n1");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "node config.nodeconfig[0].migfallback: \"shared\" is not one of none, hami-core");
}

// libCudaLogLevel was read from config.json only: device-config.yaml's (HAMi's chart sets
// `libCudaLogLevel: 1`, a number in YAML) never reached the containers' LIBCUDA_LOG_LEVEL.
TEST(NodeConfigTest, LibCudaLogLevelReachesSharedContainers) {
  auto decoded =
      config::DecodeSchedulerConfig(codec::Json::parse(R"({"nvidia":{"libCudaLogLevel": 1}})"));
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  auto base = FromDeviceConfig(decoded->nvidia);
  EXPECT_EQ(base.lib_cuda_log_level, "1");
  HamiCoreOptions options;
  options.lib_cuda_log_level = base.lib_cuda_log_level;
  const codec::ContainerDevices devices = {{"GPU-a", "NVIDIA", 1000, 10}};
  auto r = SharedGpuResponse(devices, options, {}, "uid", "main", false, "cache");
  EXPECT_EQ(r.envs.at("LIBCUDA_LOG_LEVEL"), "1");
  // config.json's entry for the node overrides it, as a string or a number.
  auto json = codec::Json::parse(R"({"nodeconfig":[{"name":"n1","libcudaloglevel":"4"}]})");
  EXPECT_EQ(ApplyNodeConfig(base, &json, "n1")->lib_cuda_log_level, "4");
  json = codec::Json::parse(R"({"nodeconfig":[{"name":"n1","libcudaloglevel":0}]})");
  EXPECT_EQ(ApplyNodeConfig(base, &json, "n1")->lib_cuda_log_level, "0");
  // Unset: no variable at all.
  options.lib_cuda_log_level.clear();
  r = SharedGpuResponse(devices, options, {}, "uid", "main", false, "cache");
  EXPECT_EQ(r.envs.count("LIBCUDA_LOG_LEVEL"), 0U);
}

TEST(NodeConfigTest, BadValuesNameTheField) {
  auto json = codec::Json::parse(R"({"nodeconfig":[{"name":"n1","devicesplitcount":"ten"}]})");
  auto c = ApplyNodeConfig({}, &json, "n1");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("node config.nodeconfig[0].devicesplitcount"), std::string::npos)
      << c.error().message;
  json = codec::Json::parse(R"({"nodeconfig":[{"name":"n1","devicecorescaling":-1}]})");
  EXPECT_FALSE(ApplyNodeConfig({}, &json, "n1").ok());
}

}  // namespace
}  // namespace tessera::node
