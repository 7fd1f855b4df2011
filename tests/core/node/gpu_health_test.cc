#include "core/node/gpu_health.h"

#include <gtest/gtest.h>

namespace tessera::node {
namespace {

TEST(XidPolicyTest, HamisDefaultsAndOverrides) {
  XidPolicy plain("", "");
  EXPECT_TRUE(plain.Fatal(79));
  EXPECT_FALSE(plain.Fatal(13));  // the built-in ignored set
  XidPolicy more("79", "13");
  EXPECT_FALSE(more.Fatal(79));
  EXPECT_TRUE(more.Fatal(13));
  XidPolicy off("xids", "");
  EXPECT_FALSE(off.enabled());
  EXPECT_FALSE(off.Fatal(79));
  XidPolicy single_back("all", "79");  // re-enabling one XID does not switch checking back on
  EXPECT_FALSE(single_back.Fatal(79));
  XidPolicy all("", "all");
  EXPECT_TRUE(all.Fatal(13));
}

TEST(GpuHealthTest, UnhealthyUntilAQuietPeriodPasses) {
  GpuHealth health(1000);
  EXPECT_TRUE(health.MarkUnhealthy("GPU-a", 0));
  EXPECT_FALSE(health.MarkUnhealthy("GPU-a", 500));  // already; the quiet period restarts
  EXPECT_TRUE(health.Recover(1200).empty());
  EXPECT_EQ(health.Recover(1500), (std::set<std::string>{"GPU-a"}));
  EXPECT_TRUE(health.Unhealthy().empty());
  GpuHealth never(0);
  never.MarkUnhealthy("GPU-b", 0);
  EXPECT_TRUE(never.Recover(1'000'000'000).empty());
}

}  // namespace
}  // namespace tessera::node
