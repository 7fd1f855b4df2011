#include "core/sched/near_miss.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/builders.h"

namespace tessera::sched {
namespace {

using testing::A100Mig;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::NodeWith;
using testing::PodBuilder;
using testing::RtxPro6000Mig;
using testing::SharingGpu;

mig::GpuMigModel A100Model() {
  const model::GpuDevice d = A100Mig("GPU-a");
  return mig::GpuMigModel(d, nullptr);
}

TEST(NearMiss, JustAbove3g20gbOnAnA100NamesItAndTheMemoryToAsk) {
  auto miss =
      FindNearMiss(A100Model(), mig::InstanceDemand{20000, 0}, "NVIDIA A100-SXM4-40GB", "main");
  ASSERT_TRUE(miss);
  EXPECT_EQ(miss->nearest_profile, "3g.20gb");  // 4g.20gb has the same memory, more slices
  EXPECT_EQ(miss->nearest_mib, 19968);
  EXPECT_EQ(miss->taken_profile, "7g.40gb");
  EXPECT_EQ(miss->taken_mib, 40192);
  EXPECT_EQ(FormatNearMiss(*miss),
            "container main asks 20000 MiB, 32 MiB over 3g.20gb (19968 MiB) on NVIDIA "
            "A100-SXM4-40GB, so it takes a 7g.40gb (40192 MiB): ask at most 19968 MiB to fit "
            "3g.20gb");
}

TEST(NearMiss, TheThresholdIsFivePercentOfTheProfilesMemory) {
  // 19968 * 1.05 = 20966.4: 20966 is a near miss, 20967 is not.
  EXPECT_TRUE(FindNearMiss(A100Model(), {20966, 0}, "A100", ""));
  EXPECT_FALSE(FindNearMiss(A100Model(), {20967, 0}, "A100", ""));
  // Exactly a profile's memory fits it: nothing to say.
  EXPECT_FALSE(FindNearMiss(A100Model(), {19968, 0}, "A100", ""));
  EXPECT_FALSE(FindNearMiss(A100Model(), {12000, 0}, "A100", ""));
}

TEST(NearMiss, ARequestAboveEveryProfileStillGetsTheLargest) {
  auto miss = FindNearMiss(A100Model(), {40960, 0}, "A100", "");
  ASSERT_TRUE(miss);
  EXPECT_EQ(miss->nearest_profile, "7g.40gb");
  EXPECT_EQ(miss->nearest_mib, 40192);
  EXPECT_EQ(miss->taken_profile, "");
  EXPECT_THAT(FormatNearMiss(*miss), ::testing::HasSubstr("so it fits no profile there"));
}

TEST(NearMiss, AProfileWithTooFewCoresIsNoHint) {
  // 3g.20gb has 43% of the cores and 4g.20gb 58%: asking 50% cores, only 4g.20gb would do.
  auto miss = FindNearMiss(A100Model(), {20000, 50}, "A100", "");
  ASSERT_TRUE(miss);
  EXPECT_EQ(miss->nearest_profile, "4g.20gb");
  // With 60% cores neither 20 GB profile would take it, whatever its memory.
  EXPECT_FALSE(FindNearMiss(A100Model(), {20000, 60}, "A100", ""));
}

TEST(NearMiss, TheClustersKindsAreOnePerMigType) {
  state::ClusterState cluster{config::SchedulerConfig{}};
  cluster.UpsertNode(NodeWith("a1", {A100Mig("GPU-1"), A100Mig("GPU-2", 1)}));
  cluster.UpsertNode(NodeWith("a2", {A100Mig("GPU-3")}));
  cluster.UpsertNode(NodeWith("r1", {RtxPro6000Mig("GPU-4")}));
  cluster.UpsertNode(NodeWith("s1", {SharingGpu("GPU-5")}));
  std::vector<std::string> types;
  for (const MigGpuKind& k : MigGpuKindsOf(cluster)) types.push_back(k.type);
  EXPECT_THAT(types,
              ElementsAre("NVIDIA A100-SXM4-40GB", "NVIDIA RTX PRO 6000 Blackwell Server Edition"));
}

// The kinds are kept as nodes change and go (the webhook reads them per pod, without a walk of
// the nodes): a type stays while any GPU of it is in MIG mode.
TEST(NearMiss, TheClustersKindsFollowNodesThatChangeAndGo) {
  state::ClusterState cluster{config::SchedulerConfig{}};
  const auto types = [&cluster] {
    std::vector<std::string> out;
    for (const MigGpuKind& k : MigGpuKindsOf(cluster)) out.push_back(k.type);
    return out;
  };
  cluster.UpsertNode(NodeWith("a1", {A100Mig("GPU-1"), A100Mig("GPU-2", 1)}));
  cluster.UpsertNode(NodeWith("r1", {RtxPro6000Mig("GPU-4")}));
  cluster.UpsertNode(NodeWith("a2", {A100Mig("GPU-3")}));
  cluster.RemoveNode("a1");
  EXPECT_THAT(types(),
              ElementsAre("NVIDIA A100-SXM4-40GB", "NVIDIA RTX PRO 6000 Blackwell Server Edition"));
  cluster.RemoveNode("a2");
  EXPECT_THAT(types(), ElementsAre("NVIDIA RTX PRO 6000 Blackwell Server Edition"));
  // The node's GPU leaves MIG mode (registered again, shared): its type goes too.
  cluster.UpsertNode(NodeWith("r1", {SharingGpu("GPU-4")}));
  EXPECT_THAT(types(), ElementsAre());
  // Updates that keep the registration (heartbeats) count nothing twice.
  cluster.UpsertNode(NodeWith("a3", {A100Mig("GPU-5")}));
  cluster.UpsertNode(NodeWith("a3", {A100Mig("GPU-5")}));
  cluster.RemoveNode("a3");
  EXPECT_THAT(types(), ElementsAre());
}

TEST(NearMiss, APodsMissesLeaveOutTypesItMayNotUseAndNameTheContainer) {
  std::vector<MigGpuKind> kinds{
      {"NVIDIA A100-SXM4-40GB", A100Model()},
      {"NVIDIA RTX PRO 6000", mig::GpuMigModel(RtxPro6000Mig("r"), nullptr)}};
  // 24300 MiB is 0.4% over the RTX PRO 6000's 1g.24gb; 20000 over the A100's 3g.20gb.
  PodRequest request;
  request.names = {"small", "big"};
  request.slots = {ContainerRequest{1, 20000, kMemPercentUnset, 0},
                   ContainerRequest{1, 24300, kMemPercentUnset, 0}};
  const std::vector<NearMiss> all = FindNearMisses(request, PodPreferences{}, kinds);
  std::vector<std::string> seen;
  for (const NearMiss& m : all) seen.push_back(m.container + " " + m.nearest_profile);
  EXPECT_THAT(seen, ElementsAre("small 3g.20gb", "big 1g.24gb"));

  PodPreferences only_rtx;
  only_rtx.use_types = {"RTX"};
  seen.clear();
  for (const NearMiss& m : FindNearMisses(request, only_rtx, kinds))
    seen.push_back(m.container + " " + m.nearest_profile);
  EXPECT_THAT(seen, ElementsAre("big 1g.24gb"));

  PodPreferences shared_only;
  shared_only.vgpu_mode = VgpuMode::kHamiCore;
  EXPECT_THAT(FindNearMisses(request, shared_only, kinds), IsEmpty());
}

TEST(NearMiss, APercentageCountsAgainstTheLargestProfile) {
  std::vector<MigGpuKind> kinds{{"NVIDIA A100-SXM4-40GB", A100Model()}};
  PodRequest request;
  request.names = {"c"};
  // 51% of 7g.40gb's 40192 MiB is 20497 MiB: 2.6% over 3g.20gb.
  request.slots = {ContainerRequest{1, 0, 51, 0}};
  const std::vector<NearMiss> misses = FindNearMisses(request, PodPreferences{}, kinds);
  ASSERT_EQ(misses.size(), 1U);
  EXPECT_EQ(misses[0].requested_mib, 20497);
  EXPECT_EQ(misses[0].nearest_profile, "3g.20gb");
}

}  // namespace
}  // namespace tessera::sched
