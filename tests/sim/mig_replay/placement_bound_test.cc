#include "sim/mig_replay/placement_bound.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "sim/mig_replay/benchmark.h"
#include "sim/mig_replay/offline_optimum.h"
#include "sim/mig_replay/protocol.h"
#include "sim/mig_replay/steady_optimum.h"
#include "sim/mig_replay/upper_bound.h"
#include "test_fleet.h"

namespace tessera::sim::mig_replay {
namespace {

using testing::Types;

// Restricting the LP to intended placements is a relaxation only if every covering profile's
// placement holds one; PlacementSpans adds the others, and on the catalog there are none.
TEST(MigPlacementBound, EveryCoveringPlacementHoldsAnIntendedOne) {
  int models = 0;
  for (const mig::GpuModelSpec& spec : testing::Catalog().models()) {
    if (!spec.complete) continue;
    auto built = BuildFleetNodes(FleetSpec{spec.model, {spec.model}, 1}, 1, testing::Catalog());
    if (!built.ok()) continue;
    MigCluster cluster(built.value(), MakeSyntheticWorkload(SyntheticMix::kUniform));
    const mig::GpuMigModel& gpu = cluster.nodes()[0]->mig_models[0];
    ++models;
    for (int p = 0; p < static_cast<int>(gpu.profiles().size()); ++p) {
      if (!gpu.Allowed(p) || gpu.profiles()[p].placements.empty()) continue;
      const std::vector<uint32_t> spans = PlacementSpans(gpu, p);
      EXPECT_EQ(spans.size(), gpu.profiles()[p].placements.size())
          << spec.model << " " << gpu.profiles()[p].name;
    }
  }
  EXPECT_GE(models, 5);
}

// Eight 1g on one A100: upper-bound's knapsack fills all 8 slices, but no 1g placement starts at
// slice 7.
TEST(MigPlacementBound, TighterThanUpperBoundByAlignment) {
  const Workload w = MakeSyntheticWorkload(SyntheticMix::kUniform);
  MigCluster cluster(testing::Nodes("A100-40GB", 1), w);
  const std::vector<Arrival> ones = Types({0, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_EQ(UpperBoundSaturation(cluster, ones).served_slices, 8);
  EXPECT_NEAR(SaturationPlacementLp(cluster, ones).served, 7, 1e-6);
  EXPECT_EQ(PlacementBoundSaturation(cluster, ones).served_slices, 7);
  EXPECT_EQ(OfflineOptimumServedSlices(cluster, ones).value(), 7);

  // Steady state: the eight stay for long; the ninth arrival is the one measured instant.
  std::vector<Arrival> steady;
  steady.reserve(9);
  for (int i = 0; i < 8; ++i) steady.push_back(Arrival{0, 0.1 * i, 10});
  steady.push_back(Arrival{0, 1, 1});
  EXPECT_NEAR(UpperBoundSteadyState(cluster, steady, 8).served_ratio, 1.0, 1e-9);
  EXPECT_NEAR(SteadyPlacementLp(cluster, steady, 8).served, 7, 1e-6);
  EXPECT_NEAR(PlacementBoundSteadyState(cluster, steady, 8).served_ratio, 7.0 / 8, 1e-9);
  EXPECT_EQ(SteadyOptimumServedSum(cluster, steady, 8).value(), 7);
}

// The exact steady optimum keeps a placement for a pod's lifetime: a 7g [0, 2.5) and a 1g
// [1, 10), measured at 2, 3 and 4; the 7g leaves no room for the 1g, so the best is 8 (the 7g at
// 2), where upper-bound counts 8 + 1 + 1 and the LP lies between.
TEST(MigPlacementBound, ExactSteadyOptimumKeepsPlacements) {
  const Workload w = MakeSyntheticWorkload(SyntheticMix::kUniform);
  MigCluster cluster(testing::Nodes("A100-40GB", 1), w);
  const std::vector<Arrival> a = {{4, 0, 2.5}, {0, 1, 9}, {0, 2, 0.1}, {0, 3, 0.1}, {0, 4, 0.1}};
  EXPECT_EQ(SteadyOptimumServedSum(cluster, a, 2).value(), 8);
  EXPECT_NEAR(UpperBoundSteadyState(cluster, a, 2).served_ratio * 3 * 8, 10, 1e-9);
  const double lp = SteadyPlacementLp(cluster, a, 2).served;
  EXPECT_GE(lp, 8 - 1e-6);
  EXPECT_LE(lp, 10 + 1e-6);
}

// On the optimum study's tiny instances: LP >= offline optimum >= every policy, and the bound
// never above upper-bound.
TEST(MigPlacementBound, SaturationBoundsTheOfflineOptimum) {
  double gap = 0;
  int cases = 0;
  for (const std::string model : {"A100-40GB", "H100-SXM5-80GB", "RTX-PRO-6000-Blackwell-96GB"}) {
    for (int gpus : {1, 2}) {
      for (SyntheticMix mix :
           {SyntheticMix::kUniform, SyntheticMix::kSmallHeavy, SyntheticMix::kLargeHeavy}) {
        const Workload w = MakeSyntheticWorkload(mix);
        const auto nodes = testing::Nodes(model, gpus);
        for (uint64_t seed : {42, 43, 44}) {
          std::mt19937_64 rng(seed);
          const std::vector<Arrival> arrivals = SampleArrivals(w, 12, rng);
          MigCluster cluster(nodes, w);
          const int64_t optimum = OfflineOptimumServedSlices(cluster, arrivals).value();
          const double lp = SaturationPlacementLp(cluster, arrivals).served;
          const RunMetrics bound = PlacementBoundSaturation(cluster, arrivals);
          EXPECT_GE(lp + 1e-6, static_cast<double>(optimum)) << model << " x" << gpus;
          EXPECT_GE(bound.served_slices, optimum) << model << " x" << gpus;
          EXPECT_LE(bound.served_slices, UpperBoundSaturation(cluster, arrivals).served_slices);
          gap += static_cast<double>(bound.served_slices - optimum) /
                 static_cast<double>(cluster.total_memory_slices());
          ++cases;
        }
      }
    }
  }
  std::cout << "placement-bound above the saturation optimum: " << 100 * gap / cases
            << " points of all slices on average over " << cases << " cases\n";
}

// Protocol (b) on tiny instances: LP >= exact offline optimum >= every policy, and the LP no
// looser than upper-bound's served figure.
TEST(MigPlacementBound, SteadyBoundsTheSteadyOptimum) {
  double gap = 0;
  int cases = 0;
  for (const std::string model : {"A100-40GB", "H100-SXM5-80GB"}) {
    for (int gpus : {1, 2}) {
      for (SyntheticMix mix : {SyntheticMix::kUniform, SyntheticMix::kSmallHeavy}) {
        const Workload w = MakeSyntheticWorkload(mix);
        const auto nodes = testing::Nodes(model, gpus);
        for (uint64_t seed : {42, 43}) {
          std::mt19937_64 rng(seed);
          const size_t n = gpus == 1 ? 14 : 12;
          const std::vector<Arrival> arrivals = SamplePoissonArrivals(w, n, 2.5 * gpus, rng);
          const size_t warmup = 4;
          const double scale = static_cast<double>(n - warmup) * 8 * gpus;  // 8 slices per GPU
          MigCluster cluster(nodes, w);
          ASSERT_EQ(cluster.total_memory_slices(), 8 * gpus);
          const int64_t optimum = SteadyOptimumServedSum(cluster, arrivals, warmup).value();
          const double lp = SteadyPlacementLp(cluster, arrivals, warmup).served;
          EXPECT_GE(lp + 1e-6, static_cast<double>(optimum)) << model << " x" << gpus;
          EXPECT_LE(lp,
                    UpperBoundSteadyState(cluster, arrivals, warmup).served_ratio * scale + 1e-6)
              << model << " x" << gpus;
          for (const auto& name : AllPolicyNames()) {
            MigCluster run(nodes, w);
            auto policy = MakeMigPolicy(name, run);
            ASSERT_TRUE(policy.ok()) << policy.error().message;
            PolicyPlacer placer(run, *policy.value());
            const double served = RunSteadyState(placer, arrivals, warmup).served_ratio * scale;
            EXPECT_LE(std::llround(served), optimum) << model << " x" << gpus << " " << name;
          }
          gap += (lp - static_cast<double>(optimum)) / scale;
          ++cases;
        }
      }
    }
  }
  std::cout << "placement LP above the steady optimum: " << 100 * gap / cases
            << " points of all slices on average over " << cases << " cases\n";
}

// Multi-instance and memory requests, on a fleet mixing slice counts too: the bound's served
// ratio and acceptance are at or above every policy's, run by run.
TEST(MigPlacementBound, BoundsEveryPolicyWithSeveralInstancesAndMixedModels) {
  BenchmarkOptions options;
  options.warmup_lifetimes = 1;
  options.measure_lifetimes = 2;
  const std::vector<std::pair<std::string, Workload>> cells = {
      {"a100-40gb", MakeMultiSmallWorkload()},
      {"h100-80gb", MakeMultiMixedWorkload()},
      {"mixed-rtx", MakeMemoryMixWorkload()},
  };
  for (const auto& [fleet, workload] : cells) {
    auto nodes = BuildFleetNodes(*FindFleet(fleet), 1, testing::Catalog());
    ASSERT_TRUE(nodes.ok()) << nodes.error().message;
    for (const Protocol& protocol :
         {Protocol{false, 0, false}, Protocol{true, 0.9, false}, Protocol{true, 1.2, false}}) {
      auto bound =
          RunOne(*nodes, fleet, workload, protocol, std::string(kPlacementBound), 42, options);
      ASSERT_TRUE(bound.ok()) << bound.error().message;
      for (const auto& name : AllPolicyNames()) {
        auto run = RunOne(*nodes, fleet, workload, protocol, name, 42, options);
        ASSERT_TRUE(run.ok()) << run.error().message;
        const std::string cell = fleet + " " + protocol.Name() + " " + name;
        EXPECT_GE(bound->metrics.served_ratio + 1e-9, run->metrics.served_ratio) << cell;
        EXPECT_GE(bound->metrics.accepted, run->metrics.accepted) << cell;
      }
    }
  }
}

// In the benchmark: a row per run of protocols (a) and (b) on a small fleet, between every
// policy and upper-bound; none on a larger fleet than asked for, none for the pending queue.
TEST(MigPlacementBound, BenchmarkRowsLieBetweenPoliciesAndUpperBound) {
  BenchmarkOptions options;
  options.fleets = {"a100-40gb"};
  options.workloads = {MakeSyntheticWorkload(SyntheticMix::kUniform)};
  options.policies = {"tessera", "first-fit"};
  options.seeds = {42};
  options.nodes_per_fleet = 1;
  options.loads = {1.2};
  // Its rows are checked here, not its search.
  options.offline_guide.search_starts = 1;
  options.offline_guide.patterns.rounds = 0;
  auto records = RunBenchmark(options, testing::Catalog());
  ASSERT_TRUE(records.ok()) << records.error().message;
  std::map<std::string, std::map<std::string, double>> served;  // protocol -> policy -> ratio
  for (const RunRecord& r : records.value()) {
    served[r.protocol][r.policy] = r.metrics.served_ratio;
    if (r.policy == kPlacementBound) {
      EXPECT_TRUE(r.metrics.by_type.empty());
    }
  }
  ASSERT_EQ(served.size(), 3u);
  EXPECT_EQ(served["pending-1.2"].count(std::string(kPlacementBound)), 0u);
  for (const std::string protocol : {"saturation", "steady-1.2"}) {
    const double bound = served[protocol].at(std::string(kPlacementBound));
    EXPECT_LE(bound, served[protocol].at(std::string(kUpperBound)) + 1e-9) << protocol;
    for (const std::string policy : {"tessera", "first-fit"}) {
      EXPECT_GE(bound + 1e-9, served[protocol].at(policy)) << protocol << " " << policy;
    }
  }
  options.placement_bound_max_gpus = 4;
  records = RunBenchmark(options, testing::Catalog());
  ASSERT_TRUE(records.ok());
  for (const RunRecord& r : records.value()) EXPECT_NE(r.policy, kPlacementBound);
}

}  // namespace
}  // namespace tessera::sim::mig_replay
