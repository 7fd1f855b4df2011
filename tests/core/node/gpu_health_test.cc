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

// HAMi says which XIDs are fatal; of those, the ones that need a GPU reset never recover by a
// quiet period (issue 38 D: 48 and 79 used to be healthy again after 5 minutes).
TEST(XidPolicyTest, XidsThatNeedAGpuResetAreFatalForGood) {
  XidPolicy plain("", "");
  EXPECT_EQ(plain.Effect(13), XidEffect::kIgnored);  // an application error
  EXPECT_EQ(plain.Effect(31), XidEffect::kIgnored);
  EXPECT_EQ(plain.Effect(94), XidEffect::kUnhealthy);  // contained ECC: the GPU goes on
  EXPECT_EQ(plain.Effect(8), XidEffect::kUnhealthy);
  for (uint64_t xid : {48, 62, 64, 74, 79, 92, 95, 119, 120, 140}) {
    EXPECT_EQ(plain.Effect(xid), XidEffect::kNeedsReset) << xid;
  }
  // HAMi's switches still decide whether an XID counts at all.
  EXPECT_EQ(XidPolicy("48", "").Effect(48), XidEffect::kIgnored);
  EXPECT_EQ(XidPolicy("xids", "").Effect(79), XidEffect::kIgnored);
  EXPECT_EQ(XidPolicy("", "13").Effect(13), XidEffect::kUnhealthy);
  EXPECT_EQ(XidPolicy("", "all").Effect(43), XidEffect::kUnhealthy);
}

TEST(GpuHealthTest, AGpuThatNeedsAResetNeverRecovers) {
  GpuHealth health(1000);
  EXPECT_TRUE(health.MarkUnhealthy("GPU-a", 0, /*needs_reset=*/true));
  EXPECT_TRUE(health.MarkUnhealthy("GPU-b", 0));
  EXPECT_EQ(health.Recover(5000), (std::set<std::string>{"GPU-b"}));
  EXPECT_EQ(health.Unhealthy(), (std::set<std::string>{"GPU-a"}));
  // A later recoverable XID does not undo the need for a reset.
  EXPECT_FALSE(health.MarkUnhealthy("GPU-a", 6000));
  EXPECT_TRUE(health.Recover(1'000'000).empty());
  // A recoverable fault followed by one that needs a reset: no recovery either.
  EXPECT_TRUE(health.MarkUnhealthy("GPU-c", 0));
  EXPECT_FALSE(health.MarkUnhealthy("GPU-c", 10, /*needs_reset=*/true));
  EXPECT_TRUE(health.Recover(1'000'000).empty());
}

TEST(XidWatchesTest, EachGpuIsRetriedOnItsOwnBackOff) {
  XidWatches watches;
  const std::vector<std::string> gpus = {"GPU-a", "GPU-b"};
  EXPECT_EQ(watches.Due(gpus, 0), gpus);
  EXPECT_FALSE(watches.any_watched());
  watches.Watched("GPU-b");
  EXPECT_EQ(watches.Failed("GPU-a", 0), 1000);
  EXPECT_TRUE(watches.any_watched());
  EXPECT_TRUE(watches.Due(gpus, 999).empty());  // GPU-b is watched, GPU-a waits
  EXPECT_EQ(watches.Due(gpus, 1000), std::vector<std::string>{"GPU-a"});
  EXPECT_EQ(watches.Failed("GPU-a", 1000), 2000);
  EXPECT_EQ(watches.failures("GPU-a"), 2);
  EXPECT_EQ(watches.Unwatched(gpus), std::vector<std::string>{"GPU-a"});
  watches.Watched("GPU-a");
  EXPECT_EQ(watches.failures("GPU-a"), 0);
  EXPECT_TRUE(watches.Unwatched(gpus).empty());
  // A GPU registered later is tried at once.
  EXPECT_EQ(watches.Due({"GPU-a", "GPU-b", "GPU-c"}, 1001), std::vector<std::string>{"GPU-c"});
}

}  // namespace
}  // namespace tessera::node
