#include "sim/replay/policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace tessera::sim::replay {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TracePod Pod(int64_t cpu, int gpus, int64_t milli) {
  return TracePod{"p", cpu, 1, gpus, gpus > 0 ? milli : 0, {}};
}

void Place(ReplayCluster& cluster, int node, const TracePod& pod, std::vector<int> gpus) {
  ASSERT_TRUE(cluster.Allocate(node, pod, gpus).ok());
}

// The built-in policies choose before they allocate: their choice, without placing the pod.
ChoosingPolicy& Chooser(Policy& policy) {
  auto* chooser = dynamic_cast<ChoosingPolicy*>(&policy);
  EXPECT_NE(chooser, nullptr) << policy.Name();
  return *chooser;
}

std::optional<Choice> Choose(std::string_view policy_name, const ReplayCluster& cluster,
                             const TracePod& pod, const TargetWorkload& target = {}) {
  auto policy = MakePolicy(policy_name, target);
  EXPECT_TRUE(policy.ok());
  std::mt19937_64 rng(1);
  return Chooser(**policy).Choose(cluster, pod, rng);
}

// best_fit_score.go: 100 * (1 - 0.5 * cpu_left / 128000 - 0.5 * gpu_left / 8000), truncated.
TEST(BestFit, ScoresTheTightestNode) {
  ReplayCluster cluster({{"big", 64000, 100, 2, "T4"}, {"small", 32000, 100, 2, "T4"}});
  const TracePod pod = Pod(8000, 1, 1000);
  EXPECT_EQ(BestFitScore(cluster, 0, pod), 71);  // 1 - 0.21875 - 0.0625 = 0.71875
  EXPECT_EQ(BestFitScore(cluster, 1, pod), 84);  // 1 - 0.09375 - 0.0625 = 0.84375
  auto choice = Choose("bestfit", cluster, pod);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->node, 1);
  EXPECT_THAT(choice->gpus, ElementsAre(0));
}

// dot_product_score.go (merge, max): 100 * (1 - <free, request> / 2), vectors / (128000, 8000).
TEST(DotProd, PrefersTheSmallerDotProduct) {
  ReplayCluster cluster({{"big", 64000, 100, 2, "T4"}, {"small", 32000, 100, 2, "T4"}});
  const TracePod pod = Pod(8000, 1, 1000);
  EXPECT_EQ(DotProductScore(cluster, 0, pod), 96);  // 1 - (0.5*0.0625 + 0.25*0.125) / 2
  EXPECT_EQ(DotProductScore(cluster, 1, pod), 97);  // 1 - (0.25*0.0625 + 0.25*0.125) / 2
  auto choice = Choose("dotprod", cluster, pod);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->node, 1);
}

// gpu_packing_score.go: shared GPUs (>= 50) > free GPUs of a used node (33..50) > idle node.
TEST(GpuPacking, ThreeTiers) {
  ReplayCluster cluster({{"shared", 64000, 100, 4, "T4"},
                         {"idle", 64000, 100, 2, "T4"},
                         {"used", 64000, 100, 2, "T4"}});
  Place(cluster, 0, Pod(1000, 1, 700), {0});   // GPU 0: 300 free
  Place(cluster, 2, Pod(1000, 1, 1000), {0});  // GPU 0 full, GPU 1 free
  const TracePod sharing = Pod(1000, 1, 200);
  EXPECT_EQ(GpuPackingScore(cluster, 0, sharing), 97);  // 100 - (300 * 100 / 1000) / 10
  EXPECT_EQ(GpuPackingScore(cluster, 1, sharing), 31);  // 33 - 2 idle GPUs
  EXPECT_EQ(GpuPackingScore(cluster, 2, sharing), 49);  // 50 - 1 free GPU to use
  auto choice = Choose("gpupacking", cluster, sharing);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->node, 0);
  EXPECT_THAT(choice->gpus, ElementsAre(0));

  const TracePod whole = Pod(1000, 1, 1000);
  EXPECT_EQ(GpuPackingScore(cluster, 0, whole), 49);
  EXPECT_EQ(GpuPackingScore(cluster, 2, whole), 49);
  choice = Choose("gpupacking", cluster, whole);  // tie: the first in node order
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->node, 0);
  EXPECT_THAT(choice->gpus, ElementsAre(1));  // the first fully free GPU
  EXPECT_EQ(GpuPackingScore(cluster, 0, Pod(1000, 0, 0)), 0);
}

