#include "sim/replay/cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace tessera::sim::replay {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TracePod Pod(int64_t cpu, int64_t mem, int gpus, int64_t milli,
             std::vector<std::string> spec = {}) {
  return TracePod{"pod", cpu, mem, gpus, gpus > 0 ? milli : 0, std::move(spec)};
}

std::vector<TraceNode> TwoNodes() {
  return {{"a", 16000, 1000, 2, "T4"}, {"b", 8000, 500, 4, "V100M16"}};
}

TEST(ReplayCluster, StartsEmpty) {
  ReplayCluster cluster(TwoNodes());
  EXPECT_EQ(cluster.node_count(), 2);
  EXPECT_EQ(cluster.total_gpus(), 6);
  EXPECT_EQ(cluster.total_gpu_milli(), 6000);
  EXPECT_EQ(cluster.allocated_gpu_milli(), 0);
  EXPECT_THAT(cluster.GpuFree(1), ElementsAre(1000, 1000, 1000, 1000));
  EXPECT_EQ(cluster.FullyFreeGpus(1), 4);
  EXPECT_THAT(cluster.model_names(), ElementsAre("T4", "V100M16"));
  EXPECT_EQ(cluster.ModelId(1), 1);
}

TEST(ReplayCluster, FiltersCpuMemoryModelAndGpus) {
  ReplayCluster cluster(TwoNodes());
  EXPECT_TRUE(cluster.Fits(0, Pod(16000, 1000, 0, 0)));
  EXPECT_FALSE(cluster.Fits(0, Pod(16001, 1, 0, 0)));    // CPU
  EXPECT_FALSE(cluster.Fits(1, Pod(1000, 501, 0, 0)));   // memory
  EXPECT_FALSE(cluster.Fits(0, Pod(1000, 1, 3, 1000)));  // three GPUs on a two-GPU node
  EXPECT_TRUE(cluster.Fits(1, Pod(1000, 1, 4, 1000)));
  EXPECT_FALSE(cluster.Fits(0, Pod(1000, 1, 1, 500, {"V100M16", "V100M32"})));  // model
  EXPECT_TRUE(cluster.Fits(1, Pod(1000, 1, 1, 500, {"V100M16", "V100M32"})));
  EXPECT_FALSE(cluster.Fits(1, Pod(1000, 1, 1, 500, {"A100"})));
  EXPECT_THAT(cluster.FeasibleNodes(Pod(9000, 1, 1, 100)), ElementsAre(0));
}

TEST(ReplayCluster, SharingPodNeedsOneGpuWithEnoughFreeMilli) {
  ReplayCluster cluster(TwoNodes());
  ASSERT_TRUE(cluster.Allocate(0, Pod(1000, 1, 1, 700), std::vector<int>{0}).ok());
  ASSERT_TRUE(cluster.Allocate(0, Pod(1000, 1, 1, 800), std::vector<int>{1}).ok());
  EXPECT_THAT(cluster.GpuFree(0), ElementsAre(300, 200));
  EXPECT_TRUE(cluster.Fits(0, Pod(1000, 1, 1, 300)));
  EXPECT_FALSE(cluster.Fits(0, Pod(1000, 1, 1, 301)));
  EXPECT_FALSE(cluster.Fits(0, Pod(1000, 1, 1, 1000)));  // whole GPU: none fully free
  EXPECT_EQ(cluster.FullyFreeGpus(0), 0);
  EXPECT_EQ(cluster.GpuFreeTotal(0), 500);
}

TEST(ReplayCluster, AllocateUpdatesEverythingAndBumpsTheVersion) {
  ReplayCluster cluster(TwoNodes());
  const uint64_t before = cluster.Version(1);
  ASSERT_TRUE(cluster.Allocate(1, Pod(3000, 100, 2, 1000), std::vector<int>{1, 3}).ok());
  EXPECT_EQ(cluster.CpuFree(1), 5000);
  EXPECT_EQ(cluster.MemoryFree(1), 400);
  EXPECT_THAT(cluster.GpuFree(1), ElementsAre(1000, 0, 1000, 0));
  EXPECT_EQ(cluster.FullyFreeGpus(1), 2);
  EXPECT_EQ(cluster.allocated_gpu_milli(), 2000);
  EXPECT_EQ(cluster.idle_gpu_milli(), 4000);
  EXPECT_NE(cluster.Version(1), before);
  ASSERT_TRUE(cluster.Allocate(1, Pod(1000, 1, 1, 500), std::vector<int>{0}).ok());
  ASSERT_TRUE(cluster.Allocate(1, Pod(1000, 1, 0, 0), std::vector<int>{}).ok());
  EXPECT_THAT(cluster.GpuAffinities(1),
              ElementsAre(std::pair<int, int>{2, 1}, std::pair<int, int>{kShareAffinity, 1}));
}

