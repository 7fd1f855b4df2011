// tessera.io/gpu-usage: the agent's GPU usage, round trip and malformed values.

#include "core/codec/gpu_usage.h"

#include <gtest/gtest.h>

#include <string>

namespace tessera::codec {
namespace {

NodeGpuUsage Example() {
  NodeGpuUsage u;
  u.time_s = 1765000000;
  u.gpus.push_back({"GPU-a80", {37U, 12000U}, {}});
  GpuUsage mig;
  mig.uuid = "GPU-mig";
  mig.usage = {std::nullopt, 20000U};
  mig.mig.push_back({0, {std::nullopt, 8000U}});
  mig.mig.push_back({4, {std::nullopt, std::nullopt}});
  u.gpus.push_back(mig);
  u.gpus.push_back({"GPU-idle", {0U, 0U}, {}});
  return u;
}

TEST(GpuUsageCodecTest, RoundTripKeepsUnknownApartFromZero) {
  const NodeGpuUsage u = Example();
  const std::string text = EncodeGpuUsage(u);
  EXPECT_EQ(text, "1765000000;GPU-a80=37,12000;GPU-mig=-,20000|0:-,8000|4:-,-;GPU-idle=0,0");
  auto decoded = DecodeGpuUsage(text);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(decoded.value(), u);
  EXPECT_FALSE(decoded.value().gpus[1].usage.utilization_percent.has_value());
  EXPECT_EQ(decoded.value().gpus[2].usage.utilization_percent, 0U);
}

TEST(GpuUsageCodecTest, ANodeWithoutGpusIsJustTheTime) {
  auto decoded = DecodeGpuUsage("12");
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded.value().time_s, 12);
  EXPECT_TRUE(decoded.value().gpus.empty());
}

TEST(GpuUsageCodecTest, SameMeasurementsIgnoresTheTime) {
  NodeGpuUsage a = Example(), b = Example();
  b.time_s += 60;
  EXPECT_TRUE(SameMeasurements(a, b));
  b.gpus[0].usage.utilization_percent = 38U;
  EXPECT_FALSE(SameMeasurements(a, b));
}

TEST(GpuUsageCodecTest, MalformedValuesAreRejectedWhole) {
  for (const std::string bad : {
           "",                                 // no time
           "soon;GPU-a=1,2",                   // time not a number
           "-5;GPU-a=1,2",                     // negative time
           "10;GPU-a",                         // no values
           "10;GPU-a=1",                       // one value
           "10;GPU-a=101,2",                   // utilisation above 100
           "10;GPU-a=1,x",                     // used not a number
           "10;GPU-a=1,2,3",                   // too many values
           "10;=1,2",                          // no UUID
           "10;GPU a=1,2",                     // not a UUID
           "10;GPU-a=1,2|4",                   // MIG without values
           "10;GPU-a=1,2|99:-,1",              // MIG start out of range
           "10;GPU-a=1,2|x:-,1",               // MIG start not a number
           "10;GPU-a=1,2;",                    // empty GPU
           "10;GPU-a=1,99999999999999999999",  // used out of range
       }) {
    EXPECT_FALSE(DecodeGpuUsage(bad).ok()) << bad;
  }
  std::string many = "10";
  for (int i = 0; i <= static_cast<int>(kMaxUsageGpus); ++i)
    many += ";GPU-" + std::to_string(i) + "=1,1";
  EXPECT_FALSE(DecodeGpuUsage(many).ok());
  std::string instances = "10;GPU-a=-,1";
  for (int i = 0; i <= static_cast<int>(kMaxUsageMigInstances); ++i) instances += "|0:-,1";
  EXPECT_FALSE(DecodeGpuUsage(instances).ok());
  EXPECT_FALSE(DecodeGpuUsage(std::string(kMaxGpuUsageAnnotationBytes + 1, '1')).ok());
  auto error = DecodeGpuUsage("10;GPU-a=1,x");
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.error().message.find("tessera.io/gpu-usage"), std::string::npos);
}

}  // namespace
}  // namespace tessera::codec
