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
    parsed_ = ParsePod(b.Build(), config::NvidiaConfig{}, defaults_);
    if (mix) mix_.Observe(DemandShape{1, 4000, 10, 0, ""});
    cycle_.emplace(parsed_.request.value(), parsed_.prefs->value(), 0, mix_, mig_mix_, defaults_);
    return *cycle_;
  }
  const state::NodeState& A() { return *state_.node("node-a"); }
  const state::NodeState& B() { return *state_.node("node-b"); }
  // node-b with 6000 MiB, 50 cores and one slot of its GPU in use (read the long way).
  state::NodeState BusyB() {
    state::NodeState busy = B();
    busy.usage[0].used = 1;
    busy.usage[0].used_mem = 6000;
    busy.usage[0].used_cores = 50;
    busy.summaries_current = false;
    return busy;
  }
  static NodeFit Fits(float score) {
    NodeFit fit;
    fit.fits = true;
    fit.score = score;
    return fit;
  }
  void Define(const std::string& definition) {
    defaults_.defined_node_policies.push_back(ParseNodePolicyDefinition(definition).value());
  }

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
  const state::NodeState busy = BusyB();
  const NodeRank empty_rank = RankNode(c, A(), Fits(9), NodeCapacity{});
  const NodeRank busy_rank = RankNode(c, busy, Fits(1), NodeCapacity{});
  EXPECT_TRUE(RanksBefore(empty_rank, busy_rank, A(), busy, c));
  EXPECT_FALSE(RanksBefore(busy_rank, empty_rank, busy, A(), c));
}

TEST_F(NodeRankingTest, HamiBinpackTakesTheFullestNode) {
  const CycleState& c = Cycle({{"hami.io/node-scheduler-policy", "binpack"}}, true);
  const state::NodeState busy = BusyB();
  const NodeRank empty_rank = RankNode(c, A(), Fits(9), NodeCapacity{});
  const NodeRank busy_rank = RankNode(c, busy, Fits(1), NodeCapacity{});
  EXPECT_TRUE(RanksBefore(busy_rank, empty_rank, busy, A(), c));
  EXPECT_FALSE(RanksBefore(empty_rank, busy_rank, A(), busy, c));
  // Equal scores: the first by name, whatever the fixed tie order says.
  const NodeRank b_rank = RankNode(c, B(), Fits(1), NodeCapacity{});
  EXPECT_TRUE(RanksBefore(empty_rank, b_rank, A(), B(), c));
  EXPECT_FALSE(RanksBefore(b_rank, empty_rank, B(), A(), c));
}

TEST_F(NodeRankingTest, HamiPoliciesRankByTheNodeScoreBeforeThePod) {
  const CycleState& c = Cycle({{"hami.io/node-scheduler-policy", "binpack"}}, true);
  const state::NodeState busy = BusyB();
  // The score after the pod (7) is not what HAMi ranks by.
  const NodeRank rank = RankNode(c, busy, Fits(7), NodeCapacity{});
  EXPECT_EQ(rank.score, NodeScore(busy, {}));
  EXPECT_GT(rank.score, 0);
  EXPECT_EQ(rank.bucket, -static_cast<double>(NodeScore(busy, {})));
  EXPECT_FALSE(rank.idle);
  EXPECT_FALSE(c.tessera_nodes());
  EXPECT_FALSE(c.rank_bound().enabled());
}

TEST_F(NodeRankingTest, ADefinedPolicyAddsItsPluginsScoresWithTheirWeights) {
  Define("mixed=fragmentation:1,hami-node-score:0.5,fullness:-2");
  const CycleState& c = Cycle({{"hami.io/node-scheduler-policy", "mixed"}}, true);
  EXPECT_TRUE(c.tessera_nodes());          // it counts fragmentation, so tessera's ties apply
  EXPECT_TRUE(c.by_fragmentation());       // and the fragmentation plugin has a mix to read
  EXPECT_FALSE(c.rank_bound().enabled());  // the bound floors fragmentation alone
  const state::NodeState busy = BusyB();
  NodeFit fit = Fits(4);
  fit.slots = {{DeviceAssignment{0, 4000, 0, -1, {}}}};
  const NodeCapacity capacity = CapacityOf(busy);
  const NodeRank rank = RankNode(c, busy, fit, capacity);
  // The fragmentation plugin's steps, as tessera alone ranks the same placement.
  const CycleState& alone = Cycle({}, true);
  const double steps = RankNode(alone, busy, fit, capacity).bucket;
  const double sum = 1 * -steps + 0.5 * NodeScore(busy, {}) + -2 * 4.0;
  EXPECT_DOUBLE_EQ(rank.bucket, -sum);
  EXPECT_EQ(rank.score, 4);  // tessera's ties read the fullness after the pod
}

TEST_F(NodeRankingTest, ADefinedPolicyOfHamiScoreAloneRanksLikeBinpackAndSpread) {
  Define("pack=hami-node-score:3");
  Define("unpack=hami-node-score:-0.25");
  const state::NodeState busy = BusyB();
  for (const auto& [named, defined] : std::vector<std::pair<std::string, std::string>>{
           {"binpack", "pack"}, {"spread", "unpack"}}) {
    const CycleState& by_name = Cycle({{"hami.io/node-scheduler-policy", named}}, true);
    const bool busy_first =
        RanksBefore(RankNode(by_name, busy, Fits(1), NodeCapacity{}),
                    RankNode(by_name, A(), Fits(9), NodeCapacity{}), busy, A(), by_name);
    const CycleState& by_definition = Cycle({{"hami.io/node-scheduler-policy", defined}}, true);
    EXPECT_EQ(RanksBefore(RankNode(by_definition, busy, Fits(1), NodeCapacity{}),
                          RankNode(by_definition, A(), Fits(9), NodeCapacity{}), busy, A(),
                          by_definition),
              busy_first)
        << defined;
  }
}

TEST_F(NodeRankingTest, FragmentationAloneWithAnyPositiveWeightIsTesserasRankAndKeepsTheBound) {
  Define("frag=fragmentation:2.5");
  const CycleState& c = Cycle({{"hami.io/node-scheduler-policy", "frag"}}, true);
  EXPECT_TRUE(c.rank_bound().enabled());
  NodeFit fit = Fits(4);
  fit.slots = {{DeviceAssignment{0, 4000, 0, -1, {}}}};
  const NodeCapacity capacity = CapacityOf(A());
  const double bucket = RankNode(c, A(), fit, capacity).bucket;
  EXPECT_EQ(bucket, RankNode(Cycle({}, true), A(), fit, capacity).bucket);
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