// gpu_clustering_score.go: 75+ only the pod's affinity, 50+ mixed with it, 25+ idle, 0+ other;
// plus 25 * (8000 - free milli) / 8000 within a tier.
TEST(GpuClustering, Tiers) {
  ReplayCluster cluster({{"share", 64000, 100, 2, "T4"},
                         {"one-gpu", 64000, 100, 2, "T4"},
                         {"idle", 64000, 100, 2, "T4"},
                         {"mixed", 64000, 100, 2, "T4"}});
  Place(cluster, 0, Pod(1000, 1, 500), {0});
  Place(cluster, 1, Pod(1000, 1, 1000), {0});
  Place(cluster, 3, Pod(1000, 1, 500), {0});
  Place(cluster, 3, Pod(1000, 1, 1000), {1});
  const TracePod pod = Pod(1000, 1, 400);
  EXPECT_EQ(GpuClusteringScore(cluster, 0, pod), 20 + 75);  // 25 * 6500 / 8000 = 20
  EXPECT_EQ(GpuClusteringScore(cluster, 1, pod), 21);       // 25 * 7000 / 8000
  EXPECT_EQ(GpuClusteringScore(cluster, 2, pod), 18 + 25);  // 25 * 6000 / 8000
  EXPECT_EQ(GpuClusteringScore(cluster, 3, pod), 23 + 50);  // 25 * 7500 / 8000
  EXPECT_EQ(Choose("gpuclustering", cluster, pod)->node, 0);
  EXPECT_EQ(GpuClusteringScore(cluster, 0, Pod(1000, 0, 0)), 0);
}

TargetWorkload OneWholeGpuShape() {
  TargetWorkload target;
  target.shapes = {{ShapeOf(Pod(1000, 1, 1000)), 1, 1.0}};
  return target;
}

// fgd_score.go: 100 * sigmoid((F_before - F_after) / 1000), best GPU for a sharing pod.
TEST(Fgd, TakesTheGpuThatGrowsFragmentationLeast) {
  ReplayCluster cluster({{"partly", 64000, 100, 2, "T4"}, {"idle", 64000, 100, 2, "T4"}});
  Place(cluster, 0, Pod(1000, 1, 400), {0});  // GPUs free: 600, 1000
  FgdScorer scorer(OneWholeGpuShape());
  EXPECT_DOUBLE_EQ(scorer.NodeFrag(cluster, 0), 600);  // the partly used GPU
  EXPECT_DOUBLE_EQ(scorer.NodeFrag(cluster, 1), 0);
  const TracePod pod = Pod(1000, 1, 500);
  // GPU 0 -> free 100, 1000: F = 100, score = int(100 * sigmoid(0.5)) = 62. GPU 1 -> free 600,
  // 500: no whole GPU left, F = 1100, score = int(100 * sigmoid(-0.5)) = 37.
  FgdScorer::Evaluation partly = scorer.Evaluate(cluster, 0, pod);
  EXPECT_EQ(partly.score, 62);
  EXPECT_THAT(partly.gpus, ElementsAre(0));
  FgdScorer::Evaluation idle = scorer.Evaluate(cluster, 1, pod);
  EXPECT_EQ(idle.score, 37);  // F 0 -> 500
  EXPECT_THAT(idle.gpus, ElementsAre(0));
  auto choice = Choose("fgd", cluster, pod, OneWholeGpuShape());
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->node, 0);
  EXPECT_THAT(choice->gpus, ElementsAre(0));

  // A whole-GPU pod: no fragmentation change on either node (sigmoid(0) = 50): first node.
  FgdScorer::Evaluation whole = scorer.Evaluate(cluster, 1, Pod(1000, 1, 1000));
  EXPECT_EQ(whole.score, 50);
  EXPECT_THAT(whole.gpus, ElementsAre(0));
}

TEST(Fgd, CpuOnlyPodAvoidsNodesWhereItStrandsGpus) {
  // On "tight" the CPU-only pod leaves too little CPU for the 1-GPU shape (Q3 -> Q4).
  ReplayCluster cluster({{"tight", 2000, 100, 1, "T4"}, {"roomy", 8000, 100, 1, "T4"}});
  FgdScorer scorer(OneWholeGpuShape());
  EXPECT_EQ(scorer.Evaluate(cluster, 0, Pod(1500, 0, 0)).score, 26);  // sigmoid(-1)
  EXPECT_EQ(scorer.Evaluate(cluster, 1, Pod(1500, 0, 0)).score, 50);
  EXPECT_EQ(Choose("fgd", cluster, Pod(1500, 0, 0), OneWholeGpuShape())->node, 1);
}

