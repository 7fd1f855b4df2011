#include "core/sched/preemption.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/config/scheduler_config.h"
#include "support/builders.h"
#include "support/reservations.h"

namespace tessera::sched {
namespace {

using ::testing::ElementsAre;
using testing::NodeWith;
using testing::PodBuilder;
using testing::RtxPro6000Mig;
using testing::SharingGpu;
using Verdict = NodeVictims::Verdict;

class PreemptionTest : public ::testing::Test {
 protected:
  PreemptionTest() : state_(config::SchedulerConfig{}) {}

  void AddNode(const std::string& name, const std::vector<model::GpuDevice>& gpus) {
    state_.UpsertNode(NodeWith(name, gpus));
  }
  // A running pod holding `mem` MiB and `cores` % of shared GPU `uuid` (one per container).
  void HoldShared(const std::string& key, int32_t priority, const std::string& node,
                  const std::vector<std::string>& uuids, int mem, int cores = 10,
                  std::map<std::string, std::string> labels = {}) {
    state::PodReservation r;
    r.key = key;
    r.uid = "uid-" + key;
    r.node = node;
    for (const auto& uuid : uuids) r.devices.push_back({{uuid, "NVIDIA", mem, cores}});
    r.priority = priority;
    r.labels = std::move(labels);
    state_.AddPod(std::move(r));
  }
  // A running pod holding one 1g.24gb instance of the RTX PRO 6000 `uuid` at slice `start`.
  void HoldMig(const std::string& key, int32_t priority, const std::string& node,
               const std::string& uuid, uint32_t start) {
    state::PodReservation r = testing::RtxPro1g24gbPod(key, node, uuid, start);
    r.priority = priority;
    state_.AddPod(std::move(r));
  }
  NodeVictims Find(const model::Pod& pod, const std::string& node,
                   std::span<const DisruptionBudget> budgets = {},
                   const std::set<std::string>& spared = {}, PreemptionLimits limits = {}) {
    return FindVictims(state_.Subset({node}), pod, PolicyDefaults{}, budgets, spared, limits);
  }

