#include "sim/mig_replay/policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/mig_replay/protocol.h"
#include "test_fleet.h"

namespace tessera::sim::mig_replay {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Type indices of the uniform mix.
constexpr int k1g = 0, k2g = 1, k3g = 2, k4g = 3, k7g = 4;

class MigPolicyTest : public ::testing::Test {
 protected:
  // One A100-40GB node with `gpus` GPUs.
  explicit MigPolicyTest(int gpus = 2)
      : cluster_(testing::Nodes("A100-40GB", gpus), MakeSyntheticWorkload(SyntheticMix::kUniform)) {
  }

  // Puts an instance of `profile` at `start` on GPU `device` of node 0.
  void Hold(const std::string& key, int device, const std::string& profile, uint32_t start) {
    const int p = testing::Profile(cluster_, profile, 0, device);
    const auto& placements = gpu(device).profiles()[p].placements;
    for (const auto& placement : placements) {
      if (placement.start == start) {
        cluster_.Commit(key, 0, {InstancePick{device, p, placement}});
        return;
      }
    }
    FAIL() << profile << " has no placement at " << start;
  }
  const mig::GpuMigModel& gpu(int device = 0) const {
    return cluster_.nodes()[0]->mig_models[device];
  }
  const mig::Layout& layout(int device = 0) const {
    return cluster_.nodes()[0]->usage[device].layout;
  }
  bool Place(std::string_view policy, int type, const std::string& key = "mig/new") {
    auto made = MakeMigPolicy(policy, cluster_);
    EXPECT_TRUE(made.ok());
    return testing::Place(*made.value(), cluster_, key, type);
  }
  std::vector<std::string> On(int device) const { return testing::Instances(cluster_, 0, device); }

