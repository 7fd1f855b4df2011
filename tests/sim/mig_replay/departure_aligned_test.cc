#include "sim/mig_replay/departure_aligned.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/mig_replay/benchmark.h"
#include "sim/mig_replay/protocol.h"
#include "test_fleet.h"

namespace tessera::sim::mig_replay {
namespace {

// `uniform`'s types: 1g, 2g, 3g, 4g, 7g of an A100.
constexpr int k3g = 2;
constexpr int k4g = 3;
constexpr int k7g = 4;

// Which GPU of the node holds pod `key`'s first instance; -1 when none.
int DeviceOf(const MigCluster& cluster, const std::string& key) {
  const state::NodeState& node = *cluster.nodes()[0];
  for (size_t d = 0; d < node.instances.size(); ++d) {
    for (const state::MigInstance& instance : node.instances[d]) {
      if (instance.pod_key == key) return static_cast<int>(d);
    }
  }
  return -1;
}

// Two A100s: a 4g on GPU 0 leaving at 1, a 4g on GPU 1 leaving at 10; a 3g fits beside either.
// Leaving at 5, it goes to GPU 1, which is busy past then anyway, so GPU 0 empties at 1 and a 7g
// at 2 finds it. Best-fit sees two equally full GPUs, takes the first and refuses the 7g.
TEST(DepartureAligned, PutsAPodWhereItKeepsAGpuBusyLeast) {
  const Workload w = MakeSyntheticWorkload(SyntheticMix::kUniform);
  const auto nodes = testing::Nodes("A100-40GB", 2);
  const std::vector<Arrival> arrivals = {
      {k4g, 0, 1}, {k4g, 0.05, 9.95}, {k3g, 0.1, 4.9}, {k7g, 2, 1}};

  MigCluster aligned_cluster(nodes, w);
  auto aligned_policy = MakeDepartureAlignedPolicy(arrivals);
  PolicyPlacer aligned(aligned_cluster, *aligned_policy);
  for (size_t i = 0; i < 3; ++i) ASSERT_TRUE(aligned.Place(ArrivalKey(i), arrivals[i].type)) << i;
  EXPECT_EQ(DeviceOf(aligned_cluster, ArrivalKey(0)), 0);
  EXPECT_EQ(DeviceOf(aligned_cluster, ArrivalKey(1)), 1);
  EXPECT_EQ(DeviceOf(aligned_cluster, ArrivalKey(2)), 1) << "the 3g goes beside the long 4g";

  MigCluster run_aligned(nodes, w);
  auto policy = MakeDepartureAlignedPolicy(arrivals);
  PolicyPlacer placer(run_aligned, *policy);
  const RunMetrics with_departures = RunSteadyState(placer, arrivals, 0);
  EXPECT_EQ(with_departures.accepted, 4);

  MigCluster run_best_fit(nodes, w);
  auto best_fit = MakePlacer("best-fit", run_best_fit);
  ASSERT_TRUE(best_fit.ok());
  const RunMetrics without = RunSteadyState(*best_fit->placer, arrivals, 0);
  EXPECT_EQ(without.accepted, 3) << "best-fit keeps GPU 0 busy with the 3g and refuses the 7g";
}

// It never opens an empty GPU while a busy one has room: an empty GPU is kept busy for the pod's
// whole life, a busy one at most that long. A key outside the stream is refused.
TEST(DepartureAligned, FillsBusyGpusBeforeOpeningAnEmptyOne) {
  const Workload w = MakeSyntheticWorkload(SyntheticMix::kUniform);
  const auto nodes = testing::Nodes("A100-40GB", 2);
  const std::vector<Arrival> arrivals = {{k3g, 0, 1}, {k3g, 0.5, 20}};
  MigCluster cluster(nodes, w);
  auto policy = MakeDepartureAlignedPolicy(arrivals);
  PolicyPlacer placer(cluster, *policy);
  ASSERT_TRUE(placer.Place(ArrivalKey(0), k3g));
  ASSERT_TRUE(placer.Place(ArrivalKey(1), k3g));
  EXPECT_EQ(DeviceOf(cluster, ArrivalKey(1)), DeviceOf(cluster, ArrivalKey(0)));
  EXPECT_FALSE(placer.Place(ArrivalKey(2), k3g));
  EXPECT_FALSE(placer.Place("not-a-stream-key", k3g));
}

// With the LP's spans, an instance takes its request's preferred span where that is free, and
// the largest free run where it is not (or where it has none).
TEST(DepartureAligned, TakesTheLpsPreferredSpanWhereItIsFree) {
  const Workload w = MakeSyntheticWorkload(SyntheticMix::kUniform);
  constexpr int k1g = 0;
  const std::vector<Arrival> arrivals = {{k1g, 0, 1}, {k1g, 0.1, 1}, {k1g, 0.2, 1}};
  MigCluster cluster(testing::Nodes("A100-40GB", 1), w);
  const mig::GpuMigModel& gpu = cluster.nodes()[0]->mig_models[0];
  const int intended = cluster.Intended(0, 0, k1g);
  const model::Placement& third = gpu.profiles()[intended].placements.at(3);
  const std::vector<uint32_t> spans = {mig::PlacementMask(third), mig::PlacementMask(third), 0};
  auto policy = MakeDepartureAlignedPolicy(arrivals, &spans);
  EXPECT_EQ(policy->Name(), kOfflineLpSpans);
  PolicyPlacer placer(cluster, *policy);
  for (size_t i = 0; i < arrivals.size(); ++i) ASSERT_TRUE(placer.Place(ArrivalKey(i), k1g)) << i;
  std::vector<int> starts;
  for (const state::MigInstance& instance : cluster.nodes()[0]->instances[0]) {
    starts.push_back(static_cast<int>(instance.placement.start));
  }
  ASSERT_EQ(starts.size(), 3u);
  EXPECT_EQ(starts[0], static_cast<int>(third.start)) << "the preferred span";
  EXPECT_NE(starts[1], static_cast<int>(third.start)) << "taken: elsewhere";
  MigCluster alone(testing::Nodes("A100-40GB", 1), w);
  auto unguided = MakeDepartureAlignedPolicy(arrivals);
  PolicyPlacer unguided_placer(alone, *unguided);
  ASSERT_TRUE(unguided_placer.Place(ArrivalKey(0), k1g));
  EXPECT_NE(alone.nodes()[0]->instances[0].at(0).placement.start, third.start)
      << "without the span the largest free run decides";
}

}  // namespace
}  // namespace tessera::sim::mig_replay
