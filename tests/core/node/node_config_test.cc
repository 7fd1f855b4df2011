#include "core/node/node_config.h"

#include <gtest/gtest.h>

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
