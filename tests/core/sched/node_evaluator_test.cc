#include "core/sched/node_evaluator.h"

#include <gtest/gtest.h>

#include "support/builders.h"

namespace tessera::sched {
namespace {

using testing::A100Mig;
using testing::NodeWith;
using testing::PodBuilder;
using testing::SharingGpu;

class NodeEvaluatorTest : public ::testing::Test {
 protected:
  NodeEvaluatorTest() : state_(config::SchedulerConfig{}) {}

  const CycleState& Cycle(const model::Pod& pod) {
    parsed_ = ParsePod(pod, config::NvidiaConfig{}, PolicyDefaults{});
    cycle_.emplace(parsed_.request.value(), parsed_.prefs->value(), parsed_.cpu_milli, mix_,
                   mig_mix_, defaults_);
    return *cycle_;
  }

  state::ClusterState state_;
  PolicyDefaults defaults_;  // outlives the cycle state, which refers to it
  ParsedPod parsed_;
  DemandMix mix_;
  MigDemandMix mig_mix_;
  std::optional<CycleState> cycle_;
};

TEST_F(NodeEvaluatorTest, AFittingNodeGetsItsDevicesAndRank) {
  state_.UpsertNode(NodeWith("node-a", {SharingGpu("GPU-a", 16000)}));
  NodeEvaluator evaluator(Cycle(PodBuilder("ns/p").Container(1, 4000, 20).Build()));
  const state::NodeState& node = *state_.node("node-a");
  ASSERT_TRUE(evaluator.MayFit(node));
  NodeRank rank;
  const NodeFit fit = evaluator.FitAndRank(node, &rank);
  ASSERT_TRUE(fit.fits) << FormatNodeStatus(fit.status);
  ASSERT_EQ(fit.slots.size(), 1U);
  EXPECT_EQ(fit.slots[0].at(0).mem, 4000);
  EXPECT_EQ(fit.slots[0].at(0).cores, 20);
  EXPECT_TRUE(rank.idle);
  EXPECT_EQ(rank.score, fit.score);
}

TEST_F(NodeEvaluatorTest, TheCheapFilterRulesOutWhatTheFullFilterRefuses) {
  state_.UpsertNode(NodeWith("node-a", {SharingGpu("GPU-a", 8000)}));
  NodeEvaluator evaluator(Cycle(PodBuilder("ns/p").Container(1, 12000).Build()));
  const state::NodeState& node = *state_.node("node-a");
  EXPECT_FALSE(evaluator.MayFit(node));
  NodeRank rank;
  const NodeFit fit = evaluator.FitAndRank(node, &rank);
  EXPECT_FALSE(fit.fits);
  EXPECT_EQ(FormatNodeStatus(evaluator.RefusalReason(node, fit)), FormatNodeStatus(fit.status));
  EXPECT_EQ(FormatNodeStatus(fit.status), "1/1 CardInsufficientMemory");
}

TEST_F(NodeEvaluatorTest, AMigPlanThatFindsNothingStillGivesHamisReason) {
  state_.UpsertNode(NodeWith("node-m", {A100Mig("GPU-m")}));
  NodeEvaluator evaluator(Cycle(PodBuilder("ns/p").Container(2, 30000).MigMode().Build()));
  const state::NodeState& node = *state_.node("node-m");
  NodeRank rank;
  const NodeFit fit = evaluator.FitAndRank(node, &rank);
  ASSERT_FALSE(fit.fits);
  // The plan does not say why; the reason is worked out when asked for.
  EXPECT_EQ(fit.status.code, NodeStatus::Code::kNotWorkedOut);
  const NodeStatus reason = evaluator.RefusalReason(node, fit);
  EXPECT_EQ(reason.code, NodeStatus::Code::kUnschedulable);
  EXPECT_FALSE(FormatNodeStatus(reason).empty());
  EXPECT_EQ(FormatNodeStatus(reason),
            FormatNodeStatus(FitPodOnNode(node, cycle_->request(), cycle_->prefs()).status));
}

TEST_F(NodeEvaluatorTest, PreemptionIsAnsweredPerSpecUnlessTheUuidsTellNodesApart) {
  state_.UpsertNode(NodeWith("small-1", {SharingGpu("GPU-s1", 8000)}));
  state_.UpsertNode(NodeWith("small-2", {SharingGpu("GPU-s2", 8000)}));
  state_.UpsertNode(NodeWith("large", {SharingGpu("GPU-l", 32768)}));
  {
    PreemptionCheck check(Cycle(PodBuilder("ns/p").Container(1, 12000).Build()));
    EXPECT_FALSE(check.Resolvable(*state_.node("small-1")));
    EXPECT_FALSE(check.Resolvable(*state_.node("small-2")));
    EXPECT_TRUE(check.Resolvable(*state_.node("large")));
  }
  {
    // Named UUIDs: small-1's GPU is excluded, so only the other node of its spec could help.
    PreemptionCheck check(Cycle(PodBuilder("ns/p")
                                    .Container(1, 4000)
                                    .Annotation("nvidia.com/nouse-gpuuuid", "GPU-s1")
                                    .Build()));
    EXPECT_FALSE(check.Resolvable(*state_.node("small-1")));
    EXPECT_TRUE(check.Resolvable(*state_.node("small-2")));
  }
}

}  // namespace
}  // namespace tessera::sched
