#include "sim/mig_replay/pattern_schedule.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "sim/mig_replay/benchmark.h"
#include "sim/mig_replay/placement_bound.h"
#include "sim/mig_replay/protocol.h"
#include "test_fleet.h"

namespace tessera::sim::mig_replay {
namespace {

// `uniform`'s types: 1g, 2g, 3g, 4g, 7g of an A100.
constexpr int k1g = 0;
constexpr int k7g = 4;

RunMetrics Replay(const std::vector<model::Node>& nodes, const Workload& w, const PatternPlan& plan,
                  const std::vector<Arrival>& arrivals, bool fill = false) {
  MigCluster cluster(nodes, w);
  auto policy = MakePatternPolicy(plan, fill ? &arrivals : nullptr);
  PolicyPlacer placer(cluster, *policy);
  return RunSteadyState(placer, arrivals, 0);
}

// One A100: a long 1g, then a 7g while it is there. Every online policy places the 1g and
// refuses the 7g; the plan knows the 7g comes and serves eight slices instead of one.
TEST(PatternSchedule, TurnsAwayASmallPodToKeepTheGpuForAWholeOne) {
  const Workload w = MakeSyntheticWorkload(SyntheticMix::kUniform);
  const auto nodes = testing::Nodes("A100-40GB", 1);
  const std::vector<Arrival> arrivals = {
      {k1g, 0, 5}, {k7g, 0.5, 5}, {k1g, 1, 0.01}, {k1g, 2, 0.01}, {k1g, 3, 0.01}};
  const PatternPlan plan = SteadyPatternPlan(MigCluster(nodes, w), arrivals, 0);
  ASSERT_EQ(plan.size(), arrivals.size());
  EXPECT_TRUE(plan[0].empty()) << "the 1g is turned away";
  ASSERT_EQ(plan[1].size(), 1U);
  EXPECT_EQ(plan[1][0].node, 0);
  EXPECT_EQ(plan[1][0].device, 0);
  EXPECT_EQ(plan[1][0].span, 0xFFU) << "the 7g holds the GPU's eight memory slices";

  const RunMetrics planned = Replay(nodes, w, plan, arrivals);
  MigCluster cluster(nodes, w);
  auto tessera = MakePlacer("tessera", cluster);
  ASSERT_TRUE(tessera.ok());
  const RunMetrics online = RunSteadyState(*tessera->placer, arrivals, 0);
  EXPECT_GT(planned.served_ratio, online.served_ratio);
}

// The plan is a schedule under MIG's rules: on Poisson streams on two A100s every request it
// places is placed where it says when replayed, and it serves at most the placement bound.
TEST(PatternSchedule, EveryPlannedPodIsPlacedOnReplayWithinTheBound) {
  const Workload w = MakeSyntheticWorkload(SyntheticMix::kUniform);
  const auto nodes = testing::Nodes("A100-40GB", 2);
  for (const uint64_t seed : {42, 43}) {
    std::mt19937_64 rng(seed);
    const std::vector<Arrival> arrivals = SamplePoissonArrivals(w, 24, 6.0, rng);
    const MigCluster cluster(nodes, w);
    const PatternPlan plan = SteadyPatternPlan(cluster, arrivals, 0);
    int64_t planned = 0;
    for (const auto& instances : plan) planned += instances.empty() ? 0 : 1;
    EXPECT_GT(planned, 0) << seed;
    const RunMetrics replayed = Replay(nodes, w, plan, arrivals);
    EXPECT_EQ(replayed.accepted, planned) << seed;
    EXPECT_LE(replayed.served_ratio,
              PlacementBoundSteadyState(cluster, arrivals, 0).served_ratio + 1e-9)
        << seed;
  }
}

// The policy places only what the plan holds, where it holds it: a pod without a plan, one
// whose planned span is taken, one planned with too few instances and a key outside the stream
// are refused.
TEST(PatternSchedule, RefusesWhatThePlanDoesNotHold) {
  const Workload w = MakeSyntheticWorkload(SyntheticMix::kUniform);
  const auto nodes = testing::Nodes("A100-40GB", 2);
  const PatternPlan plan = {{{0, 1, 0x1}}, {{0, 1, 0x1}}, {}, {}};
  MigCluster cluster(nodes, w);
  auto policy = MakePatternPolicy(plan);
  PolicyPlacer placer(cluster, *policy);
  EXPECT_TRUE(placer.Place(ArrivalKey(0), k1g));
  EXPECT_EQ(cluster.nodes()[0]->instances[1].size(), 1U) << "on the planned GPU";
  EXPECT_FALSE(placer.Place(ArrivalKey(1), k1g)) << "its span is taken";
  EXPECT_FALSE(placer.Place(ArrivalKey(2), k1g)) << "no plan";
  EXPECT_FALSE(placer.Place(ArrivalKey(9), k1g)) << "outside the stream";
  EXPECT_FALSE(placer.Place("not-a-stream-key", k1g));

  const Workload multi = MakeMultiSmallWorkload();
  MigCluster multi_cluster(nodes, multi);
  int two = -1;
  for (size_t t = 0; t < multi.types.size(); ++t) {
    if (multi.types[t].count == 2) two = static_cast<int>(t);
  }
  ASSERT_GE(two, 0);
  auto multi_policy = MakePatternPolicy(plan);
  PolicyPlacer multi_placer(multi_cluster, *multi_policy);
  EXPECT_FALSE(multi_placer.Place(ArrivalKey(0), two)) << "one of its two instances planned";
}

// With the stream, a pod the plan does not hold whole is placed where it fits and no planned pod
// needs the memory slices while it is resident: a short 1g goes in before a planned 7g, a long
// one that would still hold a slice when the 7g comes is refused, and a two-instance pod
// planned in part is placed whole.
TEST(PatternSchedule, FillsRoomNoPlannedPodNeedsWhileTheFillerIsResident) {
  const Workload w = MakeSyntheticWorkload(SyntheticMix::kUniform);
  const auto nodes = testing::Nodes("A100-40GB", 1);
  const std::vector<Arrival> arrivals = {{k1g, 0, 0.5}, {k1g, 0.1, 5}, {k7g, 1, 2}, {k1g, 3.5, 1}};
  const PatternPlan plan = {{}, {}, {{0, 0, 0xFF}}, {}};
  MigCluster cluster(nodes, w);
  auto policy = MakePatternPolicy(plan, &arrivals);
  PolicyPlacer placer(cluster, *policy);
  EXPECT_TRUE(placer.Place(ArrivalKey(0), k1g)) << "it leaves before the 7g comes";
  EXPECT_FALSE(placer.Place(ArrivalKey(1), k1g)) << "it would hold a slice the 7g needs";
  placer.Release(ArrivalKey(0));
  EXPECT_TRUE(placer.Place(ArrivalKey(2), k7g)) << "the planned 7g finds its span";
  placer.Release(ArrivalKey(2));
  EXPECT_TRUE(placer.Place(ArrivalKey(3), k1g)) << "after the 7g has left";

  const Workload multi = MakeMultiSmallWorkload();
  const auto two_gpus = testing::Nodes("A100-40GB", 2);
  int two = -1;
  for (size_t t = 0; t < multi.types.size(); ++t) {
    if (multi.types[t].count == 2) two = static_cast<int>(t);
  }
  ASSERT_GE(two, 0);
  const std::vector<Arrival> pods = {{two, 0, 1}};
  const PatternPlan in_part = {{{0, 1, 0x1}}};
  MigCluster multi_cluster(two_gpus, multi);
  auto multi_policy = MakePatternPolicy(in_part, &pods);
  PolicyPlacer multi_placer(multi_cluster, *multi_policy);
  EXPECT_TRUE(multi_placer.Place(ArrivalKey(0), two));
  size_t instances = 0;
  for (const auto& device : multi_cluster.nodes()[0]->instances) instances += device.size();
  EXPECT_EQ(instances, 2U) << "both of its instances";
}

// Filling never costs a planned pod its place: on Poisson streams of the multi-instance mix on
// two A100s the filled replay places at least the plan's pods and serves at least as much.
TEST(PatternSchedule, FillingKeepsEveryPlannedPod) {
  const auto nodes = testing::Nodes("A100-40GB", 2);
  for (const Workload& w :
       {MakeMultiSmallWorkload(), MakeSyntheticWorkload(SyntheticMix::kUniform)}) {
    bool gained = false;
    for (const uint64_t seed : {42, 43, 44}) {
      std::mt19937_64 rng(seed);
      const std::vector<Arrival> arrivals = SamplePoissonArrivals(w, 24, 6.0, rng);
      const PatternPlan plan = SteadyPatternPlan(MigCluster(nodes, w), arrivals, 0);
      const RunMetrics planned = Replay(nodes, w, plan, arrivals);
      const RunMetrics filled = Replay(nodes, w, plan, arrivals, /*fill=*/true);
      EXPECT_GE(filled.accepted, planned.accepted) << w.name << " " << seed;
      EXPECT_GE(filled.served_ratio, planned.served_ratio - 1e-12) << w.name << " " << seed;
      gained = gained || filled.served_ratio > planned.served_ratio + 1e-9;
    }
    if (w.name == MakeMultiSmallWorkload().name) {
      EXPECT_TRUE(gained) << w.name;
    }
  }
}

}  // namespace
}  // namespace tessera::sim::mig_replay
