#include "core/sched/defrag.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "core/config/scheduler_config.h"
#include "core/sched/defrag_format.h"
#include "support/builders.h"
#include "support/reservations.h"

namespace tessera::sched {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::NodeWith;
using testing::PodBuilder;
using testing::RtxPro6000Mig;
using testing::SharingGpu;

class DefragTest : public ::testing::Test {
 protected:
  DefragTest() : state_(config::SchedulerConfig{}) {}

  void AddNode(const std::string& name, const std::vector<model::GpuDevice>& gpus) {
    state_.UpsertNode(NodeWith(name, gpus));
  }
  // A running pod holding one 1g.24gb instance of the RTX PRO 6000 `uuid` at slice `start`,
  // owned by a controller of `kind` ("" for none), and its spec.
  void RunMig(const std::string& key, const std::string& node, const std::string& uuid,
              uint32_t start, const std::string& kind = "ReplicaSet",
              std::map<std::string, std::string> labels = {}) {
    state::PodReservation r = testing::RtxPro1g24gbPod(key, node, uuid, start);
    Keep(std::move(r), PodBuilder(key).MigMode().Container(1, 24000).Build(), kind,
         std::move(labels));
  }
  // A running pod holding `mem` MiB of the shared GPU `uuid`, and its spec.
  void RunShared(const std::string& key, const std::string& node, const std::string& uuid, int mem,
                 const std::string& kind = "ReplicaSet") {
    state::PodReservation r;
    r.key = key;
    r.uid = "uid-" + key;
    r.node = node;
    r.devices = {{{uuid, "NVIDIA", mem, 10}}};
    Keep(std::move(r), PodBuilder(key).Container(1, mem, 10).Build(), kind, {});
  }
  DefragPlan Plan(const std::vector<model::Pod>& pending, DefragLimits limits = {},
                  const std::vector<model::DisruptionBudget>& budgets = {},
                  const std::vector<model::JobRetries>& jobs = {}) const {
    return PlanDefrag(state_, pending, running_, PolicyDefaults{}, budgets, jobs, limits);
  }
  // A pod asking one 2g.48gb instance: two adjacent 1g.24gb placements of one GPU.
  static model::Pod TwoSlicePod(const std::string& key, int32_t priority = 0) {
    return PodBuilder(key).Priority(priority).MigMode().Container(1, 48000).Build();
  }
  // node-a: default/x (movable) at 0, the unmovable default/z1 and z2 at 6 and 9, so no 2g.48gb
  // fits; node-b: the unmovable y and w at 3 and 6, so no 2g.48gb fits there, and the 1g.24gb
  // placements at 0 and 9 are free.
  void MigClusterWhereOneMoveAdmits() {
    AddNode("node-a", {RtxPro6000Mig("GPU-a")});
    AddNode("node-b", {RtxPro6000Mig("GPU-b")});
    RunMig("default/x", "node-a", "GPU-a", 0);
    RunMig("default/z1", "node-a", "GPU-a", 6, "");
    RunMig("default/z2", "node-a", "GPU-a", 9, "");
    RunMig("default/y", "node-b", "GPU-b", 3, "");
    RunMig("default/w", "node-b", "GPU-b", 6, "");
  }

  // node-a: the Job train's pods at the given starts, the unmovable z1 and z2 at 6 and 9;
  // node-b: the unmovable y and w at 3 and 6 (0 and 9 free for 1g.24gb).
  void ClusterWithJobPods(const std::vector<std::pair<std::string, uint32_t>>& job_pods) {
    AddNode("node-a", {RtxPro6000Mig("GPU-a")});
    AddNode("node-b", {RtxPro6000Mig("GPU-b")});
    for (const auto& [key, start] : job_pods) {
      RunMig(key, "node-a", "GPU-a", start, "Job", {{model::kJobControllerUidLabel, "job-x"}});
    }
    RunMig("default/z1", "node-a", "GPU-a", 6, "");
    RunMig("default/z2", "node-a", "GPU-a", 9, "");
    RunMig("default/y", "node-b", "GPU-b", 3, "");
    RunMig("default/w", "node-b", "GPU-b", 6, "");
  }
  static model::JobRetries TrainJob() {
    model::JobRetries job;
    job.ns = "default";
    job.name = "train";
    job.uid = "job-x";
    return job;
  }

