// The agent's GPU usage metrics: one series per GPU and MIG device for each value NVML reported,
// labelled like the scheduler's (node, device_uuid, device_index, device_type; MIG: mig_uuid,
// profile, placement), none for an unknown value, and none left for a device gone.

#include "agent_runtime/agent_metrics.h"
#include "support/usage_reading.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <string>

namespace tessera::agent_runtime {
namespace {

std::string Exposition(AgentMetrics& metrics) {
  return prometheus::TextSerializer().Serialize(metrics.registry().Collect());
}

node::UsageReading Reading() { return testing::SampleUsageReading(std::nullopt); }

TEST(AgentMetricsTest, ExportsUtilisationAndMemoryPerGpuAndMigDevice) {
  AgentMetrics metrics;
  metrics.GpuUsage("node-a", Reading(), 1767225600);
  const std::string text = Exposition(metrics);
  const std::string t4 =
      R"({device_index="0",device_type="Tesla T4",device_uuid="GPU-t4",node="node-a"})";
  EXPECT_NE(text.find("tessera_agent_gpu_utilization_percent" + t4 + " 37"), std::string::npos)
      << text;
  EXPECT_NE(text.find("tessera_agent_gpu_memory_used_bytes" + t4 + " 12582912000"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tessera_agent_gpu_memory_total_bytes" + t4 + " 16106127360"),
            std::string::npos)
      << text;
  const std::string mig =
      R"({device_index="1",device_type="NVIDIA A100-SXM4-40GB",device_uuid="GPU-mig",)"
      R"(mig_uuid="MIG-1",node="node-a",placement_size="4",placement_start="4",profile="3g.20gb"})";
  EXPECT_NE(text.find("tessera_agent_mig_instance_memory_used_bytes" + mig + " 8388608000"),
            std::string::npos)
      << text;
  // Unknown is no series, never 0: neither the MIG GPU nor its instance reports utilisation.
  EXPECT_EQ(text.find("tessera_agent_gpu_utilization_percent{device_index=\"1\""),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("tessera_agent_mig_instance_utilization_percent{"), std::string::npos)
      << text;
  EXPECT_NE(text.find("tessera_agent_usage_last_read_timestamp_seconds 1767225600"),
            std::string::npos)
      << text;
}

TEST(AgentMetricsTest, SeriesOfDevicesGoneAreRemovedAndErrorsCounted) {
  AgentMetrics metrics;
  metrics.GpuUsage("node-a", Reading(), 1);
  node::UsageReading fewer = Reading();
  fewer.gpus.pop_back();  // the MIG GPU is gone
  metrics.GpuUsage("node-a", fewer, 2);
  metrics.UsageReadFailed(2);
  const std::string text = Exposition(metrics);
  EXPECT_EQ(text.find("GPU-mig"), std::string::npos) << text;
  EXPECT_NE(text.find("device_uuid=\"GPU-t4\""), std::string::npos) << text;
  EXPECT_NE(text.find("tessera_agent_usage_read_errors_total 2"), std::string::npos) << text;
}

}  // namespace
}  // namespace tessera::agent_runtime