TEST(ReplayCluster, AllocateRefusesWhatTheFiltersRefuse) {
  ReplayCluster cluster(TwoNodes());
  const TracePod sharing = Pod(1000, 1, 1, 600);
  EXPECT_THAT(cluster.Allocate(2, sharing, std::vector<int>{0}).message(), HasSubstr("no node 2"));
  EXPECT_THAT(cluster.Allocate(0, sharing, std::vector<int>{}).message(),
              HasSubstr("expected 1 GPU indices"));
  EXPECT_THAT(cluster.Allocate(0, sharing, std::vector<int>{5}).message(), HasSubstr("no GPU 5"));
  EXPECT_THAT(cluster.Allocate(1, Pod(1000, 1, 2, 1000), std::vector<int>{2, 2}).message(),
              HasSubstr("given twice"));
  ASSERT_TRUE(cluster.Allocate(0, sharing, std::vector<int>{0}).ok());
  EXPECT_THAT(cluster.Allocate(0, sharing, std::vector<int>{0}).message(),
              HasSubstr("only 400 milli free"));
  EXPECT_THAT(cluster.Allocate(0, Pod(99999, 1, 0, 0), std::vector<int>{}).message(),
              HasSubstr("does not fit"));
  EXPECT_EQ(cluster.allocated_gpu_milli(), 600);  // refusals changed nothing
}

// The free resources the baselines score are derived from the placements in the PlacementState,
// the one cluster model of both replays: every allocation is a reservation there.
TEST(ReplayCluster, AllocateReservesThePodInThePlacementState) {
  ReplayCluster cluster(TwoNodes());
  ASSERT_TRUE(cluster.Allocate(1, Pod(3000, 100, 2, 1000), std::vector<int>{1, 3}, "t/a").ok());
  ASSERT_TRUE(cluster.Allocate(1, Pod(1000, 1, 1, 300), std::vector<int>{0}).ok());
  const state::ClusterState& state = cluster.placement_state().state();
  const state::PodReservation* pod = state.pod("t/a");
  ASSERT_NE(pod, nullptr);
  EXPECT_EQ(pod->node, StateNodeName(1));
  EXPECT_EQ(pod->cpu_milli, 3000);
  ASSERT_NE(state.pod("replay/pod-1"), nullptr);  // no key given: named by its number
  const state::NodeState* node = state.node(StateNodeName(1));
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->cpu_used_milli, 4000);
  for (int g = 0; g < 4; ++g) {
    EXPECT_EQ(node->usage[g].used_mem, kMibPerGpu - cluster.GpuFree(1)[g]) << "GPU " << g;
  }
  const std::optional<Choice> placed = cluster.PlacementOf("t/a");
  ASSERT_TRUE(placed);
  EXPECT_EQ(placed->node, 1);
  EXPECT_THAT(placed->gpus, ElementsAre(1, 3));
  EXPECT_FALSE(cluster.PlacementOf("t/none"));
  // A refused allocation reserves nothing.
  EXPECT_FALSE(cluster.Allocate(1, Pod(1000, 1, 1, 800), std::vector<int>{0}, "t/b").ok());
  EXPECT_EQ(state.pod("t/b"), nullptr);
}

// A policy that reserves in the state itself (tessera's scheduler) has the cluster record it;
// what the filters would refuse is released again.
TEST(ReplayCluster, RecordTakesWhatAPolicyReservedItself) {
  ReplayCluster cluster(TwoNodes());
  state::PodReservation r;
  r.key = r.uid = "t/self";
  r.node = StateNodeName(1);
  r.cpu_milli = 1000;
  r.devices = {{codec::ContainerDevice{"GPU-1-2", "NVIDIA", 700, 0}}};
  cluster.placement_state().Reserve(r);
  ASSERT_TRUE(cluster.Record("t/self", Pod(1000, 10, 1, 700)).ok());
  EXPECT_THAT(cluster.GpuFree(1), ElementsAre(1000, 1000, 300, 1000));
  EXPECT_EQ(cluster.CpuFree(1), 7000);
  EXPECT_EQ(cluster.allocated_gpu_milli(), 700);

  r.key = r.uid = "t/too-big";  // GPU 2 has 300 milli left
  cluster.placement_state().Reserve(r);
  EXPECT_THAT(cluster.Record("t/too-big", Pod(1000, 10, 1, 700)).message(),
              HasSubstr("only 300 milli free"));
  EXPECT_EQ(cluster.placement_state().state().pod("t/too-big"), nullptr);
  EXPECT_EQ(cluster.allocated_gpu_milli(), 700);
  EXPECT_THAT(cluster.Record("t/never", Pod(1000, 10, 1, 700)).message(),
              HasSubstr("no reservation t/never"));
}

TEST(GpuAffinityOf, Tags) {
  EXPECT_EQ(GpuAffinityOf(Pod(1, 1, 0, 0)), kNoAffinity);
  EXPECT_EQ(GpuAffinityOf(Pod(1, 1, 1, 500)), kShareAffinity);
  EXPECT_EQ(GpuAffinityOf(Pod(1, 1, 1, 1000)), 1);
  EXPECT_EQ(GpuAffinityOf(Pod(1, 1, 8, 1000)), 8);
}

}  // namespace
}  // namespace tessera::sim::replay