  state::ClusterState state_;
  std::vector<model::Pod> running_;

 private:
  void Keep(state::PodReservation r, model::Pod spec, const std::string& kind,
            std::map<std::string, std::string> labels) {
    r.controller_kind = kind;
    r.labels = labels;
    spec.controller_kind = kind;
    spec.labels = std::move(labels);
    state_.AddPod(std::move(r));
    running_.push_back(std::move(spec));
  }
};

// What a view keeps to place a running pod again: its requests and the annotations scheduling
// reads, not what placing it wrote.
TEST(SpecToPlaceAgainTest, KeepsWhatSchedulingReadsAndDropsThePlacement) {
  model::Pod pod = PodBuilder("ns/w")
                       .Container(1, 8000, 20)
                       .MigMode()
                       .Annotation("nvidia.com/use-gputype", "A100")
                       .Annotation("hami.io/gpu-scheduler-policy", "spread")
                       .Annotation("hami.io/bind-phase", "success")
                       .Annotation("hami.io/vgpu-mig-allocations", "[]")
                       .Annotation("kubectl.kubernetes.io/last-applied-configuration", "{}")
                       .PlacedOn("n1", "GPU-1", 8000)
                       .Label("app", "web")
                       .Build();
  pod.resource_version = "42";
  pod.init_container_statuses.push_back({});
  const model::Pod spec = SpecToPlaceAgain(pod);
  ASSERT_EQ(spec.containers.size(), 1U);
  EXPECT_EQ(spec.containers[0].limits, pod.containers[0].limits);
  EXPECT_EQ(spec.labels, pod.labels);
  EXPECT_EQ(spec.annotations,
            (std::map<std::string, std::string>{{"hami.io/gpu-scheduler-policy", "spread"},
                                                {"nvidia.com/use-gputype", "A100"},
                                                {"nvidia.com/vgpu-mode", "mig"}}));
  EXPECT_TRUE(spec.resource_version.empty());
  EXPECT_TRUE(spec.init_container_statuses.empty());
}

TEST_F(DefragTest, MigPodNoGpuCanTakeIsAdmittedByMovingOnePod) {
  MigClusterWhereOneMoveAdmits();
  const DefragPlan plan = Plan({TwoSlicePod("default/big")});
  ASSERT_EQ(plan.mode, DefragPlan::Mode::kAdmitPending) << FormatDefragPlan(plan);
  ASSERT_EQ(plan.steps.size(), 1U);
  const DefragStep& step = plan.steps[0];
  EXPECT_EQ(step.pod, "default/x");
  EXPECT_EQ(step.node, "node-a");
  ASSERT_EQ(step.frees.size(), 1U);
  EXPECT_EQ(step.frees[0].uuid, "GPU-a");
  EXPECT_EQ(step.frees[0].mig_profile, "1g.24gb");
  EXPECT_EQ(step.frees[0].placement, (model::Placement{0, 3}));
  EXPECT_EQ(step.freed_mem, 24192);
  // Not back onto node-a, whose freed slices the pending pod takes.
  EXPECT_EQ(step.replaced_node, "node-b");
  ASSERT_EQ(step.replaced_on.size(), 1U);
  EXPECT_EQ(step.replaced_on[0].uuid, "GPU-b");
  EXPECT_EQ(step.admits, "default/big");
  ASSERT_EQ(plan.admitted.size(), 1U);
  EXPECT_EQ(plan.admitted[0].pod, "default/big");
  EXPECT_EQ(plan.admitted[0].node, "node-a");
  ASSERT_EQ(plan.admitted[0].devices.size(), 1U);
  EXPECT_EQ(plan.admitted[0].devices[0].mig_profile, "2g.48gb");
  EXPECT_EQ(plan.admitted[0].devices[0].placement, (model::Placement{0, 6}));
  EXPECT_THAT(plan.admitted[0].evicted, ElementsAre("default/x"));
  EXPECT_THAT(plan.not_admitted, IsEmpty());
  // The reservations a caller commits to carry the plan out: what the steps describe.
  EXPECT_EQ(plan.admitted[0].reservation.key, "default/big");
  EXPECT_EQ(plan.admitted[0].reservation.node, "node-a");
  ASSERT_EQ(plan.admitted[0].reservation.mig.size(), 1U);
  EXPECT_EQ(plan.admitted[0].reservation.mig[0].placement, (model::Placement{0, 6}));
  EXPECT_EQ(step.replaced_reservation.key, "default/x");
  EXPECT_EQ(step.replaced_reservation.node, "node-b");
  ASSERT_EQ(step.replaced_reservation.mig.size(), 1U);
  EXPECT_EQ(step.replaced_reservation.mig[0].gpu_uuid, "GPU-b");
  // The caller's state is not changed.
  EXPECT_EQ(state_.pod("default/x")->node, "node-a");
  EXPECT_EQ(state_.pod("default/big"), nullptr);
}

TEST_F(DefragTest, SharedGpuMemoryIsFreedByMovingOnePod) {
  AddNode("node-a", {SharingGpu("GPU-a", 16000)});
  AddNode("node-b", {SharingGpu("GPU-b", 16000)});
  RunShared("default/x", "node-a", "GPU-a", 6000);
  RunShared("default/u", "node-a", "GPU-a", 6000, "");
  RunShared("default/v", "node-b", "GPU-b", 8000, "");
  // 4000 MiB free on node-a, 8000 on node-b: 9000 fits on neither.
  const DefragPlan plan = Plan({PodBuilder("default/p").Container(1, 9000, 10).Build()});
  ASSERT_EQ(plan.steps.size(), 1U) << FormatDefragPlan(plan);
  EXPECT_EQ(plan.steps[0].pod, "default/x");
  EXPECT_EQ(plan.steps[0].freed_mem, 6000);
  EXPECT_EQ(plan.steps[0].replaced_node, "node-b");
  ASSERT_EQ(plan.admitted.size(), 1U);
  EXPECT_EQ(plan.admitted[0].node, "node-a");
  EXPECT_EQ(plan.admitted[0].devices[0].uuid, "GPU-a");
}

TEST_F(DefragTest, UnmovablePodsAreNeverChosen) {
  AddNode("node-a", {RtxPro6000Mig("GPU-a")});
  AddNode("node-b", {RtxPro6000Mig("GPU-b")});
  // Any two neighbours on node-a would make room; none may go.
  RunMig("default/bare", "node-a", "GPU-a", 0, "");
  RunMig("default/pinned", "node-a", "GPU-a", 3, "ReplicaSet", {{"tessera.io/no-defrag", ""}});
  RunMig("default/guarded", "node-a", "GPU-a", 6, "StatefulSet", {{"app", "db"}});
  RunMig("default/daemon", "node-a", "GPU-a", 9, "DaemonSet");
  // node-b could take two of them (its placements at 0 and 9), not the pending pod.
  RunMig("default/y", "node-b", "GPU-b", 3, "");
  RunMig("default/w", "node-b", "GPU-b", 6, "");
  const std::vector<model::DisruptionBudget> budgets{{"default", {{"app", "db"}}, 0, {}, "db-pdb"}};
  const DefragPlan plan = Plan({TwoSlicePod("default/big")}, {}, budgets);
  EXPECT_EQ(plan.mode, DefragPlan::Mode::kNothing) << FormatDefragPlan(plan);
  EXPECT_THAT(plan.steps, IsEmpty());
  EXPECT_THAT(plan.unmovable.at("default/bare"), HasSubstr("no controller"));
  EXPECT_THAT(plan.unmovable.at("default/pinned"), HasSubstr("tessera.io/no-defrag"));
  EXPECT_THAT(plan.unmovable.at("default/guarded"), HasSubstr("default/db-pdb"));
  EXPECT_THAT(plan.unmovable.at("default/daemon"), HasSubstr("DaemonSet"));
  EXPECT_TRUE(plan.not_admitted.contains("default/big"));
  EXPECT_THAT(plan.why_empty, HasSubstr("no pod holding GPUs may move"));
}

// Both pods of a budget that allows one disruption are needed: the pair would break it, so the
// plan takes it only when the budget allows two.
TEST_F(DefragTest, BudgetsCountOverThePlansEvictionsTogether) {
  AddNode("node-a", {RtxPro6000Mig("GPU-a")});
  AddNode("node-b", {RtxPro6000Mig("GPU-b")});
  RunMig("default/a0", "node-a", "GPU-a", 0, "");
  RunMig("default/a3", "node-a", "GPU-a", 3, "");
  RunMig("default/db6", "node-a", "GPU-a", 6, "StatefulSet", {{"app", "db"}});
  RunMig("default/db9", "node-a", "GPU-a", 9, "StatefulSet", {{"app", "db"}});
  RunMig("default/y", "node-b", "GPU-b", 3, "");
  RunMig("default/w", "node-b", "GPU-b", 6, "");
  model::DisruptionBudget budget{"default", {{"app", "db"}}, 1, {}, "db-pdb"};
  EXPECT_THAT(Plan({TwoSlicePod("default/big")}, {}, {budget}).steps, IsEmpty());
  budget.disruptions_allowed = 2;
  const DefragPlan plan = Plan({TwoSlicePod("default/big")}, {}, {budget});
  ASSERT_EQ(plan.steps.size(), 2U) << FormatDefragPlan(plan);
  EXPECT_EQ(plan.steps[0].pod, "default/db6");
  EXPECT_EQ(plan.steps[1].pod, "default/db9");
  for (const DefragStep& step : plan.steps) EXPECT_EQ(step.replaced_node, "node-b");
}

TEST_F(DefragTest, ASetWhoseEvictedPodCannotBePlacedAgainIsRejected) {
  MigClusterWhereOneMoveAdmits();
  // node-b's last two 1g.24gb placements taken: default/x would have nowhere to go.
  RunMig("default/b0", "node-b", "GPU-b", 0, "");
  RunMig("default/b9", "node-b", "GPU-b", 9, "");
  const DefragPlan plan = Plan({TwoSlicePod("default/big")});
  EXPECT_THAT(plan.steps, IsEmpty()) << FormatDefragPlan(plan);
  EXPECT_THAT(plan.not_admitted.at("default/big"), HasSubstr("placed again"));
}

TEST_F(DefragTest, MaxEvictionsIsRespected) {
  AddNode("node-a", {RtxPro6000Mig("GPU-a")});
  model::GpuDevice second = RtxPro6000Mig("GPU-b2");
  second.index = 1;
  AddNode("node-b", {RtxPro6000Mig("GPU-b1"), second});
  RunMig("default/a0", "node-a", "GPU-a", 0);
  RunMig("default/a3", "node-a", "GPU-a", 3);
  RunMig("default/a6", "node-a", "GPU-a", 6);
  RunMig("default/a9", "node-a", "GPU-a", 9);
  // node-b: six 1g.24gb placements free, no whole GPU.
  RunMig("default/b1", "node-b", "GPU-b1", 0, "");
  RunMig("default/b2", "node-b", "GPU-b2", 0, "");
  // A 4g.96gb needs a whole GPU: four evictions.
  const model::Pod whole = PodBuilder("default/whole").MigMode().Container(1, 90000).Build();
  DefragLimits limits;
  limits.max_evictions = 3;
  const DefragPlan three = Plan({whole}, limits);
  EXPECT_THAT(three.steps, IsEmpty()) << FormatDefragPlan(three);
  EXPECT_TRUE(three.not_admitted.contains("default/whole"));
  limits.max_evictions = 4;
  const DefragPlan four = Plan({whole}, limits);
  ASSERT_EQ(four.steps.size(), 4U) << FormatDefragPlan(four);
  for (const DefragStep& step : four.steps) EXPECT_EQ(step.replaced_node, "node-b");
}

// Two pending pods each needing one eviction, room in the plan for one: the higher priority goes
// first, though it came later.
TEST_F(DefragTest, HighestPriorityFirstThenOldest) {
  MigClusterWhereOneMoveAdmits();
  DefragLimits limits;
  limits.max_evictions = 1;
  const DefragPlan plan =
      Plan({TwoSlicePod("default/older", 1), TwoSlicePod("default/urgent", 5)}, limits);
  ASSERT_EQ(plan.steps.size(), 1U) << FormatDefragPlan(plan);
  ASSERT_EQ(plan.admitted.size(), 1U);
  EXPECT_EQ(plan.admitted[0].pod, "default/urgent");
  EXPECT_EQ(plan.not_admitted.at("default/older"), "the plan's evictions are spent");
  // At one priority, the older.
  const DefragPlan same =
      Plan({TwoSlicePod("default/older", 1), TwoSlicePod("default/newer", 1)}, limits);
  ASSERT_EQ(same.admitted.size(), 1U) << FormatDefragPlan(same);
  EXPECT_EQ(same.admitted[0].pod, "default/older");
}

// The same cluster built in two orders, planned twice each: one plan. Two pending pods, several
// sets of one eviction that would do, on node-a and node-c.
TEST_F(DefragTest, SameInputSamePlan) {
  const std::vector<model::Pod> pending{TwoSlicePod("default/big"), TwoSlicePod("default/big2")};
  auto plan_built = [&](bool reversed) {
    state_ = state::ClusterState(config::SchedulerConfig{});
    running_.clear();
    std::vector<std::function<void()>> adds{[&] { AddNode("node-a", {RtxPro6000Mig("GPU-a")}); },
                                            [&] { AddNode("node-b", {RtxPro6000Mig("GPU-b")}); },
                                            [&] { AddNode("node-c", {RtxPro6000Mig("GPU-c")}); },
                                            [&] { RunMig("default/x", "node-a", "GPU-a", 0); },
                                            [&] { RunMig("default/z1", "node-a", "GPU-a", 6, ""); },
                                            [&] { RunMig("default/z2", "node-a", "GPU-a", 9, ""); },
                                            [&] { RunMig("default/y", "node-b", "GPU-b", 3, ""); },
                                            [&] { RunMig("default/w", "node-b", "GPU-b", 6, ""); },
                                            [&] { RunMig("default/c0", "node-c", "GPU-c", 0); },
                                            [&] { RunMig("default/c9", "node-c", "GPU-c", 9); }};
    if (reversed) std::reverse(adds.begin() + 3, adds.end());  // nodes first, pods in reverse
    for (const auto& add : adds) add();
    return DefragPlanToJson(Plan(pending)).dump();
  };
  const std::string first = plan_built(false);
  EXPECT_EQ(plan_built(false), first);
  EXPECT_EQ(plan_built(true), first);
  EXPECT_THAT(first, HasSubstr("\"admits\":\"default/big\""));
  EXPECT_THAT(first, HasSubstr("\"admits\":\"default/big2\""));
}

// Nothing pending: default/x alone on node-a keeps that GPU from taking a 4g.96gb; moving it to
// node-b's free placement empties node-a.
TEST_F(DefragTest, WithNothingPendingAMoveMustGainTheMinimum) {
  AddNode("node-a", {RtxPro6000Mig("GPU-a")});
  AddNode("node-b", {RtxPro6000Mig("GPU-b")});
  RunMig("default/x", "node-a", "GPU-a", 0);
  RunMig("default/y", "node-b", "GPU-b", 0, "");
  RunMig("default/w", "node-b", "GPU-b", 6, "");
  DefragLimits limits;
  limits.min_gain = 0.5;
  const DefragPlan plan = Plan({}, limits);
  ASSERT_EQ(plan.mode, DefragPlan::Mode::kRaisePlaceability) << FormatDefragPlan(plan);
  ASSERT_EQ(plan.steps.size(), 1U);
  EXPECT_EQ(plan.steps[0].pod, "default/x");
  EXPECT_EQ(plan.steps[0].replaced_node, "node-b");
  EXPECT_GE(plan.steps[0].placeability_gain, 0.5);
  EXPECT_NEAR(plan.after.mig_placeability - plan.before.mig_placeability,
              plan.steps[0].placeability_gain, 1e-6);
  // The same move, asked to gain more than it does, is not made.
  limits.min_gain = plan.steps[0].placeability_gain + 1;
  const DefragPlan none = Plan({}, limits);
  EXPECT_THAT(none.steps, IsEmpty()) << FormatDefragPlan(none);
  EXPECT_THAT(none.why_empty, HasSubstr("no pod is pending"));
  EXPECT_DOUBLE_EQ(none.after.mig_placeability, none.before.mig_placeability);
  // With mode (b) off, the move that qualified is not made either.
  limits.min_gain = 0.5;
  limits.raise_placeability = false;
  const DefragPlan off = Plan({}, limits);
  EXPECT_EQ(off.mode, DefragPlan::Mode::kNothing);
  EXPECT_THAT(off.steps, IsEmpty()) << FormatDefragPlan(off);
}

TEST_F(DefragTest, WithNothingPendingSharedGpusAreConsolidated) {
  AddNode("node-a", {SharingGpu("GPU-a", 16000)});
  AddNode("node-b", {SharingGpu("GPU-b", 16000)});
  RunShared("default/x", "node-a", "GPU-a", 8000);
  RunShared("default/v", "node-b", "GPU-b", 6000, "");
  // A 12000 MiB request was seen: neither GPU can take one now (8000 and 10000 MiB free);
  // node-a can once x moves to node-b.
  running_.push_back(PodBuilder("default/seen").Container(1, 12000, 10).Build());
  const DefragPlan plan = Plan({});
  ASSERT_EQ(plan.steps.size(), 1U) << FormatDefragPlan(plan);
  EXPECT_EQ(plan.steps[0].pod, "default/x");
  EXPECT_EQ(plan.steps[0].replaced_node, "node-b");
  EXPECT_GE(plan.steps[0].fragmentation_drop, 0.1);
  EXPECT_LT(plan.after.sharing_fragmentation, plan.before.sharing_fragmentation);
  DefragLimits limits;
  limits.min_fragmentation_drop = plan.steps[0].fragmentation_drop + 0.5;
  EXPECT_THAT(Plan({}, limits).steps, IsEmpty());
}

// A scheduler's observed mix remembers requests of pods that have ended; the pods alone do not.
TEST_F(DefragTest, ModeBMeasuresForTheObservedDemandWhenGiven) {
  AddNode("node-a", {SharingGpu("GPU-a", 16000)});
  AddNode("node-b", {SharingGpu("GPU-b", 16000)});
  RunShared("default/x", "node-a", "GPU-a", 8000);
  RunShared("default/v", "node-b", "GPU-b", 6000, "");
  // The running pods' own requests (8000 and 6000 MiB) fit either GPU now: no move helps them.
  EXPECT_THAT(Plan({}).steps, IsEmpty());
  DemandMix seen(PolicyDefaults{}.demand_decay);
  for (const int mem : {12000, 8000, 6000}) seen.Observe(DemandShape{1, mem, 10, 0, ""});
  const MigDemandMix no_mig;
  const DefragPlan plan = PlanDefrag(state_, {}, running_, PolicyDefaults{}, {}, {}, {},
                                     ObservedDemand{&seen, &no_mig});
  ASSERT_EQ(plan.steps.size(), 1U) << FormatDefragPlan(plan);
  EXPECT_EQ(plan.steps[0].pod, "default/x");
}

// A Job's pod counts against its backoffLimit when evicted: it moves only while the Job keeps a
// retry for its own failures, or when its podFailurePolicy ignores evictions.
TEST_F(DefragTest, JobPodMovesOnlyWhileItsJobCanSpareARetry) {
  ClusterWithJobPods({{"default/x", 0}});
  model::JobRetries job = TrainJob();
  job.backoff_limit = 0;  // the usual setting of a training Job: no retry at all
  DefragPlan plan = Plan({TwoSlicePod("default/big")}, {}, {}, {job});
  EXPECT_THAT(plan.steps, IsEmpty());
  EXPECT_THAT(plan.unmovable["default/x"],
              HasSubstr("default/train would be left without a retry"));

  job.backoff_limit = 6;
  job.failed = 5;
  plan = Plan({TwoSlicePod("default/big")}, {}, {}, {job});
  EXPECT_THAT(plan.steps, IsEmpty());
  EXPECT_THAT(plan.unmovable["default/x"], HasSubstr("backoffLimit 6, 5 failed"));

  job.failed = 4;
  plan = Plan({TwoSlicePod("default/big")}, {}, {}, {job});
  ASSERT_EQ(plan.steps.size(), 1U) << FormatDefragPlan(plan);
  EXPECT_EQ(plan.steps[0].pod, "default/x");

  job.backoff_limit = 0;
  job.failed = 0;
  job.ignores_disruption = true;
  plan = Plan({TwoSlicePod("default/big")}, {}, {}, {job});
  ASSERT_EQ(plan.steps.size(), 1U) << FormatDefragPlan(plan);

  // A Job not listed, or a pod that does not say which Job it belongs to, stays.
  plan = Plan({TwoSlicePod("default/big")});
  EXPECT_THAT(plan.steps, IsEmpty());
  EXPECT_THAT(plan.unmovable["default/x"], HasSubstr("its Job is not known"));
  job.uid = "another";
  plan = Plan({TwoSlicePod("default/big")}, {}, {}, {job});
  EXPECT_THAT(plan.unmovable["default/x"], HasSubstr("its Job is not known"));
}

// Two pods of one Job in one set: the retries the Job can spare bound the whole set.
TEST_F(DefragTest, OneJobsRetriesBoundEveryEvictionOfItsPodsTogether) {
  ClusterWithJobPods({{"default/x1", 0}, {"default/x2", 3}});
  model::JobRetries job = TrainJob();
  job.backoff_limit = 2;  // one eviction to spare
  DefragPlan plan = Plan({TwoSlicePod("default/big")}, {}, {}, {job});
  EXPECT_THAT(plan.steps, IsEmpty()) << FormatDefragPlan(plan);
  job.backoff_limit = 3;  // two
  plan = Plan({TwoSlicePod("default/big")}, {}, {}, {job});
  ASSERT_EQ(plan.steps.size(), 2U) << FormatDefragPlan(plan);
  EXPECT_THAT(plan.admitted, ::testing::SizeIs(1));
}

// kube-scheduler's own resource fit comes before the extender: a pod is never planned onto a
// node whose allocatable CPU it does not fit in.
TEST_F(DefragTest, AnEvictedPodIsNotPlacedAgainWhereItsCpuDoesNotFit) {
  for (const char* cpu : {"500m", "2"}) {
    state_ = state::ClusterState(config::SchedulerConfig{});
    running_.clear();
    MigClusterWhereOneMoveAdmits();
    model::Node b = NodeWith("node-b", {RtxPro6000Mig("GPU-b")});
    b.allocatable["cpu"] = cpu;
    state_.UpsertNode(b);
    for (model::Pod& spec : running_) {
      if (spec.Key() == "default/x") spec.containers[0].requests["cpu"] = "1";
    }
    const DefragPlan plan = Plan({TwoSlicePod("default/big")});
    if (std::string(cpu) == "500m") {
      EXPECT_THAT(plan.steps, IsEmpty()) << FormatDefragPlan(plan);
    } else {
      ASSERT_EQ(plan.steps.size(), 1U) << FormatDefragPlan(plan);
      EXPECT_EQ(plan.steps[0].replaced_node, "node-b");
    }
  }
}

TEST(DefragMovable, OnlyPodsAControllerRecreatesMayMove) {
  state::PodReservation r;
  r.key = "default/p";
  const model::Pod spec = PodBuilder("default/p").Build();
  EXPECT_THAT(WhyNotMovable(r, &spec), HasSubstr("no controller"));
  for (const std::string kind : {"ReplicaSet", "StatefulSet", "Job"}) {
    r.controller_kind = kind;
    EXPECT_EQ(WhyNotMovable(r, &spec), "") << kind;
  }
  EXPECT_THAT(WhyNotMovable(r, nullptr), HasSubstr("no pod spec"));
  r.controller_kind = "Node";
  EXPECT_THAT(WhyNotMovable(r, &spec), HasSubstr("(Node)"));
}

}  // namespace
}  // namespace tessera::sched
