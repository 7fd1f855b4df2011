#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "sim/mig_replay/benchmark.h"
#include "sim/mig_replay/geometry_free.h"
#include "sim/mig_replay/offline_optimum.h"
#include "sim/mig_replay/optimum_study.h"
#include "sim/mig_replay/protocol.h"
#include "sim/mig_replay/upper_bound.h"
#include "test_fleet.h"

namespace tessera::sim::mig_replay {
namespace {

using testing::Types;

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
        EXPECT_LE(bound.served_slices, bound_cluster.demand_capacity());
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

// Acceptance and demand served; at low load too, where the pods of the warm-up still hold
// much of what is served in the measured window.
TEST(MigUpperBound, SteadyStateBoundsEveryPolicy) {
  for (SyntheticMix mix : {SyntheticMix::kUniform, SyntheticMix::kLargeHeavy}) {
    const Workload w = MakeSyntheticWorkload(mix);
    const auto nodes = testing::Nodes("A100-40GB", 2, 2);
    for (const double load : {0.6, 0.9, 1.5}) {
      MigCluster sizing(nodes, w);
      const double rate = load * sizing.gpu_count() / ExpectedGpuShare(sizing);
      std::mt19937_64 rng(11);
      // The benchmark's proportions: 3 mean lifetimes of warm-up, 5 measured.
      const auto count = static_cast<size_t>(8 * rate);
      const std::vector<Arrival> arrivals = SamplePoissonArrivals(w, count, rate, rng);
      const auto warmup = static_cast<size_t>(3 * rate);
      const RunMetrics bound = UpperBoundSteadyState(sizing, arrivals, warmup);
      EXPECT_EQ(bound.arrived, static_cast<int64_t>(count - warmup));
      EXPECT_LE(bound.accepted, bound.arrived);
      for (const auto& name : AllPolicyNames()) {
        MigCluster cluster(nodes, w);
        auto policy = MakeMigPolicy(name, cluster);
        ASSERT_TRUE(policy.ok());
        PolicyPlacer placer(cluster, *policy.value());
        const RunMetrics m = RunSteadyState(placer, arrivals, warmup);
        EXPECT_GE(bound.accepted, m.accepted) << w.name << " load " << load << " " << name;
        EXPECT_GE(bound.served_ratio, m.served_ratio) << w.name << " load " << load << " " << name;
      }
      EXPECT_LE(bound.served_ratio, 1.0);
    }
  }
}

// mixed-rtx (two GPUs per node: A100-40GB, H100, RTX PRO 6000) with `nodes_per_model` of each.
std::vector<model::Node> MixedRtxNodes(int nodes_per_model) {
  auto built = BuildFleetNodes(*FindFleet("mixed-rtx"), 3 * nodes_per_model, testing::Catalog());
  EXPECT_TRUE(built.ok());
  return built.value();
}

// The same requests (memory-mix types) arriving as a Poisson stream at `load`, with a warm-up.
struct Stream {
  std::vector<Arrival> arrivals;
  size_t warmup = 0;
};
Stream PoissonStream(const std::vector<model::Node>& nodes, const Workload& w, double load,
                     uint64_t seed) {
  MigCluster sizing(nodes, w);
  const double rate = load * sizing.gpu_count() / ExpectedGpuShare(sizing);
  std::mt19937_64 rng(seed);
  Stream s;
  s.arrivals = SamplePoissonArrivals(w, static_cast<size_t>(6 * rate), rate, rng);
  s.warmup = static_cast<size_t>(2 * rate);
  return s;
}

TEST(MigUpperBound, MemoryUnitsCountEachGpusMostIntendedMemoryAndEachRequestsLeast) {
  const Workload w = MakeMemoryMixWorkload();
  ASSERT_EQ(w.types[0].memory_mib, 4000);
  ASSERT_EQ(w.types[0].count, 1);
  Workload only_small = w;
  only_small.types.resize(1);
  only_small.probabilities = {1.0};
  MigCluster a100(testing::Nodes("A100-40GB", 2), only_small);
  const int one_g = a100.Intended(0, 0, 0);
  const model::MigProfile& small = a100.nodes()[0]->mig_models[0].profiles()[one_g];
  EXPECT_EQ(small.name, "1g.5gb");
  // Eight one-slice instances fill a GPU's memory slices (positions are relaxed away).
  const BoundUnits units = MemoryUnits(a100);
  EXPECT_EQ(units.capacity, static_cast<int64_t>(small.memory_mib) * 16);  // 2 GPUs x 8 slices
  EXPECT_EQ(units.size_by_type[0], small.memory_mib);
  // With the 40 GB request too, one 7g.40gb holds more memory than eight 1g.5gb.
  MigCluster a100_mix(testing::Nodes("A100-40GB", 2), w);
  const int large_type = 4;  // 40000 MiB x1
  ASSERT_EQ(w.types[large_type].memory_mib, 40000);
  const model::MigProfile& large =
      a100_mix.nodes()[0]->mig_models[0].profiles()[a100_mix.Intended(0, 0, large_type)];
  EXPECT_EQ(large.name, "7g.40gb");
  ASSERT_GT(large.memory_mib, 8 * small.memory_mib);
  EXPECT_EQ(MemoryUnits(a100_mix).capacity, 2 * static_cast<int64_t>(large.memory_mib));
  // On mixed-rtx a 4000 MiB request costs its smallest instance over the models (the A100's
  // 1g.5gb, not the RTX PRO 6000's 1g.24gb); a two-instance request twice that.
  MigCluster mixed(MixedRtxNodes(1), w);
  const BoundUnits mixed_units = MemoryUnits(mixed);
  EXPECT_EQ(mixed_units.size_by_type[0], small.memory_mib);
  for (size_t t = 0; t < w.types.size(); ++t) {
    int64_t smallest = 0;
    for (int n = 0; n < mixed.node_count(); ++n) {
      const int p = mixed.Intended(n, 0, static_cast<int>(t));
      if (p < 0) continue;
      const int64_t mib =
          int64_t{mixed.nodes()[n]->mig_models[0].profiles()[p].memory_mib} * w.types[t].count;
      if (smallest == 0 || mib < smallest) smallest = mib;
    }
    EXPECT_EQ(mixed_units.size_by_type[t], smallest) << w.types[t].label;
  }
  // The capacity never exceeds the GPUs' memory.
  int64_t memory = 0;
  for (const auto* node : mixed.nodes()) {
    for (const auto& gpu : node->mig_models) memory += gpu.LargestProfileMemory();
  }
  EXPECT_LE(mixed_units.capacity, memory);
  EXPECT_GT(mixed_units.capacity, 0);
}

TEST(PendingPlacementBound, CountsWhatLeavesByTheEndAndWhatIsResidentThen) {
  // Capacity 8, the run from 0 to 10: three 8s of lifetime 1 can follow each other.
  EXPECT_NEAR(PendingPlacementBound({{0, 1, 8}, {0, 1, 8}, {0, 1, 8}}, 8, 0, 10), 3.0, 1e-6);
  // Ending at 2: two can come and go (capacity-time 16), the third is resident at the end.
  EXPECT_NEAR(PendingPlacementBound({{0, 1, 8}, {0, 1, 8}, {0, 1, 8}}, 8, 0, 2), 3.0, 1e-6);
  // A fourth has no room left.
  EXPECT_NEAR(PendingPlacementBound({{0, 1, 8}, {0, 1, 8}, {0, 1, 8}, {0, 1, 8}}, 8, 0, 2), 3.0,
              1e-6);
  // Lifetimes longer than the run: only what is resident at the end counts, in part (a 4, and
  // two thirds of a 6).
  EXPECT_NEAR(PendingPlacementBound({{0, 5, 6}, {0, 5, 4}}, 8, 0, 1), 1.0 + 4.0 / 6, 1e-6);
  // A request larger than the capacity counts nothing.
  EXPECT_NEAR(PendingPlacementBound({{0, 1, 9}}, 8, 0, 10), 0.0, 1e-6);
  // One that arrives late cannot be gone by the end, however short it is.
  // The first can be gone by 5; the two that arrive at 9.5 cannot, and only one is resident at
  // the end.
  EXPECT_NEAR(PendingPlacementBound({{0, 5, 8}, {9.5, 0.2, 8}, {9.5, 1, 8}}, 8, 0, 10), 3.0, 1e-6);
  EXPECT_NEAR(PendingPlacementBound({{0, 5, 8}, {9.5, 1, 8}, {9.5, 1, 8}}, 8, 0, 10), 2.0, 1e-6);
}

TEST(MigUpperBound, PendingQueueBoundsEveryPolicyAndTheReference) {
  struct Case {
    std::vector<model::Node> nodes;
    Workload workload;
    bool overload_shows = true;  // whether the overloaded run is long enough to rule pods out
  };
  const std::vector<Case> cases = {
      {testing::Nodes("A100-40GB", 2, 2), MakeSyntheticWorkload(SyntheticMix::kSmallHeavy)},
      {testing::Nodes("A100-40GB", 2, 2), MakeMemoryMixWorkload(), false},
      {MixedRtxNodes(1), MakeMemoryMixWorkload(), false}};
  for (const Case& c : cases) {
    for (const double load : {0.9, 1.4}) {
      const Stream stream = PoissonStream(c.nodes, c.workload, load, 21);
      MigCluster bound_cluster(c.nodes, c.workload);
      const RunMetrics bound =
          UpperBoundPendingQueue(bound_cluster, stream.arrivals, stream.warmup);
      EXPECT_EQ(bound.arrived, static_cast<int64_t>(stream.arrivals.size() - stream.warmup));
      EXPECT_LE(bound.ever_placed, bound.arrived);
      EXPECT_LE(bound.accepted, bound.ever_placed);
      // Overloaded, the capacity-time rules some out: the bound is not the trivial one.
      if (load > 1 && c.overload_shows) {
        EXPECT_LT(bound.ever_placed, bound.arrived) << c.workload.name;
      }
      std::vector<std::string> names = AllPolicyNames();
      names.emplace_back(kReferencePooledSlices);
      for (const auto& name : names) {
        MigCluster cluster(c.nodes, c.workload);
        auto made = MakePlacer(name, cluster);
        ASSERT_TRUE(made.ok()) << made.error().message;
        const RunMetrics m = RunPendingQueue(*made->placer, stream.arrivals, stream.warmup);
        const std::string where = c.workload.name + " on " + std::to_string(c.nodes.size()) +
                                  " nodes, load " + std::to_string(load) + ", " + name;
        EXPECT_GE(bound.ever_placed, m.ever_placed) << where;
        EXPECT_GE(bound.accepted, m.accepted) << where;
        EXPECT_GE(bound.served_ratio, m.served_ratio) << where;
      }
    }
  }
}

// Where a request's slices depend on the GPU it gets, demand served counts in MiB and the bound
// counts pods in MiB too; it still bounds every policy.
TEST(MigUpperBound, OnMixedRtxBoundsEveryPolicyAtSaturationAndInSteadyState) {
  const Workload w = MakeMemoryMixWorkload();
  const std::vector<model::Node> nodes = MixedRtxNodes(1);
  MigCluster bound_cluster(nodes, w);
  ASSERT_FALSE(bound_cluster.UniformSlices());
  for (uint64_t seed : {5u, 6u}) {
    std::mt19937_64 rng(seed);
    const std::vector<Arrival> arrivals = SampleArrivals(w, 60, rng);
    const RunMetrics bound = UpperBoundSaturation(bound_cluster, arrivals);
    EXPECT_LE(bound.served_slices, bound_cluster.demand_capacity());
    for (const auto& [name, m] : EveryPolicyAtSaturation(nodes, w, arrivals)) {
      EXPECT_GE(bound.served_slices, m.served_slices) << name << " seed " << seed;
      EXPECT_GE(bound.accepted, m.accepted) << name << " seed " << seed;
    }
  }
  for (const double load : {0.6, 0.9, 1.4}) {
    const Stream stream = PoissonStream(nodes, w, load, 31);
    const RunMetrics bound = UpperBoundSteadyState(bound_cluster, stream.arrivals, stream.warmup);
    for (const auto& name : AllPolicyNames()) {
      MigCluster cluster(nodes, w);
      auto policy = MakeMigPolicy(name, cluster);
      ASSERT_TRUE(policy.ok());
      PolicyPlacer placer(cluster, *policy.value());
      const RunMetrics m = RunSteadyState(placer, stream.arrivals, stream.warmup);
      EXPECT_GE(bound.accepted, m.accepted) << "load " << load << " " << name;
      EXPECT_GE(bound.served_ratio, m.served_ratio) << "load " << load << " " << name;
    }
  }
}

}  // namespace
}  // namespace tessera::sim::mig_replay
