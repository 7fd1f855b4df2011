// hami-master (HAMi after PR #2855): the joint planner's cases from the PR's description, and the
// policy against hami-2.10.
#include "sim/mig_replay/hami_master.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "test_fleet.h"

namespace tessera::sim::mig_replay {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// "2g.10gb@4" per pick, in request order.
std::vector<std::string> Names(const mig::GpuMigModel& gpu,
                               const std::vector<InstancePick>& picks) {
  std::vector<std::string> out;
  out.reserve(picks.size());
  for (const auto& p : picks) {
    out.push_back(gpu.profiles()[p.profile].name + "@" + std::to_string(p.placement.start));
  }
  return out;
}

// Every layout reachable from an empty GPU by placing allowed profiles.
std::vector<mig::Layout> ReachableLayouts(const mig::GpuMigModel& gpu) {
  std::vector<mig::Layout> out = {mig::Layout{}};
  for (size_t i = 0; i < out.size(); ++i) {
    for (int p = 0; p < static_cast<int>(gpu.profiles().size()); ++p) {
      if (!gpu.Allowed(p)) continue;
      for (const auto& placement : gpu.profiles()[p].placements) {
        if (!gpu.CanPlace(out[i], p, placement)) continue;
        mig::Layout next = out[i];
        gpu.Place(next, p, placement);
        if (std::find(out.begin(), out.end(), next) == out.end()) out.push_back(next);
      }
    }
  }
  return out;
}

class MigHamiMasterPlanTest : public ::testing::Test {
 protected:
  MigHamiMasterPlanTest()
      : cluster_(testing::Nodes("A100-40GB", 1), MakeSyntheticWorkload(SyntheticMix::kUniform)) {}
  const mig::GpuMigModel& gpu() const { return cluster_.nodes()[0]->mig_models[0]; }
  int P(const std::string& name) const { return gpu().ProfileIndex(name); }
  mig::Layout With(const std::string& profile, uint32_t start) const {
    mig::Layout layout;
    for (const auto& placement : gpu().profiles()[P(profile)].placements) {
      if (placement.start == start) gpu().Place(layout, P(profile), placement);
    }
    return layout;
  }