TEST(Random, PicksAFeasibleNodeAndAFittingGpu) {
  ReplayCluster cluster(
      {{"small", 1000, 100, 2, "T4"}, {"a", 64000, 100, 4, "T4"}, {"b", 64000, 100, 4, "T4"}});
  Place(cluster, 1, Pod(1000, 1, 900), {2});
  auto policy = MakePolicy("random", {});
  ASSERT_TRUE(policy.ok());
  std::mt19937_64 rng(3);
  std::set<int> nodes, gpus;
  for (int i = 0; i < 200; ++i) {
    auto choice = Chooser(**policy).Choose(cluster, Pod(2000, 1, 500), rng);
    ASSERT_TRUE(choice);
    nodes.insert(choice->node);
    ASSERT_EQ(choice->gpus.size(), 1u);
    if (choice->node == 1) gpus.insert(choice->gpus[0]);
  }
  EXPECT_THAT(nodes, ElementsAre(1, 2));
  EXPECT_THAT(gpus, ElementsAre(0, 1, 3));  // GPU 2 has only 100 milli free
}

TEST(Policies, NoFeasibleNodeMeansNoChoice) {
  ReplayCluster cluster({{"n", 1000, 100, 1, "T4"}});
  for (const std::string& name : BuiltinPolicyNames()) {
    EXPECT_FALSE(Choose(name, cluster, Pod(2000, 0, 0), OneWholeGpuShape())) << name;
    EXPECT_FALSE(Choose(name, cluster, Pod(500, 2, 1000), OneWholeGpuShape())) << name;
  }
}

TEST(GpuSelection, BestFitAndExclusive) {
  ReplayCluster cluster({{"n", 64000, 100, 4, "T4"}});
  Place(cluster, 0, Pod(1, 1, 300), {0});  // 700
  Place(cluster, 0, Pod(1, 1, 600), {2});  // 400
  EXPECT_THAT(SelectGpusBestFit(cluster, 0, Pod(1, 1, 400)), ElementsAre(2));
  EXPECT_THAT(SelectGpusBestFit(cluster, 0, Pod(1, 1, 500)), ElementsAre(0));
  EXPECT_THAT(SelectGpusBestFit(cluster, 0, Pod(1, 2, 1000)), ElementsAre(1, 3));
  EXPECT_THAT(SelectGpusExclusive(cluster, 0, Pod(1, 3, 1000)), ElementsAre());
  EXPECT_THAT(SelectGpusBestFit(cluster, 0, Pod(1, 0, 0)), ElementsAre());
}

TEST(PickTopScore, FirstInNodeOrderOrUniform) {
  const std::vector<ScoredNode> scored = {{4, 10}, {7, 30}, {2, 30}, {9, 30}, {5, 1}};
  std::mt19937_64 rng(11);
  EXPECT_EQ(PickTopScore(scored, TieBreak::kFirstInNodeOrder, rng), 7);
  std::set<int> picked;
  for (int i = 0; i < 100; ++i) picked.insert(*PickTopScore(scored, TieBreak::kUniform, rng));
  EXPECT_THAT(picked, ElementsAre(2, 7, 9));
  EXPECT_FALSE(PickTopScore({}, TieBreak::kUniform, rng));
}

class AlwaysFirstNode : public ChoosingPolicy {
 public:
  std::string_view Name() const override { return "first"; }
  std::optional<Choice> Choose(const ReplayCluster& cluster, const TracePod& pod,
                               std::mt19937_64&) override {
    return Choice{0, SelectGpusBestFit(cluster, 0, pod)};
  }
};

TEST(MakePolicy, ExtraFactoriesAndUnknownNames) {
  PolicyFactories extra;
  extra["first"] = [](const TargetWorkload&) { return std::make_unique<AlwaysFirstNode>(); };
  auto made = MakePolicy("first", {}, &extra);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ((*made)->Name(), "first");
  for (const std::string& name : BuiltinPolicyNames()) {
    auto builtin = MakePolicy(name, {});
    ASSERT_TRUE(builtin.ok()) << name;
    EXPECT_EQ((*builtin)->Name(), name);
  }
  auto unknown = MakePolicy("tessera", {}, &extra);
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.error().message, HasSubstr("unknown policy 'tessera'"));
  EXPECT_THAT(unknown.error().message, HasSubstr("bestfit"));
  EXPECT_THAT(unknown.error().message, HasSubstr("first"));
  extra["empty"] = [](const TargetWorkload&) { return std::unique_ptr<Policy>(); };
  EXPECT_FALSE(MakePolicy("empty", {}, &extra).ok());
}

}  // namespace
}  // namespace tessera::sim::replay
