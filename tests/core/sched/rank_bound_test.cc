#include "core/sched/rank_bound.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/sched/filter_pass.h"
#include "core/sched/node_evaluator.h"
#include "core/sched/scheduler.h"
#include "support/builders.h"

namespace tessera::sched {
namespace {

using testing::A100Mig;
using testing::ContainerBuilder;
using testing::NodeWith;
using testing::PodBuilder;
using testing::SharingGpu;

// A random pod: one or two app containers (sometimes an init container), one to three GPUs
// each, memory in MiB or as a percentage, cores, sometimes host CPU.
model::Pod RandomPod(std::mt19937_64& rng, const std::string& key) {
  PodBuilder b(key);
  const int containers = 1 + static_cast<int>(rng() % 4 == 0);
  auto container = [&](const std::string& name) {
    ContainerBuilder c(name);
    c.Gpu(1 + static_cast<int>(rng() % 5 == 0 ? 1 + rng() % 2 : 0));
    if (rng() % 4 == 0) {
      c.GpuMemPercent(10 * static_cast<int>(1 + rng() % 5));
    } else {
      c.GpuMem(1000 * static_cast<int>(1 + rng() % 16));
    }
    if (rng() % 3 != 0) c.GpuCores(10 * static_cast<int>(rng() % 6));
    if (rng() % 2 == 0) c.Request("cpu", std::to_string(500 * (rng() % 8)) + "m");
    return c.Build();
  };
  for (int i = 0; i < containers; ++i) b.With(container("c" + std::to_string(i)));
  model::Pod pod = b.Build();
  if (rng() % 6 == 0) pod.init_containers.push_back(container("init"));
  return pod;
}

// A cluster of shared-GPU nodes unlike one another (GPU sizes, counts, split counts, health,
// host CPU) with random pods on them, and a demand mix of random shapes.
class RankBoundProperty : public ::testing::Test {
 protected:
  void Build(uint64_t seed) {
    scheduler_.reset();
    state_.emplace(config::SchedulerConfig{});
    scheduler_.emplace(*state_, defaults_);
    std::mt19937_64 rng(seed);
    constexpr int kMemory[] = {16000, 24576, 32768, 40960, 81920};
    for (int n = 0; n < 24; ++n) {
      const std::string name = "node-" + std::to_string(n);
      std::vector<model::GpuDevice> gpus;
      const int count = 1 + static_cast<int>(rng() % 8);
      for (int g = 0; g < count; ++g) {
        model::GpuDevice d = SharingGpu(name + "-" + std::to_string(g), kMemory[rng() % 5], 0,
                                        static_cast<uint32_t>(g));
        d.count = 1 + static_cast<int>(rng() % 10);
        d.healthy = rng() % 10 != 0;
        gpus.push_back(d);
      }
      model::Node node = NodeWith(name, gpus);
      if (rng() % 2 == 0) node.allocatable["cpu"] = std::to_string(2 + rng() % 30);
      state_->UpsertNode(node);
    }
    for (int p = 0; p < 60; ++p) {
      const std::vector<std::string> only = {"node-" + std::to_string(rng() % 24)};
      (void)scheduler_->Schedule(RandomPod(rng, "ns/fill-" + std::to_string(p)), &only, 1);
    }
    // The mix: the fill pods' shapes, and shapes a fill pod never has (several GPUs, a model).
    for (int s = 0; s < 12; ++s) {
      DemandShape shape{static_cast<int32_t>(rng() % 4), 1000 * static_cast<int32_t>(rng() % 20),
                        10 * static_cast<int32_t>(rng() % 8), 500 * static_cast<int64_t>(rng() % 8),
                        rng() % 5 == 0 ? "V100" : ""};
      scheduler_->ObserveDemand(shape, 1.0 + static_cast<double>(rng() % 4));
    }
  }