  MigCluster cluster_;
};

TEST_F(MigHamiMasterPlanTest, FewestFreePlacementsGoFirst) {
  // On an empty A100-40GB a 4g has one placement (start 0), a 1g seven: the 4g is placed first,
  // and the 1g's go where they leave the longest run (4, then 5). Picks stay in request order.
  const std::vector<int> requests = {P("1g.5gb"), P("1g.5gb"), P("4g.20gb")};
  const HamiJointPlanResult plan = HamiJointPlan(gpu(), mig::Layout{}, requests);
  ASSERT_TRUE(plan.picks.has_value());
  EXPECT_THAT(Names(gpu(), *plan.picks), ElementsAre("1g.5gb@4", "1g.5gb@5", "4g.20gb@0"));
  EXPECT_EQ(plan.steps, 3);  // no backtracking
  // The order matters: placing in request order with the same ranking puts the first 1g at 0
  // (run 7), and no 4g (nor the covering 7g) fits any more.
  mig::Layout in_order;
  for (int i = 0; i < 2; ++i) {
    const auto pick = LargestFreeRunCandidate(gpu(), in_order, P("1g.5gb"));
    ASSERT_TRUE(pick.has_value());
    gpu().Place(in_order, pick->profile, pick->placement);
  }
  EXPECT_FALSE(LargestFreeRunCandidate(gpu(), in_order, P("4g.20gb")).has_value());
}

TEST_F(MigHamiMasterPlanTest, TheLargestFreeRunRanksFirst) {
  // Empty A100-40GB, a 1g: start 0 leaves slices 1-7 free (run 7) and 9 legal placements;
  // start 6 leaves 11 but a run of 6. The run decides.
  const std::vector<model::Placement> ranked = HamiMasterRank(gpu(), mig::Layout{}, P("1g.5gb"));
  ASSERT_EQ(ranked.size(), 7u);
  EXPECT_EQ(ranked.front().start, 0u);
  EXPECT_GT(LegalPlacementsLeft(gpu(), With("1g.5gb", 6)),
            LegalPlacementsLeft(gpu(), With("1g.5gb", 0)));
}

TEST_F(MigHamiMasterPlanTest, SurvivingPlacementsBreakRunTies) {
  // A 1g at slice 3: starts 0, 1 and 2 all leave slices 4-7 (run 4); start 2 also keeps the 2g
  // at 0 legal (8 placements left, against 7), so it wins.
  const mig::Layout layout = With("1g.5gb", 3);
  const std::vector<model::Placement> ranked = HamiMasterRank(gpu(), layout, P("1g.5gb"));
  ASSERT_GE(ranked.size(), 3u);
  EXPECT_EQ(ranked[0].start, 2u);
  const HamiJointPlanResult plan = HamiJointPlan(gpu(), layout, {P("1g.5gb")});
  ASSERT_TRUE(plan.picks.has_value());
  EXPECT_THAT(Names(gpu(), *plan.picks), ElementsAre("1g.5gb@2"));
}

TEST(MigHamiMasterPlan, OneInstanceIsLargestFreeRun) {
  // For one request the plan is the largest-free-run baseline's choice, on every reachable
  // layout of these models and every allowed profile.
  for (const std::string model : {"A100-40GB", "H100-SXM5-80GB", "RTX-PRO-6000-Blackwell-96GB"}) {
    MigCluster cluster(testing::Nodes(model, 1), MakeSyntheticWorkload(SyntheticMix::kUniform));
    const mig::GpuMigModel& gpu = cluster.nodes()[0]->mig_models[0];
    const std::vector<mig::Layout> layouts = ReachableLayouts(gpu);
    ASSERT_GT(layouts.size(), 20u) << model;
    int compared = 0;
    for (const mig::Layout& layout : layouts) {
      for (int p = 0; p < static_cast<int>(gpu.profiles().size()); ++p) {
        if (!gpu.Allowed(p)) continue;
        const auto baseline = LargestFreeRunCandidate(gpu, layout, p);
        const HamiJointPlanResult plan = HamiJointPlan(gpu, layout, {p});
        ASSERT_EQ(baseline.has_value(), plan.picks.has_value()) << model;
        if (!baseline) continue;
        EXPECT_EQ(baseline->profile, (*plan.picks)[0].profile) << model;
        EXPECT_EQ(baseline->placement, (*plan.picks)[0].placement) << model;
        ++compared;
      }
    }
    EXPECT_GT(compared, 0) << model;
  }
}

// A made-up 5-slice card: no catalog model we searched needs backtracking (A100-40GB, H100, H200,
// B200, RTX PRO 6000: every reachable layout, every multiset of 2 to 7 allowed profiles and
// every ordered list of 2 to 4 non-7g ones; fewest-free order and ranking never hit a dead end).
// "1g.5gb" is one slice at 0 or 4, "1g.10gb" two slices at 0, 2 or 3.
mig::GpuMigModel DeadEndCard() {
  model::GpuDevice device;
  device.mode = std::string(model::kMigMode);
  device.mig_profiles = {
      model::MigProfile{.name = "1g.5gb",
                        .memory_mib = 5000,
                        .core = 14,
                        .slice_count = 1,
                        .placements = {{0, 1}, {4, 1}}},
      model::MigProfile{.name = "1g.10gb",
                        .memory_mib = 10000,
                        .core = 14,
                        .slice_count = 1,
                        .placements = {{0, 2}, {2, 2}, {3, 2}}},
      model::MigProfile{.name = "7g.25gb",
                        .memory_mib = 25000,
                        .core = 100,
                        .slice_count = 7,
                        .placements = {{0, 5}}},
  };
  return mig::GpuMigModel(device, nullptr);
}

TEST(MigHamiMasterPlan, BacktracksWhenTheTopChoiceBlocksALaterRequest) {
  // Requests S, D, D: S has 2 free placements, D 3, so S goes first. S at 0 and at 4 both leave
  // a run of 4 and 3 legal placements; the lower start wins, and then D fits only once (2 and 3
  // overlap). The search undoes S at 0 and finds S at 4, D at 2 and 0.
  const mig::GpuMigModel gpu = DeadEndCard();
  const std::vector<int> requests = {gpu.ProfileIndex("1g.5gb"), gpu.ProfileIndex("1g.10gb"),
                                     gpu.ProfileIndex("1g.10gb")};
  EXPECT_EQ(HamiMasterRank(gpu, mig::Layout{}, requests[0]).front().start, 0u);
  const HamiJointPlanResult plan = HamiJointPlan(gpu, mig::Layout{}, requests);
  ASSERT_TRUE(plan.picks.has_value());
  EXPECT_THAT(Names(gpu, *plan.picks), ElementsAre("1g.5gb@4", "1g.10gb@2", "1g.10gb@0"));
  EXPECT_EQ(plan.steps, 6);
  EXPECT_FALSE(plan.budget_exhausted);
  // Without backtracking (a budget of one step per request) the greedy path fails.
  EXPECT_FALSE(HamiJointPlan(gpu, mig::Layout{}, requests, 3).picks.has_value());
}

TEST(MigHamiMasterPlan, TheSharedBudgetCanRejectAValidLayout) {
  // PR #2855's review: the budget is shared across the recursion, so a layout that exists is
  // rejected when the search runs out of steps before reaching it.
  const mig::GpuMigModel gpu = DeadEndCard();
  const std::vector<int> requests = {gpu.ProfileIndex("1g.5gb"), gpu.ProfileIndex("1g.10gb"),
                                     gpu.ProfileIndex("1g.10gb")};
  const HamiJointPlanResult short_budget = HamiJointPlan(gpu, mig::Layout{}, requests, 5);
  EXPECT_FALSE(short_budget.picks.has_value());
  EXPECT_TRUE(short_budget.budget_exhausted);
  EXPECT_EQ(short_budget.steps, 5);
  const HamiJointPlanResult enough = HamiJointPlan(gpu, mig::Layout{}, requests, 6);
  EXPECT_TRUE(enough.picks.has_value());
  EXPECT_FALSE(enough.budget_exhausted);
  // On a catalog model: a 4g and two 1g need three steps.
  MigCluster cluster(testing::Nodes("A100-40GB", 1), MakeSyntheticWorkload(SyntheticMix::kUniform));
  const mig::GpuMigModel& a100 = cluster.nodes()[0]->mig_models[0];
  const std::vector<int> small = {a100.ProfileIndex("4g.20gb"), a100.ProfileIndex("1g.5gb"),
                                  a100.ProfileIndex("1g.5gb")};
  EXPECT_TRUE(HamiJointPlan(a100, mig::Layout{}, small, 2).budget_exhausted);
  EXPECT_TRUE(HamiJointPlan(a100, mig::Layout{}, small, 3).picks.has_value());
}

// Pods of `count` instances of one share (1/7: 1g on an A100-40GB).
Workload Pods(int count, int share_num) {
  Workload w;
  w.name = "pods";
  w.types = {RequestType{.share_num = share_num,
                         .share_den = 7,
                         .count = count,
                         .label = std::to_string(share_num) + "/7 x" + std::to_string(count)}};
  w.probabilities = {1.0};
  return w;
}

bool PlaceWith(std::string_view policy, MigCluster& cluster, const std::string& key) {
  auto made = MakeMigPolicy(policy, cluster);
  EXPECT_TRUE(made.ok());
  return made.ok() && testing::Place(*made.value(), cluster, key, 0);
}

TEST(MigHamiMasterPolicy, PlansAPodsSmallInstancesJointlyOnOneCard) {
  // Three 1g of one pod on two empty GPUs: both policies visit GPU 1 first (spread, ties to the
  // highest index) and keep every instance there; hami-2.10 takes each 1g from the top, one at a
  // time, hami-master plans the three together on the card, each leaving the longest run.
  MigCluster hami(testing::Nodes("A100-40GB", 2), Pods(3, 1));
  ASSERT_TRUE(PlaceWith(kPolicyHami210, hami, "mig/a"));
  EXPECT_THAT(testing::Instances(hami, 0, 1), ElementsAre("1g.5gb@6", "1g.5gb@5", "1g.5gb@4"));
  MigCluster master(testing::Nodes("A100-40GB", 2), Pods(3, 1));
  ASSERT_TRUE(PlaceWith(kPolicyHamiMaster, master, "mig/a"));
  EXPECT_THAT(testing::Instances(master, 0, 1), ElementsAre("1g.5gb@0", "1g.5gb@1", "1g.5gb@2"));
  EXPECT_THAT(testing::Instances(master, 0, 0), IsEmpty());
}

TEST(MigHamiMasterPolicy, MovesToTheNextGpuWhenTheJointPlanFails) {
  // Two 4g: the second cannot join the first on GPU 1 (one 4g placement), so it goes to GPU 0.
  MigCluster cluster(testing::Nodes("A100-40GB", 2), Pods(2, 4));
  ASSERT_TRUE(PlaceWith(kPolicyHamiMaster, cluster, "mig/a"));
  EXPECT_THAT(testing::Instances(cluster, 0, 1), ElementsAre("4g.20gb@0"));
  EXPECT_THAT(testing::Instances(cluster, 0, 0), ElementsAre("4g.20gb@0"));
  EXPECT_FALSE(PlaceWith(kPolicyHamiMaster, cluster, "mig/b"));
}

TEST(MigHamiMasterPolicy, IsADefaultPolicyRightAfterHami210) {
  const std::vector<std::string>& names = AllPolicyNames();
  const auto at = std::find(names.begin(), names.end(), std::string(kPolicyHami210));
  ASSERT_NE(at, names.end());
  ASSERT_NE(at + 1, names.end());
  EXPECT_EQ(*(at + 1), kPolicyHamiMaster);
}

}  // namespace
}  // namespace tessera::sim::mig_replay
