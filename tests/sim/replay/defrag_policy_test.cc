#include "sim/replay/defrag_policy.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "sim/replay/cluster.h"
#include "sim/replay/runner.h"
#include "sim/replay/tessera_policy.h"
#include "sim/replay/workload.h"

namespace tessera::sim::replay {
namespace {

TEST(TesseraDefragPolicyName, SaysHowManyEvictionsAPlanMayMake) {
  EXPECT_EQ(TesseraDefragPolicyName(2), "tessera+defrag-2");
  EXPECT_EQ(TesseraDefragEvictionsOf("tessera+defrag-2"), 2);
  EXPECT_EQ(TesseraDefragEvictionsOf("tessera+defrag-32"), 32);
  for (const char* other : {"tessera", "tessera+defrag-", "tessera+defrag-0", "tessera+defrag-33",
                            "tessera+defrag-2x", "fgd"}) {
    EXPECT_EQ(TesseraDefragEvictionsOf(other), 0) << other;
  }
}

// Eviction and re-placement keep the replay's index (free milli-GPU, host CPU, memory) and the
// scheduler's state in step, and a released pod can be put back where it was.
TEST(ReplayClusterMoves, ReleaseAndAdoptKeepTheIndexAndTheStateInStep) {
  ReplayCluster cluster({{"a", 8000, 4096, 2, "T4"}, {"b", 8000, 4096, 2, "T4"}});
  const TracePod pod{"p", 3000, 1024, 1, 600, {}};
  ASSERT_TRUE(cluster.Allocate(0, pod, std::vector<int>{1}, "trace/p").ok());
  EXPECT_EQ(cluster.allocated_gpu_milli(), 600);
  const uint64_t version = cluster.Version(0);
  Result<state::PodReservation> was = cluster.Release("trace/p", pod);
  ASSERT_TRUE(was.ok()) << was.error().message;
  EXPECT_EQ(cluster.allocated_gpu_milli(), 0);
  EXPECT_EQ(cluster.CpuFree(0), 8000);
  EXPECT_EQ(cluster.MemoryFree(0), 4096);
  EXPECT_EQ(cluster.FullyFreeGpus(0), 2);
  EXPECT_NE(cluster.Version(0), version);
  EXPECT_EQ(cluster.placement_state().state().pod("trace/p"), nullptr);
  EXPECT_FALSE(cluster.Release("trace/p", pod).ok());
  // Adopted on the other node: its GPU as the reservation names it.
  state::PodReservation moved = *was;
  moved.node = StateNodeName(1);
  moved.devices[0][0].uuid = "GPU-1-0";
  ASSERT_TRUE(cluster.Adopt(pod, moved).ok());
  EXPECT_EQ(cluster.GpuFree(1)[0], 400);
  EXPECT_EQ(cluster.CpuFree(1), 5000);
  EXPECT_EQ(cluster.PlacementOf("trace/p")->node, 1);
  // What the filters refuse changes nothing.
  const TracePod big{"q", 6000, 1024, 1, 600, {}};
  state::PodReservation too_big = *was;
  too_big.key = too_big.uid = "trace/q";
  too_big.node = StateNodeName(1);
  too_big.devices[0][0].uuid = "GPU-1-1";
  EXPECT_FALSE(cluster.Adopt(big, too_big).ok());  // host CPU: 5000 left
  EXPECT_EQ(cluster.placement_state().state().pod("trace/q"), nullptr);
  EXPECT_EQ(cluster.GpuFree(1)[1], 1000);
}

std::vector<TraceNode> SmallFleet() {
  std::vector<TraceNode> nodes;
  for (int i = 0; i < 12; ++i) {
    nodes.push_back({"node-" + std::to_string(i), 64000, 262144, i % 3 == 0 ? 8 : 4, "T4"});
  }
  return nodes;
}

// Shared and whole-GPU pods in a mix that leaves shared GPUs part-used when whole-GPU pods come.
std::vector<TracePod> Overload() {
  std::mt19937_64 rng(7);
  std::vector<TracePod> pods;
  for (int i = 0; i < 160; ++i) {
    TracePod pod;
    pod.name = "pod-" + std::to_string(i);
    pod.cpu_milli = 1000;
    pod.memory_mib = 1024;
    pod.num_gpu = 1;
    pod.gpu_milli = i % 3 == 2 ? 1000 : 200 + 100 * static_cast<int64_t>(rng() % 6);
    pods.push_back(pod);
  }
  return pods;
}

// Behind a policy that spreads shared pods (random), whole-GPU pods find no free GPU; the
// defragmentation planner then moves running pods (placed again by tessera's scheduler) so that
// they fit, and every move leaves the replay's index and the scheduler's state agreeing.
TEST(TesseraDefragPolicy, PlacesRefusedPodsByMovingRunningOnesAndKeepsTheClusterConsistent) {
  const std::vector<TracePod> pods = Overload();
  const TargetWorkload target = BuildTargetWorkload(pods);
  auto place_all = [&](Policy& policy, ReplayCluster& cluster) {
    std::mt19937_64 rng(1);
    int placed = 0;
    for (size_t i = 0; i < pods.size(); ++i) {
      Result<PlaceOutcome> outcome = policy.Place(cluster, pods[i], TraceArrivalKey(i), rng);
      EXPECT_TRUE(outcome.ok()) << outcome.error().message;
      if (outcome.ok() && *outcome == PlaceOutcome::kPlaced) ++placed;
    }
    return placed;
  };
  ReplayCluster plain_cluster(SmallFleet());
  auto plain = MakePolicy("random", target);
  ASSERT_TRUE(plain.ok());
  const int plain_placed = place_all(**plain, plain_cluster);
  ReplayCluster cluster(SmallFleet());
  auto inner = MakePolicy("random", target);
  ASSERT_TRUE(inner.ok());
  auto defrag = MakeTesseraDefragPolicy(2, std::move(inner.value()));
  const int placed = place_all(*defrag, cluster);
  // Evictions are counted only when the pod they were for was placed. (The runs draw alike only
  // until the first move, so the two totals are not compared.)
  EXPECT_GT(defrag->evictions(), 0);
  EXPECT_GT(plain_placed, 0);
  const state::ClusterState& state = cluster.placement_state().state();
  int64_t used = 0;
  for (int n = 0; n < cluster.node_count(); ++n) {
    const state::NodeState& node = *state.node(StateNodeName(n));
    EXPECT_EQ(node.cpu_used_milli, cluster.CpuCapacity(n) - cluster.CpuFree(n)) << n;
    for (int g = 0; g < cluster.GpuCount(n); ++g) {
      EXPECT_EQ(node.usage[g].used_mem, kMibPerGpu - cluster.GpuFree(n)[g]) << n << "/" << g;
      used += node.usage[g].used_mem;
    }
  }
  EXPECT_EQ(used, cluster.allocated_gpu_milli());
  EXPECT_EQ(static_cast<int>(state.pods().size()), placed);
}

}  // namespace
}  // namespace tessera::sim::replay