  PolicyDefaults defaults_;
  std::optional<state::ClusterState> state_;
  std::optional<Scheduler> scheduler_;
};

// The bound is a floor: no node that fits ranks below it, over random clusters, mixes and pods;
// and it is tight somewhere, or it would skip nothing.
TEST_F(RankBoundProperty, NoNodeThatFitsRanksBelowItsBound) {
  int fitted = 0;
  int attained = 0;
  int tightened = 0;  // fits where the tighter floor applies (one GPU, memory in MiB)
  int attained_tighter = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Build(seed);
    std::mt19937_64 rng(seed * 31);
    for (int p = 0; p < 10; ++p) {
      const model::Pod pod = RandomPod(rng, "ns/probe-" + std::to_string(p));
      const ParsedPod parsed = ParsePod(pod, config::NvidiaConfig{}, defaults_);
      ASSERT_TRUE(parsed.request.ok()) << parsed.request.error().message;
      const CycleState cycle(parsed.request.value(), parsed.prefs->value(), parsed.cpu_milli,
                             scheduler_->demand_mix(), scheduler_->mig_demand_mix(), defaults_);
      ASSERT_TRUE(cycle.rank_bound().enabled());
      NodeEvaluator evaluator(cycle);
      for (const state::NodeState* node : state_->node_list()) {
        NodeRank rank;
        const NodeFit fit = evaluator.FitAndRank(*node, &rank);
        if (!fit.fits) continue;
        const std::optional<double> lowest = cycle.rank_bound().LowestBucket(*node);
        ASSERT_TRUE(lowest.has_value()) << node->name;
        ++fitted;
        EXPECT_GE(rank.bucket, *lowest) << "seed " << seed << ", pod " << p << ", " << node->name;
        attained += rank.bucket == *lowest ? 1 : 0;
        if (const std::optional<double> tighter = cycle.rank_bound().TighterLowestBucket(*node)) {
          ++tightened;
          EXPECT_GE(*tighter, *lowest) << "seed " << seed << ", pod " << p << ", " << node->name;
          EXPECT_GE(rank.bucket, *tighter)
              << "seed " << seed << ", pod " << p << ", " << node->name << ", tighter";
          attained_tighter += rank.bucket == *tighter ? 1 : 0;
        }
      }
    }
  }
  EXPECT_GT(fitted, 1000);
  // On these mixes (many shapes asking more than the pod) the floor is reached by a few percent
  // of the fitting nodes: enough that a pass finds one early and skips the rest.
  EXPECT_GT(attained, fitted / 100) << "the bound is never reached: it would skip nothing";
  EXPECT_GT(tightened, 200);
  EXPECT_GT(attained_tighter, attained * tightened / fitted) << "the tighter floor is no tighter";
}

class RankBoundTest : public ::testing::Test {
 protected:
  const CycleState& Cycle(const model::Pod& pod) {
    parsed_ = ParsePod(pod, config::NvidiaConfig{}, defaults_);
    cycle_.emplace(parsed_.request.value(), parsed_.prefs->value(), parsed_.cpu_milli,
                   scheduler_.demand_mix(), scheduler_.mig_demand_mix(), defaults_);
    return *cycle_;
  }

  state::ClusterState state_{config::SchedulerConfig{}};
  PolicyDefaults defaults_;
  Scheduler scheduler_{state_, defaults_};
  ParsedPod parsed_;
  std::optional<CycleState> cycle_;
};

TEST_F(RankBoundTest, WithoutADemandMixThereIsNoBound) {
  const model::Pod pod = PodBuilder("ns/p").Container(1, 4000, 20).Build();
  EXPECT_FALSE(Cycle(pod).rank_bound().enabled());
}

TEST_F(RankBoundTest, OnlyShapesAGpuWithRoomForThePodLacksRoomForCanLoseCapacity) {
  state_.UpsertNode(NodeWith("node-a", {SharingGpu("GPU-a", 40960)}));
  state_.UpsertNode(NodeWith("node-b", {SharingGpu("GPU-b", 40960)}));
  // node-b's GPU: 4 x 8000 MiB used, 8960 free (the mix sees these 4 pods' shape).
  const std::vector<std::string> only = {"node-b"};
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(
        scheduler_
            .Schedule(PodBuilder("ns/used-" + std::to_string(i)).Container(1, 8000, 5).Build(),
                      &only, 1)
            .scheduled());
  }
  scheduler_.ObserveDemand(DemandShape{1, 4000, 10, 0, ""});
  // Every shape asks no more than the pod: the fragmentation can only grow.
  const CycleState& covered = Cycle(PodBuilder("ns/p").Container(1, 8000, 20).Build());
  EXPECT_EQ(covered.rank_bound().LowestBucket(*state_.node("node-a")), 0.0);
  EXPECT_EQ(covered.rank_bound().LowestBucket(*state_.node("node-b")), 0.0);
  // A shape asking more than the pod: the empty GPU has room for it, so nothing falls there;
  // node-b's GPU lacks it, so its weight (4 of 9) may lose up to the pod's share of the GPU
  // (8000 of 40960 MiB): floor(-4/9 * 0.195 / 0.04) = floor(-2.17) = -3.
  scheduler_.ObserveDemand(DemandShape{1, 16000, 10, 0, ""}, 4.0);
  const CycleState& partly = Cycle(PodBuilder("ns/p").Container(1, 8000, 20).Build());
  EXPECT_EQ(partly.rank_bound().LowestBucket(*state_.node("node-a")), 0.0);
  EXPECT_EQ(partly.rank_bound().LowestBucket(*state_.node("node-b")), -3.0);
  // The tighter floor also counts the shapes the GPU held and no longer holds once the pod takes
  // 8000 MiB and 20% of it (4000/10 and 8000/5, weight 5 of 9): they find its rest fragmented
  // (960 MiB): floor((5/9 * 960 - 4/9 * 8000) / 40960 / 0.04) = floor(-1.84) = -2, the exact
  // bucket.
  EXPECT_EQ(partly.rank_bound().TighterLowestBucket(*state_.node("node-a")), 0.0);
  EXPECT_EQ(partly.rank_bound().TighterLowestBucket(*state_.node("node-b")), -2.0);
}