  state::ClusterState state_;
};

// kube-scheduler counts nvidia.com/gpu: it would evict the two lowest-priority pods (at slices 0
// and 6), which leaves no two adjacent slices. The search evicts the pods holding the slices a
// 2g.48gb instance needs, and no other pod on the node.
TEST_F(PreemptionTest, MigVictimsAreThePodsHoldingTheSlicesThePodNeeds) {
  AddNode("node-a", {RtxPro6000Mig("GPU-r")});
  HoldMig("default/at-0", 1, "node-a", "GPU-r", 0);
  HoldMig("default/at-3", 5, "node-a", "GPU-r", 3);
  HoldMig("default/at-6", 1, "node-a", "GPU-r", 6);
  HoldMig("default/at-9", 5, "node-a", "GPU-r", 9);
  const model::Pod pod = PodBuilder("default/p").Priority(10).MigMode().Container(1, 40000).Build();
  NodeVictims v = Find(pod, "node-a");
  ASSERT_EQ(v.verdict, Verdict::kVictims);
  ASSERT_TRUE(v.victims);
  // Highest priority first, as kube-scheduler reads a victim list.
  EXPECT_THAT(v.victims->pods, ElementsAre("default/at-3", "default/at-0"));
  EXPECT_EQ(v.victims->cost.highest_priority, 5);
  EXPECT_EQ(v.victims->cost.priority_sum, 6);
  EXPECT_TRUE(v.exhaustive);
  // The copy is the search's own: the state is unchanged.
  EXPECT_NE(state_.pod("default/at-0"), nullptr);
}

TEST_F(PreemptionTest, SharedGpuLeastMemoryFreedAmongEqualSets) {
  AddNode("n", {SharingGpu("GPU-1", 8000)});
  HoldShared("default/big", 1, "n", {"GPU-1"}, 5000);
  HoldShared("default/small", 1, "n", {"GPU-1"}, 2000);
  const model::Pod pod = PodBuilder("default/p").Priority(10).Container(1, 3000, 10).Build();
  NodeVictims v = Find(pod, "n");
  ASSERT_EQ(v.verdict, Verdict::kVictims);
  EXPECT_THAT(v.victims->pods, ElementsAre("default/small"));
  EXPECT_EQ(v.victims->cost.freed_mem, 2000);
}

TEST_F(PreemptionTest, SharedGpuCoresDecideWhoGoes) {
  AddNode("n", {SharingGpu("GPU-1", 8000)});
  HoldShared("default/busy", 1, "n", {"GPU-1"}, 1000, 80);
  HoldShared("default/roomy", 1, "n", {"GPU-1"}, 4000, 10);
  const model::Pod pod = PodBuilder("default/p").Priority(10).Container(1, 1000, 50).Build();
  NodeVictims v = Find(pod, "n");
  ASSERT_EQ(v.verdict, Verdict::kVictims);
  EXPECT_THAT(v.victims->pods, ElementsAre("default/busy"));
}

TEST_F(PreemptionTest, LowerPrioritiesBeforeLessMemory) {
  AddNode("n", {SharingGpu("GPU-1", 8000)});
  HoldShared("default/important", 3, "n", {"GPU-1"}, 4000);
  HoldShared("default/batch", 1, "n", {"GPU-1"}, 4000);
  HoldShared("default/tiny", 2, "n", {"GPU-1"}, 0);
  const model::Pod pod = PodBuilder("default/p").Priority(10).Container(1, 4000, 10).Build();
  NodeVictims v = Find(pod, "n");
  ASSERT_EQ(v.verdict, Verdict::kVictims);
  EXPECT_THAT(v.victims->pods, ElementsAre("default/batch"));
}

TEST_F(PreemptionTest, MultiContainerPodNeedsRoomOnTwoGpus) {
  AddNode("n", {SharingGpu("GPU-1", 8000, 0, 0), SharingGpu("GPU-2", 8000, 0, 1)});
  HoldShared("default/on-1", 1, "n", {"GPU-1"}, 4000);
  HoldShared("default/on-2", 1, "n", {"GPU-2"}, 4000);
  HoldShared("default/small-on-2", 1, "n", {"GPU-2"}, 1000);
  // Two containers of one 6000 MiB GPU each: each GPU must keep no more than 2000 MiB in use.
  const model::Pod pod =
      PodBuilder("default/p").Priority(10).Container(1, 6000, 10).Container(1, 6000, 10).Build();
  NodeVictims v = Find(pod, "n");
  ASSERT_EQ(v.verdict, Verdict::kVictims);
  EXPECT_THAT(v.victims->pods, ElementsAre("default/on-1", "default/on-2"));
}

TEST_F(PreemptionTest, APdbProtectedPodIsSparedWhenAnotherSetWorks) {
  AddNode("n", {SharingGpu("GPU-1", 8000)});
  HoldShared("db/guarded", 1, "n", {"GPU-1"}, 4000, 10, {{"app", "db"}});
  HoldShared("db/x", 1, "n", {"GPU-1"}, 2000);
  HoldShared("db/y", 1, "n", {"GPU-1"}, 2000);
  const model::Pod pod = PodBuilder("default/p").Priority(10).Container(1, 4000, 10).Build();
  // Without a budget the one pod is cheapest.
  EXPECT_THAT(Find(pod, "n").victims->pods, ElementsAre("db/guarded"));
  const std::vector<DisruptionBudget> budgets{{"db", {{"app", "db"}}, 0}};
  NodeVictims v = Find(pod, "n", budgets);
  ASSERT_EQ(v.verdict, Verdict::kVictims);
  EXPECT_THAT(v.victims->pods, ElementsAre("db/x", "db/y"));
  EXPECT_EQ(v.victims->cost.pdb_violations, 0);
}

TEST_F(PreemptionTest, APdbViolationIsAcceptedWhenNothingElseWorks) {
  AddNode("n", {SharingGpu("GPU-1", 8000)});
  HoldShared("db/guarded", 1, "n", {"GPU-1"}, 6000, 10, {{"app", "db"}});
  const model::Pod pod = PodBuilder("default/p").Priority(10).Container(1, 4000, 10).Build();
  const std::vector<DisruptionBudget> budgets{{"db", {{"app", "db"}}, 0}};
  NodeVictims v = Find(pod, "n", budgets);
  ASSERT_EQ(v.verdict, Verdict::kVictims);
  EXPECT_THAT(v.victims->pods, ElementsAre("db/guarded"));
  EXPECT_EQ(v.victims->cost.pdb_violations, 1);
}

TEST_F(PreemptionTest, PdbViolationsCountAsKubeSchedulerCountsThem) {
  const VictimCandidate a{"db/a", 0, 0, {{"app", "db"}}};
  const VictimCandidate b{"db/b", 0, 0, {{"app", "db"}, {"tier", "x"}}};
  const VictimCandidate other{"web/c", 0, 0, {{"app", "db"}}};
  const std::vector<const VictimCandidate*> victims{&a, &b, &other};
  // One disruption allowed: the second matching pod breaks it.
  EXPECT_EQ(CountPdbViolations(victims, std::vector<DisruptionBudget>{{"db", {{"app", "db"}}, 1}}),
            1);
  EXPECT_EQ(CountPdbViolations(victims, std::vector<DisruptionBudget>{{"db", {{"app", "db"}}, 2}}),
            0);
  // A pod two budgets select counts once.
  EXPECT_EQ(CountPdbViolations(victims, std::vector<DisruptionBudget>{{"db", {{"app", "db"}}, 0},
                                                                      {"db", {{"tier", "x"}}, 0}}),
            2);
  // An empty selector selects every pod of its namespace (the API's meaning).
  EXPECT_EQ(CountPdbViolations(victims, std::vector<DisruptionBudget>{{"db", {}, 0}}), 2);
  EXPECT_EQ(CountPdbViolations(victims, std::vector<DisruptionBudget>{{"web", {}, 1}}), 0);
}

TEST_F(PreemptionTest, EqualAndHigherPrioritiesAreNeverPreempted) {
  AddNode("n", {SharingGpu("GPU-1", 8000)});
  HoldShared("default/peer", 10, "n", {"GPU-1"}, 4000);
  HoldShared("default/boss", 20, "n", {"GPU-1"}, 4000);
  const model::Pod pod = PodBuilder("default/p").Priority(10).Container(1, 4000, 10).Build();
  EXPECT_EQ(Find(pod, "n").verdict, Verdict::kNoSet);
  HoldShared("default/peer", 9, "n", {"GPU-1"}, 4000);  // now below the preemptor
  NodeVictims v = Find(pod, "n");
  ASSERT_EQ(v.verdict, Verdict::kVictims);
  EXPECT_THAT(v.victims->pods, ElementsAre("default/peer"));
}

TEST_F(PreemptionTest, ANodeWhereNoSetWorksIsDropped) {
  AddNode("n", {SharingGpu("GPU-1", 8000)});
  HoldShared("default/a", 0, "n", {"GPU-1"}, 4000);
  const model::Pod too_big = PodBuilder("default/p").Priority(10).Container(1, 10000).Build();
  NodeVictims v = Find(too_big, "n");
  EXPECT_EQ(v.verdict, Verdict::kNoSet);
  EXPECT_FALSE(v.victims);
  EXPECT_EQ(Find(too_big, "unknown").verdict, Verdict::kNoSet);
}

TEST_F(PreemptionTest, WhatThePodItselfDecides) {
  AddNode("n", {SharingGpu("GPU-1", 8000)});
  HoldShared("default/a", 0, "n", {"GPU-1"}, 4000);
  EXPECT_EQ(Find(PodBuilder("default/p").Priority(10).Container(1, 2000).Build(), "n").verdict,
            Verdict::kFitsNow);
  EXPECT_EQ(Find(PodBuilder("default/cpu").Priority(10).Build(), "n").verdict, Verdict::kNotGpuPod);
  EXPECT_EQ(Find(PodBuilder("default/cpu").Priority(10).Build(), "unknown").verdict,
            Verdict::kNotGpuPod);
}

TEST_F(PreemptionTest, SparedPodsAreNeverVictims) {
  AddNode("n", {SharingGpu("GPU-1", 8000)});
  HoldShared("default/binding", 0, "n", {"GPU-1"}, 4000);
  HoldShared("default/running", 0, "n", {"GPU-1"}, 4000);
  const model::Pod pod = PodBuilder("default/p").Priority(10).Container(1, 4000, 10).Build();
  NodeVictims v = Find(pod, "n", {}, {"default/binding"});
  ASSERT_EQ(v.verdict, Verdict::kVictims);
  EXPECT_THAT(v.victims->pods, ElementsAre("default/running"));
}

// Past the set-size limit, kube-scheduler's reprieve pass still finds a set that works.
TEST_F(PreemptionTest, BeyondTheSizeLimitTheReprievePassFindsASet) {
  AddNode("n", {SharingGpu("GPU-1", 8000)});
  for (int i = 0; i < 4; ++i) {
    HoldShared("default/q" + std::to_string(i), i, "n", {"GPU-1"}, 2000, 5);
  }
  const model::Pod pod = PodBuilder("default/p").Priority(10).Container(1, 6000, 10).Build();
  PreemptionLimits limits;
  limits.max_victims = 2;
  NodeVictims v = Find(pod, "n", {}, {}, limits);
  ASSERT_EQ(v.verdict, Verdict::kVictims);
  EXPECT_FALSE(v.exhaustive);
  // Highest priority reprieved first: q3 stays, q2, q1, q0 go.
  EXPECT_THAT(v.victims->pods, ElementsAre("default/q2", "default/q1", "default/q0"));
  limits.max_victims = 4;
  v = Find(pod, "n", {}, {}, limits);
  EXPECT_TRUE(v.exhaustive);
  EXPECT_THAT(v.victims->pods, ElementsAre("default/q2", "default/q1", "default/q0"));
}

TEST_F(PreemptionTest, TheEvaluationBudgetStopsTheSearch) {
  AddNode("n", {SharingGpu("GPU-1", 8000)});
  for (int i = 0; i < 4; ++i) {
    HoldShared("default/q" + std::to_string(i), 0, "n", {"GPU-1"}, 2000, 5);
  }
  const model::Pod pod = PodBuilder("default/p").Priority(10).Container(1, 6000, 10).Build();
  PreemptionLimits limits;
  limits.max_evaluations = 3;
  NodeVictims v = Find(pod, "n", {}, {}, limits);
  ASSERT_EQ(v.verdict, Verdict::kVictims);
  EXPECT_FALSE(v.exhaustive);
  EXPECT_EQ(v.victims->pods.size(), 3U);
}

}  // namespace
}  // namespace tessera::sched
