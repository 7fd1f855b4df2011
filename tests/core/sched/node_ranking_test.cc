#include "core/sched/node_ranking.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/sched/node_scoring.h"
#include "support/builders.h"

namespace tessera::sched {
namespace {

using testing::NodeWith;
using testing::PodBuilder;
using testing::SharingGpu;

class NodeRankingTest : public ::testing::Test {
 protected:
  NodeRankingTest() : state_(config::SchedulerConfig{}) {
    for (const char* name : {"node-a", "node-b"}) {
      state_.UpsertNode(NodeWith(name, {SharingGpu(std::string("GPU-") + name)}));
    }
  }
  // A cycle for a one-GPU pod with the given annotations; `mix` says whether demand was seen.
  const CycleState& Cycle(std::map<std::string, std::string> annotations, bool mix) {
    PodBuilder b("ns/p");
    b.Container(1, 4000);
    for (const auto& [k, v] : annotations) b.Annotation(k, v);
    parsed_ = ParsePod(b.Build(), config::NvidiaConfig{}, PolicyDefaults{});
    if (mix) mix_.Observe(DemandShape{1, 4000, 10, 0, ""});
    cycle_.emplace(parsed_.request.value(), parsed_.prefs->value(), 0, mix_, mig_mix_, defaults_);
    return *cycle_;
  }
  const state::NodeState& A() { return *state_.node("node-a"); }
  const state::NodeState& B() { return *state_.node("node-b"); }

  state::ClusterState state_;
  PolicyDefaults defaults_;  // outlives the cycle state, which refers to it
  ParsedPod parsed_;
  DemandMix mix_;
  MigDemandMix mig_mix_;
  std::optional<CycleState> cycle_;
};

TEST_F(NodeRankingTest, ALowerCostBucketWinsWhateverTheScore) {
  const CycleState& c = Cycle({}, true);
  EXPECT_TRUE(RanksBefore(NodeRank{1, 0, true, false}, NodeRank{2, 9, false, false}, B(), A(), c));
  EXPECT_FALSE(RanksBefore(NodeRank{2, 9, false, false}, NodeRank{1, 0, true, false}, A(), B(), c));
}

TEST_F(NodeRankingTest, ByFragmentationANodeInUseComesBeforeAnIdleOne) {
  const CycleState& c = Cycle({}, true);
  EXPECT_TRUE(RanksBefore(NodeRank{0, 0, false, false}, NodeRank{0, 5, true, false}, B(), A(), c));
  EXPECT_FALSE(RanksBefore(NodeRank{0, 5, true, false}, NodeRank{0, 0, false, false}, A(), B(), c));
  // Equal otherwise: the fixed tie order (a hash of the name), the same in both directions.
  const bool ab = RanksBefore(NodeRank{}, NodeRank{}, A(), B(), c);
  const bool ba = RanksBefore(NodeRank{}, NodeRank{}, B(), A(), c);
  EXPECT_NE(ab, ba);
  EXPECT_EQ(ab, A().tie_order < B().tie_order);
}

TEST_F(NodeRankingTest, WithoutAMixTheFullestNodeWinsThenTheFirstByName) {
  const CycleState& c = Cycle({}, false);
  EXPECT_TRUE(RanksBefore(NodeRank{0, 3, false, false}, NodeRank{0, 2, false, false}, B(), A(), c));
  EXPECT_TRUE(RanksBefore(NodeRank{0, 2, false, false}, NodeRank{0, 2, false, false}, A(), B(), c));
  EXPECT_FALSE(
      RanksBefore(NodeRank{0, 2, false, false}, NodeRank{0, 2, false, false}, B(), A(), c));
}

TEST_F(NodeRankingTest, HamiSpreadTakesTheEmptiestNode) {
  const CycleState& c = Cycle({{"hami.io/node-scheduler-policy", "spread"}}, true);
  EXPECT_TRUE(RanksBefore(NodeRank{0, 1, false, false}, NodeRank{0, 2, false, false}, B(), A(), c));
  EXPECT_FALSE(
      RanksBefore(NodeRank{0, 2, false, false}, NodeRank{0, 1, false, false}, B(), A(), c));
}

TEST_F(NodeRankingTest, HamiPoliciesRankByTheNodeScoreBeforeThePod) {
  const CycleState& c = Cycle({{"hami.io/node-scheduler-policy", "binpack"}}, true);
  NodeFit fit;
  fit.fits = true;
  fit.score = 7;  // after the pod: not what HAMi ranks by
  NodeCapacity capacity;
  const NodeRank rank = RankNode(c, A(), fit, capacity);
  EXPECT_EQ(rank.score, NodeScore(A(), {}));
  EXPECT_EQ(rank.bucket, 0);
  EXPECT_TRUE(rank.idle);
}

TEST_F(NodeRankingTest, TesseraRanksByTheFragmentationThePodAdds) {
  const CycleState& c = Cycle({}, true);
  NodeFit fit;
  fit.fits = true;
  fit.score = 4;
  fit.slots = {{DeviceAssignment{0, 4000, 0, -1, {}}}};
  NodeCapacity capacity = CapacityOf(A());
  const NodeRank rank = RankNode(c, A(), fit, capacity);
  EXPECT_EQ(rank.score, 4);
  // The growth in whole quanta of the fragmentation the node's capacity shows before and after.
  NodeCapacity after = capacity;
  after.gpu_free_mem[0] -= 4000;  // the one assignment: 4000 MiB of GPU 0
  EXPECT_EQ(rank.bucket, std::floor((NodeFragmentation(after, c.target()) -
                                     NodeFragmentation(capacity, c.target())) /
                                    0.04));
  NodeFit mig = fit;
  mig.mig_planned = true;
  mig.mig_drop = 3e-6;
  EXPECT_EQ(RankNode(c, A(), mig, capacity).bucket, 3);
}

}  // namespace
}  // namespace tessera::sched