TEST_F(RankBoundTest, AShapeAskingMoreHostCpuThanTheNodeHasFreeCanLoseCapacity) {
  model::Node node = NodeWith("node-a", {SharingGpu("GPU-a", 40960)});
  node.allocatable["cpu"] = "2";
  state_.UpsertNode(node);
  scheduler_.ObserveDemand(DemandShape{1, 4000, 10, 4000, ""});
  // The shape does not fit the node's 2 CPUs before the pod either: all its capacity is
  // fragmented, and the pod's 8000 MiB of it go.
  const CycleState& cycle = Cycle(PodBuilder("ns/p").Container(1, 8000, 20).Build());
  EXPECT_EQ(cycle.rank_bound().LowestBucket(*state_.node("node-a")), -5.0);
}

TEST_F(RankBoundTest, NodesWithMigGpusAreNotBounded) {
  state_.UpsertNode(NodeWith("node-m", {A100Mig("GPU-m"), SharingGpu("GPU-s")}));
  scheduler_.ObserveDemand(DemandShape{1, 4000, 10, 0, ""});
  EXPECT_FALSE(Cycle(PodBuilder("ns/p").Container(1, 4000).Build())
                   .rank_bound()
                   .LowestBucket(*state_.node("node-m"))
                   .has_value());
}

TEST_F(RankBoundTest, OutrankedKeepsRanksBeforesTies) {
  for (const char* name : {"node-a", "node-b", "node-c"}) {
    state_.UpsertNode(NodeWith(name, {SharingGpu(std::string("GPU-") + name, 40960)}));
  }
  scheduler_.ObserveDemand(DemandShape{1, 4000, 10, 0, ""});
  const std::vector<std::string> only = {"node-c"};
  ASSERT_TRUE(scheduler_.Schedule(PodBuilder("ns/used").Container(1, 4000, 10).Build(), &only, 1)
                  .scheduled());
  const CycleState& cycle = Cycle(PodBuilder("ns/p").Container(1, 4000, 10).Build());
  const state::NodeState& a = *state_.node("node-a");
  const state::NodeState& b = *state_.node("node-b");
  const state::NodeState& c = *state_.node("node-c");
  // Both idle, bound 0: the one later in the tie order cannot win against the other at 0.
  const state::NodeState& first = a.tie_order < b.tie_order ? a : b;
  const state::NodeState& second = a.tie_order < b.tie_order ? b : a;
  const NodeRank idle_at_zero{0, 0, true, false};
  EXPECT_TRUE(Outranked(cycle, second, idle_at_zero, first));
  EXPECT_FALSE(Outranked(cycle, first, idle_at_zero, second));
  // A node in use ranks before an idle one at the same bucket, whatever the tie order.
  EXPECT_FALSE(Outranked(cycle, c, idle_at_zero, first));
  EXPECT_TRUE(Outranked(cycle, first, NodeRank{0, 0, false, false}, c));
  // A best below the bound's bucket outranks everything; one above it, nothing.
  EXPECT_TRUE(Outranked(cycle, c, NodeRank{-1, 0, false, false}, first));
  EXPECT_FALSE(Outranked(cycle, second, NodeRank{1, 0, false, false}, first));
  // A MIG plan as the best is compared by score at equal buckets: no answer from the bound.
  EXPECT_FALSE(Outranked(cycle, second, NodeRank{0, 0, true, true}, first));
}