  MigCluster cluster_;
};

TEST_F(MigPolicyTest, HamiPlacesOneAndThreeGFromTheTopOthersFromTheBottom) {
  const auto at = [&](const std::string& name) {
    return HamiPlacement(gpu(), layout(), gpu().ProfileIndex(name))->start;
  };
  EXPECT_EQ(at("1g.5gb"), 6u);
  EXPECT_EQ(at("3g.20gb"), 4u);
  EXPECT_EQ(at("2g.10gb"), 0u);
  EXPECT_EQ(at("4g.20gb"), 0u);
  EXPECT_EQ(at("7g.40gb"), 0u);
  Hold("a", 0, "1g.5gb", 6);
  EXPECT_EQ(at("1g.5gb"), 5u);
  EXPECT_EQ(at("3g.20gb"), 0u);  // (4,4) overlaps slice 6
}

TEST_F(MigPolicyTest, HamiTakesTheFirstCoveringProfileWithAPlacement) {
  // 2g.10gb placements are 0, 2, 4: with 2g at 0 and 2 and a 1g at 4 neither 2g nor any larger
  // covering profile has a placement; a 1g request stays 1g, from the top.
  Hold("a", 0, "2g.10gb", 0);
  Hold("b", 0, "2g.10gb", 2);
  Hold("c", 0, "1g.5gb", 4);
  const int intended = gpu().ProfileIndex("2g.10gb");
  EXPECT_FALSE(HamiCandidate(gpu(), layout(), intended).has_value());
  const auto one = HamiCandidate(gpu(), layout(), gpu().ProfileIndex("1g.5gb"));
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(gpu().profiles()[one->profile].name, "1g.5gb");
  EXPECT_EQ(one->placement.start, 6u);
}

TEST_F(MigPolicyTest, LargestFreeRunKeepsTheLongestRunThenMostPlacements) {
  // docs/mig.md's example: a 1g at slice 3; starts 0, 1, 2 all keep slices 4-7 free; start 2
  // also keeps 2g at 0 possible (8 legal placements left, against 7).
  Hold("a", 0, "1g.5gb", 3);
  const auto pick = LargestFreeRunCandidate(gpu(), layout(), gpu().ProfileIndex("1g.5gb"));
  ASSERT_TRUE(pick.has_value());
  EXPECT_EQ(pick->placement.start, 2u);

  // Slices kept for another pod are not considered: with slices 0-2 kept, the pick is above the
  // held 1g; with every free slice kept there is none.
  const auto kept = LargestFreeRunCandidate(gpu(), layout(), gpu().ProfileIndex("1g.5gb"), 0x7U);
  ASSERT_TRUE(kept.has_value());
  EXPECT_GE(kept->placement.start, 4u);
  EXPECT_FALSE(LargestFreeRunCandidate(gpu(), layout(), gpu().ProfileIndex("1g.5gb"), 0xF7U))
      << "every free slice kept";
}

TEST_F(MigPolicyTest, FirstFitTakesTheFirstGpuAndLowestStart) {
  ASSERT_TRUE(Place(kPolicyFirstFit, k1g, "mig/a"));
  ASSERT_TRUE(Place(kPolicyFirstFit, k3g, "mig/b"));
  ASSERT_TRUE(Place(kPolicyFirstFit, k1g, "mig/c"));
  EXPECT_THAT(On(0), ElementsAre("1g.5gb@0", "3g.20gb@4", "1g.5gb@1"));
  EXPECT_THAT(On(1), IsEmpty());
  ASSERT_TRUE(Place(kPolicyFirstFit, k4g, "mig/d"));  // 4g only at 0: GPU 1
  EXPECT_THAT(On(1), ElementsAre("4g.20gb@0"));
}

TEST_F(MigPolicyTest, BestFitTakesTheFullestGpuThatFits) {
  Hold("a", 1, "3g.20gb", 4);  // GPU 1 has 4 free slices, GPU 0 has 8
  ASSERT_TRUE(Place(kPolicyBestFit, k1g, "mig/b"));
  EXPECT_THAT(On(1), ElementsAre("3g.20gb@4", "1g.5gb@0"));
  ASSERT_TRUE(Place(kPolicyBestFit, k4g, "mig/c"));  // does not fit GPU 1 any more
  EXPECT_THAT(On(0), ElementsAre("4g.20gb@0"));
}

TEST_F(MigPolicyTest, HamiVisitsTheLeastUsedGpuFirstHighestIndexOnTies) {
  Hold("a", 0, "1g.5gb", 6);
  const std::vector<int> order = HamiDeviceOrder(*cluster_.nodes()[0], /*binpack=*/false);
  EXPECT_THAT(order, ElementsAre(1, 0));
  EXPECT_THAT(HamiDeviceOrder(*cluster_.nodes()[0], /*binpack=*/true), ElementsAre(0, 1));
  ASSERT_TRUE(Place(kPolicyHami210, k1g, "mig/b"));
  EXPECT_THAT(On(1), ElementsAre("1g.5gb@6"));
}

TEST_F(MigPolicyTest, HamiNodeScoreCountsInstancesCoresAndMemory) {
  EXPECT_FLOAT_EQ(HamiNodeScore(*cluster_.nodes()[0]), 0.0f);
  Hold("a", 0, "7g.40gb", 0);
  // 1 of 14 instance slots, 100 of 200 cores, 40192 of 81920 MiB.
  const float expected = 10.0f * (1.0f / 14.0f + 100.0f / 200.0f + 40192.0f / 81920.0f);
  EXPECT_FLOAT_EQ(HamiNodeScore(*cluster_.nodes()[0]), expected);
}

TEST_F(MigPolicyTest, StaticPartitionsAreCutOnceAndOnlyFreeSlotsServe) {
  const auto names = [&](bool balanced) {
    std::vector<std::string> out;
    for (const auto& s : StaticSlots(gpu(), balanced)) {
      out.push_back(gpu().profiles()[s.profile].name + "@" + std::to_string(s.placement.start));
    }
    return out;
  };
  EXPECT_THAT(names(true), ElementsAre("3g.20gb@4", "2g.10gb@0", "1g.5gb@2", "1g.5gb@3"));
  EXPECT_EQ(names(false).size(), 7u);
  EXPECT_FALSE(Place(kPolicyStaticBalanced, k4g, "mig/a"));  // no 4g slot
  EXPECT_FALSE(Place(kPolicyStaticBalanced, k7g, "mig/b"));
  ASSERT_TRUE(Place(kPolicyStaticBalanced, k2g, "mig/c"));
  EXPECT_THAT(On(0), ElementsAre("2g.10gb@0"));
  ASSERT_TRUE(Place(kPolicyStaticBalanced, k1g, "mig/d"));
  EXPECT_THAT(On(0), ElementsAre("2g.10gb@0", "1g.5gb@2"));
  EXPECT_FALSE(Place(kPolicyStatic1g, k2g, "mig/e"));
}

TEST(MigPolicyNames, UnknownPolicyIsAnErrorListingTheKnownOnes) {
  MigCluster cluster(testing::Nodes("A100-40GB", 1), MakeSyntheticWorkload(SyntheticMix::kUniform));
  auto made = MakeMigPolicy("worst-fit", cluster);
  ASSERT_FALSE(made.ok());
  EXPECT_THAT(made.error().message, ::testing::HasSubstr("hami-2.10"));
}

}  // namespace
}  // namespace tessera::sim::mig_replay

namespace tessera::sim::mig_replay {
namespace {

// A policy whose mistake the run must report, not hide as a refusal.
class FailingPolicy : public MigPolicy {
 public:
  std::string_view Name() const override { return "failing"; }
  Result<replay::PlaceOutcome> Place(MigCluster& /*cluster*/, const int& type,
                                     const std::string& key, std::mt19937_64& /*rng*/) override {
    ++calls;
    if (type == 0) return replay::PlaceOutcome::kRefused;
    return Error{"cannot place " + key};
  }
  int calls = 0;
};

TEST(PolicyPlacer, APolicyErrorStopsItsPlacementsAndIsReported) {
  MigCluster cluster(testing::Nodes("A100-40GB", 1), MakeSyntheticWorkload(SyntheticMix::kUniform));
  FailingPolicy policy;
  PolicyPlacer placer(cluster, policy);
  EXPECT_FALSE(placer.Place("mig/a", 0));
  EXPECT_FALSE(placer.error());  // a refusal is not an error
  EXPECT_FALSE(placer.Place("mig/b", 1));
  ASSERT_TRUE(placer.error());
  EXPECT_EQ(placer.error()->message, "cannot place mig/b");
  EXPECT_FALSE(placer.Place("mig/c", 0));
  EXPECT_EQ(policy.calls, 2);  // not asked again after its mistake
}

}  // namespace
}  // namespace tessera::sim::mig_replay
