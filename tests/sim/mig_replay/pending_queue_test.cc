// Protocol (c): refused requests wait and are retried, oldest first, after every departure.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "sim/mig_replay/benchmark.h"
#include "sim/mig_replay/protocol.h"
#include "test_fleet.h"
#include "unit_placer.h"

namespace tessera::sim::mig_replay {
namespace {

TEST(PendingQueue, AWaitingRequestIsPlacedWhenSpaceIsFreedAndWaitIsMeasured) {
  UnitPlacer placer(2);
  // p0 takes both units until t=2; p1 (1 unit) waits from t=1 and gets in at t=2, leaves at 2.5.
  // p2 arrives at t=2.4 while p1 holds a unit: placed at once.
  const std::vector<Arrival> arrivals = {At(1, 0, 2), At(0, 1, 0.5), At(0, 2.4, 1), At(1, 2.6, 1)};
  const RunMetrics m = RunPendingQueue(placer, arrivals, 0);
  EXPECT_EQ(m.arrived, 4);
  EXPECT_EQ(m.accepted, 2);     // p0 and p2 on arrival
  EXPECT_EQ(m.ever_placed, 3);  // and p1 after waiting; p3 (2 units) still waits at the end
  EXPECT_DOUBLE_EQ(m.wait_sum, 1.0);
  EXPECT_DOUBLE_EQ(m.mean_wait(), 1.0 / 3);
  EXPECT_THAT(placer.placed, ::testing::ElementsAre("mig/p0", "mig/p1", "mig/p2"));
  EXPECT_DOUBLE_EQ(m.ever_placed_ratio(), 0.75);
}

TEST(PendingQueue, WaitingRequestsAreRetriedOldestFirst) {
  UnitPlacer placer(2);
  // p0 fills the cluster; p1 and p2 (one unit each) wait; p0 leaves at 1: both fit, p1 first.
  // p3 arrives after and finds the cluster full again.
  const std::vector<Arrival> arrivals = {At(1, 0, 1), At(0, 0.1, 5), At(0, 0.2, 5), At(0, 1.5, 5)};
  const RunMetrics m = RunPendingQueue(placer, arrivals, 0);
  EXPECT_THAT(placer.placed, ::testing::ElementsAre("mig/p0", "mig/p1", "mig/p2"));
  EXPECT_EQ(m.ever_placed, 3);
  EXPECT_NEAR(m.wait_sum, 0.9 + 0.8, 1e-12);
}

TEST(PendingQueue, OnlyMeasuredArrivalsCount) {
  UnitPlacer placer(1);
  // p0 (warm-up) holds the unit until 1; p1 gets it then; p2 and p3 still wait when the run
  // ends at the last arrival.
  const std::vector<Arrival> arrivals = {At(0, 0, 1), At(0, 0.5, 1), At(0, 0.7, 1), At(0, 1.2, 1)};
  const RunMetrics m = RunPendingQueue(placer, arrivals, 1);
  EXPECT_EQ(m.arrived, 3);
  EXPECT_EQ(m.accepted, 0);
  EXPECT_EQ(m.ever_placed, 1);
  EXPECT_DOUBLE_EQ(m.wait_sum, 0.5);
}

// Skipping the later waiting requests of a type that just failed in a round gives exactly the
// full retry's results, for every policy, on fleets of one model and on mixed-rtx. (For tessera
// this needs the scheduler to count a retried pod's demand once: with every retry observed, the
// mix and so the decisions differed on mixed-rtx.)
TEST(PendingQueue, SkippingFailedTypesChangesNothingForAnyPolicy) {
  struct Case {
    std::string fleet;
    Workload workload;
  };
  const std::vector<Case> cases = {{"a100-40gb", MakeSyntheticWorkload(SyntheticMix::kSmallHeavy)},
                                   {"h100-80gb", MakeMemoryMixWorkload()},
                                   {"mixed-rtx", MakeMemoryMixWorkload()},
                                   // Pods of several instances, which may share a GPU.
                                   {"a100-40gb", MakeMultiMixedWorkload()},
                                   {"mixed-rtx", MakeMultiMemoryWorkload()}};
  for (const Case& c : cases) {
    const FleetSpec* spec = FindFleet(c.fleet);
    ASSERT_NE(spec, nullptr);
    auto nodes = BuildFleetNodes(*spec, c.fleet == "mixed-rtx" ? 6 : 2, testing::Catalog());
    ASSERT_TRUE(nodes.ok());
    for (const std::string& policy : AllPolicyNames()) {
      for (uint64_t seed : {42, 43}) {
        RunMetrics runs[2];
        for (int skip = 0; skip < 2; ++skip) {
          MigCluster cluster(nodes.value(), c.workload);
          auto made = MakeMigPolicy(policy, cluster);
          ASSERT_TRUE(made.ok()) << made.error().message;
          PolicyPlacer placer(cluster, *made.value());
          std::mt19937_64 rng(seed);
          const double rate = 1.3 * cluster.gpu_count() / ExpectedGpuShare(cluster);
          const auto arrivals =
              SamplePoissonArrivals(c.workload, static_cast<size_t>(6 * rate), rate, rng);
          runs[skip] = RunPendingQueue(placer, arrivals, static_cast<size_t>(2 * rate), skip != 0);
        }
        const std::string where =
            c.fleet + " " + c.workload.name + " " + policy + " seed " + std::to_string(seed);
        // Static partitions refuse what has no slot for good; every other policy had pods wait.
        if (policy.rfind("static-", 0) != 0) {
          EXPECT_GT(runs[0].ever_placed, runs[0].accepted) << where << ": nothing waited";
        }
        EXPECT_EQ(runs[0].accepted, runs[1].accepted) << where;
        EXPECT_EQ(runs[0].ever_placed, runs[1].ever_placed) << where;
        EXPECT_EQ(runs[0].served_slices, runs[1].served_slices) << where;
        EXPECT_DOUBLE_EQ(runs[0].wait_sum, runs[1].wait_sum) << where;
        EXPECT_EQ(runs[0].by_type, runs[1].by_type) << where;
        EXPECT_EQ(runs[0].waits_by_type, runs[1].waits_by_type) << where;
        EXPECT_DOUBLE_EQ(runs[0].snapshot.memory_slice_ratio, runs[1].snapshot.memory_slice_ratio)
            << where;
      }
    }
  }
}

// Where a request's intended profile takes a different number of slices on each GPU (mixed-rtx:
// a 4000 MiB instance is one A100-40GB slice but three RTX PRO 6000 slices, 1g.24gb), demand
// served is the memory the request names, wherever it went; in slices, a pod would serve more
// where it wastes more. On a fleet where slices mean the same everywhere it stays in slices.
TEST(PendingQueue, DemandServedIsTheRequestsMemoryWhereSlicesDifferBetweenGpus) {
  auto nodes = BuildFleetNodes(*FindFleet("mixed-rtx"), 3, testing::Catalog());
  ASSERT_TRUE(nodes.ok());
  MigCluster cluster(nodes.value(), MakeMemoryMixWorkload());
  EXPECT_FALSE(cluster.UniformSlices());
  const int small = 0;  // 4000 MiB x1
  ASSERT_EQ(cluster.workload().types[small].memory_mib, 4000);
  const int a100 = 0, rtx = 2;
  cluster.Commit("mig/a", a100,
                 {InstancePick{0, cluster.Intended(a100, 0, small), model::Placement{0, 1}}});
  cluster.Commit("mig/r", rtx,
                 {InstancePick{0, cluster.Intended(rtx, 0, small), model::Placement{0, 3}}});
  EXPECT_EQ(cluster.ServedSlices("mig/a", small), 4000);
  EXPECT_EQ(cluster.ServedSlices("mig/r", small), 4000);
  EXPECT_EQ(cluster.ServedSlices("mig/none", small), 0);
  int64_t memory = 0;
  for (const auto* node : cluster.nodes()) {
    for (const auto& d : node->devices) memory += d.total_mem_mib;
  }
  EXPECT_EQ(cluster.demand_capacity(), memory);

  MigCluster uniform(testing::Nodes("A100-40GB", 2, 2), MakeMemoryMixWorkload());
  EXPECT_TRUE(uniform.UniformSlices());
  uniform.Commit("mig/a", 0,
                 {InstancePick{0, uniform.Intended(0, 0, small), model::Placement{0, 1}}});
  EXPECT_EQ(uniform.ServedSlices("mig/a", small), 1);
  EXPECT_EQ(uniform.demand_capacity(), uniform.total_memory_slices());
}

TEST(PendingQueue, ShareWorkloadsRunOnlyWhereEveryModelHasTheSameComputeSlices) {
  const Workload shares = MakeSyntheticWorkload(SyntheticMix::kUniform);
  EXPECT_TRUE(RunsOn(*FindFleet("mixed"), shares, testing::Catalog()));
  EXPECT_FALSE(RunsOn(*FindFleet("mixed-rtx"), shares, testing::Catalog()));
  EXPECT_TRUE(RunsOn(*FindFleet("mixed-rtx"), MakeMemoryMixWorkload(), testing::Catalog()));
}

}  // namespace
}  // namespace tessera::sim::mig_replay