// On a cluster of alike empty nodes, every node evaluated (no equivalence cache): after the
// first fit, only nodes earlier in the tie order are fitted, and the choice is the one made
// with every node fitted, on one thread and in shares.
TEST_F(RankBoundTest, TheFilterSkipsOutrankedNodesAndChoosesAlike) {
  for (int n = 0; n < 400; ++n) {
    const std::string name = "node-" + std::to_string(n);
    state_.UpsertNode(NodeWith(name, {SharingGpu(name + "-0", 40960), SharingGpu(name + "-1")}));
  }
  scheduler_.ObserveDemand(DemandShape{1, 8000, 20, 0, ""});
  const CycleState& cycle = Cycle(PodBuilder("ns/p").Container(1, 8000, 20).Build());
  const FilterOutcome every =
      FilterNodes(cycle, state_.node_list(), 0, true, nullptr, 1, /*skip_outranked=*/false);
  const FilterOutcome bounded = FilterNodes(cycle, state_.node_list(), 0, true, nullptr, 1);
  ASSERT_NE(every.best, nullptr);
  EXPECT_EQ(every.outranked, 0U);
  EXPECT_EQ(bounded.best, every.best);
  EXPECT_GT(bounded.outranked, 350U);
  EXPECT_TRUE(bounded.refused.empty());
}

// Nodes alike but for one pod's size each (the HAMi harness's d80): the pod adds the same
// fragmentation on every node, and the floor for a one-GPU pod is that exact bucket, so after the
// first fit only nodes earlier in the tie order are fitted. (The floor without the growth, 0
// here, skipped none: 8.7 ms at 5000 nodes.)
TEST_F(RankBoundTest, NodesThatDifferOnlyALittleAreSkippedToo) {
  constexpr int kNodes = 300;
  for (int n = 0; n < kNodes; ++n) {
    const std::string name = "node-" + std::to_string(n);
    state_.UpsertNode(
        NodeWith(name, {SharingGpu(name + "-0", 40960), SharingGpu(name + "-1", 40960)}));
    const std::vector<std::string> only = {name};
    for (int g = 0; g < 2; ++g) {
      for (int k = 0; k < 2; ++k) {
        const int mem = g == 1 && k == 1 ? 1000 + n : 8000;
        const model::Pod filler =
            PodBuilder("ns/fill-" + std::to_string(n) + "-" + std::to_string(g * 2 + k))
                .Container(1, mem, 30)
                .Annotation("nvidia.com/use-gpuuuid", name + "-" + std::to_string(g))
                .Build();
        ASSERT_TRUE(scheduler_.Schedule(filler, &only, 1).scheduled());
      }
    }
  }
  scheduler_.ObserveDemand(DemandShape{1, 8000, 30, 0, ""}, 100.0);
  const CycleState& cycle = Cycle(PodBuilder("ns/p").Container(1, 8000, 30).Build());
  NodeEvaluator evaluator(cycle);
  for (const state::NodeState* node : state_.node_list()) {
    NodeRank rank;
    ASSERT_TRUE(evaluator.FitAndRank(*node, &rank).fits) << node->name;
    EXPECT_EQ(cycle.rank_bound().TighterLowestBucket(*node), rank.bucket) << node->name;
  }
  const FilterOutcome every =
      FilterNodes(cycle, state_.node_list(), 0, true, nullptr, 1, /*skip_outranked=*/false);
  const FilterOutcome bounded = FilterNodes(cycle, state_.node_list(), 0, true, nullptr, 1);
  ASSERT_NE(every.best, nullptr);
  EXPECT_EQ(bounded.best, every.best);
  EXPECT_GT(bounded.outranked, kNodes - 30U);
}

}  // namespace
}  // namespace tessera::sched
