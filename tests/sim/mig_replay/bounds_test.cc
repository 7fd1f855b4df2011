#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "sim/mig_replay/geometry_free.h"
#include "sim/mig_replay/offline_optimum.h"
#include "sim/mig_replay/optimum_study.h"
#include "sim/mig_replay/protocol.h"
#include "sim/mig_replay/upper_bound.h"
#include "test_fleet.h"

namespace tessera::sim::mig_replay {
namespace {

std::vector<Arrival> Types(std::initializer_list<int> types) {
  std::vector<Arrival> out;
  for (int t : types) out.push_back(Arrival{t, 0, 0});
  return out;
}

// Each policy on its own copy of the cluster, protocol (a) without the early stop.
std::map<std::string, RunMetrics> EveryPolicyAtSaturation(const std::vector<model::Node>& nodes,
                                                          const Workload& w,
                                                          const std::vector<Arrival>& arrivals) {
  std::map<std::string, RunMetrics> out;
  for (const auto& name : AllPolicyNames()) {
    MigCluster cluster(nodes, w);
    auto policy = MakeMigPolicy(name, cluster);
    if (!policy.ok()) {
      ADD_FAILURE() << policy.error().message;
      continue;
    }
    PolicyPlacer placer(cluster, *policy.value());
    out[name] = RunSaturation(placer, arrivals, 0);
  }
  return out;
}

TEST(MigOfflineOptimum, PrefersTheLargerRequestWhenOnlyOneFits) {
  const Workload w = MakeSyntheticWorkload(SyntheticMix::kUniform);
  MigCluster cluster(testing::Nodes("A100-40GB", 1), w);
  // 1g, 1g, 7g on one GPU: the 7g alone serves 8 slices, the two 1g only 2.
  auto best = OfflineOptimumServedSlices(cluster, Types({0, 0, 4}));
  ASSERT_TRUE(best.ok());
  EXPECT_EQ(best.value(), 8);
  // 4g + 3g fill the GPU whatever the order; a third 3g cannot join.
  EXPECT_EQ(OfflineOptimumServedSlices(cluster, Types({2, 3, 2})).value(), 8);
  // Eight 1g: at most 7 (no 1g placement starts at slice 7).
  EXPECT_EQ(OfflineOptimumServedSlices(cluster, Types({0, 0, 0, 0, 0, 0, 0, 0})).value(), 7);
}

TEST(MigOfflineOptimum, BoundsEveryPolicyOnTinyInstances) {
  OptimumStudyOptions options;
  options.seeds = {42, 43};
  options.requests = 12;
  auto cases = RunOptimumStudy(AllPolicyNames(), options, testing::Catalog());
  ASSERT_TRUE(cases.ok()) << cases.error().message;
  ASSERT_FALSE(cases->empty());
  for (const auto& c : cases.value()) {
    for (const auto& [policy, served] : c.served) {
      EXPECT_LE(served, c.optimum)
          << c.model << " x" << c.gpus << " " << c.workload << " seed " << c.seed << " " << policy;
    }
  }
}

// A reference policy, not a bound: on this instance it happens to serve at least as much as
// every policy (docs/mig-replay.md says where it does not).
TEST(MigPooledSlicesReference, ServesAtLeastAsMuchAsEveryPolicyOnThisSmallInstance) {
  for (SyntheticMix mix : {SyntheticMix::kUniform, SyntheticMix::kSmallHeavy}) {
    const Workload w = MakeSyntheticWorkload(mix);
    const auto nodes = testing::Nodes("H100-SXM5-80GB", 2, 2);
    std::mt19937_64 rng(7);
    const std::vector<Arrival> arrivals = SampleArrivals(w, 60, rng);
    MigCluster bound_cluster(nodes, w);
    GeometryFreePlacer bound(bound_cluster);
    const RunMetrics b = RunSaturation(bound, arrivals, 0);
    const auto policies = EveryPolicyAtSaturation(nodes, w, arrivals);
    EXPECT_EQ(policies.size(), AllPolicyNames().size());
    for (const auto& [name, m] : policies) {
      EXPECT_GE(b.served_slices, m.served_slices) << w.name << " " << name;
      // Nothing the policies hold is outside the cluster.
      EXPECT_LE(m.snapshot.memory_slice_ratio, 1.0);
    }
    EXPECT_LE(b.snapshot.compute_slice_ratio, 1.0);
  }
}

TEST(MigUpperBound, UsableCapacityIsWhatSumsOfIntendedSizesCanFill) {
  // Uniform on A100-40GB: 1g (1 slice) is intended, so all 8 memory slices can be filled.
  const Workload uniform = MakeSyntheticWorkload(SyntheticMix::kUniform);
  EXPECT_EQ(UsableCapacity(MigCluster(testing::Nodes("A100-40GB", 2), uniform)), 16);
  // Only 4g.20gb requests (4 memory slices): two fill a GPU.
  Workload threes = uniform;
  threes.probabilities.assign(threes.types.size(), 0.0);
  threes.probabilities[3] = 1.0;
  EXPECT_EQ(UsableCapacity(MigCluster(testing::Nodes("A100-40GB", 1), threes)), 8);
}

TEST(MigUpperBound, SaturationBoundsEveryPolicyTheReferenceAndTheOptimum) {
  for (SyntheticMix mix :
       {SyntheticMix::kUniform, SyntheticMix::kSmallHeavy, SyntheticMix::kLargeHeavy}) {
    const Workload w = MakeSyntheticWorkload(mix);
    for (const char* model : {"A100-40GB", "H100-SXM5-80GB", "RTX-PRO-6000-Blackwell-96GB"}) {
      const auto nodes = testing::Nodes(model, 2, 2);
      for (uint64_t seed : {7u, 8u, 9u}) {
        std::mt19937_64 rng(seed);
        const std::vector<Arrival> arrivals = SampleArrivals(w, 40, rng);
        MigCluster bound_cluster(nodes, w);
        const RunMetrics bound = UpperBoundSaturation(bound_cluster, arrivals);
        EXPECT_LE(bound.served_slices, UsableCapacity(bound_cluster));
        EXPECT_LE(bound.served_ratio, 1.0);
        MigCluster ref_cluster(nodes, w);
        GeometryFreePlacer reference(ref_cluster);
        const RunMetrics r = RunSaturation(reference, arrivals, 0);
        EXPECT_GE(bound.served_slices, r.served_slices) << w.name << " " << model;
        EXPECT_GE(bound.accepted, r.accepted) << w.name << " " << model;
        for (const auto& [name, m] : EveryPolicyAtSaturation(nodes, w, arrivals)) {
          EXPECT_GE(bound.served_slices, m.served_slices) << w.name << " " << model << " " << name;
          EXPECT_GE(bound.accepted, m.accepted) << w.name << " " << model << " " << name;
        }
      }
    }
  }
}

TEST(IntervalAcceptanceBound, KeepsTheCapacityAtEveryInstant) {
  // Capacity 8. Two requests of 8 that overlap: one fits at a time; with a third of 8 after
  // both, two in all. Integrated over the window (length 3, budget 24) all three would fit.
  EXPECT_NEAR(IntervalAcceptanceBound({{0, 2, 8}, {1, 3, 8}, {3, 4, 8}}, 8), 2.0, 1e-9);
  // Small requests fill what a large one leaves: two 2s beside a 4 in 8 slices; with a third 2
  // the smallest go first and half the 4 is left.
  EXPECT_NEAR(IntervalAcceptanceBound({{0, 1, 4}, {0, 1, 2}, {0, 1, 2}}, 8), 3.0, 1e-9);
  EXPECT_NEAR(IntervalAcceptanceBound({{0, 1, 4}, {0, 1, 2}, {0, 1, 2}, {0, 1, 2}}, 8), 3.5, 1e-9);
  // Partly: three 4s at once in 8 slices count 2.
  EXPECT_NEAR(IntervalAcceptanceBound({{0, 1, 4}, {0, 1, 4}, {0, 1, 4}}, 8), 2.0, 1e-9);
  // The fractional relaxation: a 6 and a 4 at once in 8: the 4, and a third of the 6.
  EXPECT_NEAR(IntervalAcceptanceBound({{0, 1, 6}, {0, 1, 4}}, 8), 1.0 + 4.0 / 6, 1e-9);
  // A request of zero length still needs its slices at its instant; one that fits nowhere
  // counts nothing.
  EXPECT_NEAR(IntervalAcceptanceBound({{0, 2, 8}, {1, 1, 8}}, 8), 1.0, 1e-9);
  EXPECT_NEAR(IntervalAcceptanceBound({{0, 1, 9}}, 8), 0.0, 1e-9);
  // Back to back is not overlapping.
  EXPECT_NEAR(IntervalAcceptanceBound({{0, 1, 8}, {1, 2, 8}}, 8), 2.0, 1e-9);
}

TEST(MigUpperBound, SteadyStateAcceptanceBoundsEveryPolicy) {
  for (SyntheticMix mix : {SyntheticMix::kUniform, SyntheticMix::kLargeHeavy}) {
    const Workload w = MakeSyntheticWorkload(mix);
    const auto nodes = testing::Nodes("A100-40GB", 2, 2);
    for (const double load : {0.9, 1.5}) {
      MigCluster sizing(nodes, w);
      const double rate = load * sizing.gpu_count() / ExpectedGpuShare(sizing);
      std::mt19937_64 rng(11);
      const std::vector<Arrival> arrivals = SamplePoissonArrivals(w, 400, rate, rng);
      const size_t warmup = 100;
      const RunMetrics bound = UpperBoundSteadyState(sizing, arrivals, warmup);
      EXPECT_EQ(bound.arrived, 300);
      EXPECT_LE(bound.accepted, bound.arrived);
      for (const auto& name : AllPolicyNames()) {
        MigCluster cluster(nodes, w);
        auto policy = MakeMigPolicy(name, cluster);
        ASSERT_TRUE(policy.ok());
        PolicyPlacer placer(cluster, *policy.value());
        const RunMetrics m = RunSteadyState(placer, arrivals, warmup);
        EXPECT_GE(bound.accepted, m.accepted) << w.name << " load " << load << " " << name;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::sim::mig_replay
