#include "sim/replay/upper_bound.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "sim/replay/metrics.h"
#include "sim/replay/policy.h"
#include "sim/replay/runner.h"
#include "sim/replay/tessera_policy.h"

namespace tessera::sim::replay {
namespace {

TracePod GpuPod(const std::string& name, int64_t cpu, int num_gpu, int64_t milli,
                std::vector<std::string> spec = {}) {
  TracePod pod;
  pod.name = name;
  pod.cpu_milli = cpu;
  pod.memory_mib = 1024;
  pod.num_gpu = num_gpu;
  pod.gpu_milli = milli;
  pod.gpu_spec = std::move(spec);
  return pod;
}

double Bound(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods) {
  auto bound = AllocationUpperBound(nodes, pods);
  EXPECT_TRUE(bound.ok()) << bound.error().message;
  return bound.ok() ? bound->gpu_alloc_pct : NAN;
}

TEST(AllocationUpperBound, TwoRequestsAboveHalfAGpuNeverShareOne) {
  // Fluid packing would put 1800 milli on 2 GPUs; only two of the three 600s fit.
  const std::vector<TraceNode> nodes = {{"n", 64000, 65536, 2, "T4"}};
  const std::vector<TracePod> pods = {GpuPod("a", 1000, 1, 600), GpuPod("b", 1000, 1, 600),
                                      GpuPod("c", 1000, 1, 600)};
  EXPECT_NEAR(Bound(nodes, pods), 60.0, 1e-6);
}

TEST(AllocationUpperBound, SmallRequestsFillWhatTheLargeOnesLeave) {
  const std::vector<TraceNode> nodes = {{"n", 64000, 65536, 2, "T4"}};
  std::vector<TracePod> pods = {GpuPod("a", 1000, 1, 600), GpuPod("b", 1000, 1, 600),
                                GpuPod("c", 1000, 1, 600)};
  for (int i = 0; i < 4; ++i) pods.push_back(GpuPod("s" + std::to_string(i), 1000, 1, 200));
  EXPECT_NEAR(Bound(nodes, pods), 100.0, 1e-6);
}

TEST(AllocationUpperBound, RoomBesideALargeRequestOnlyHoldsRequestsThatFitIt) {
  // An 810 leaves 190, where no 300 fits: the best is one 810 and three 300s (1710 of 2000),
  // although the 300s alone could fill the room the two 810s leave in total. The relaxation
  // fills 4/3 GPUs with 300s and 2/3 with an 810: 1740 (without patterns it would be 2000).
  const std::vector<TraceNode> nodes = {{"n", 64000, 65536, 2, "T4"}};
  std::vector<TracePod> pods = {GpuPod("a", 1000, 1, 810), GpuPod("b", 1000, 1, 810)};
  for (int i = 0; i < 4; ++i) pods.push_back(GpuPod("s" + std::to_string(i), 1000, 1, 300));
  auto bound = AllocationUpperBound(nodes, pods);
  ASSERT_TRUE(bound.ok());
  EXPECT_NEAR(bound->gpu_alloc_pct, 87.0, 1e-6);
  EXPECT_EQ(bound->gpu_patterns, 2);  // {810} and {300, 300, 300}
  // Largest first, the packing puts an 810 on each GPU.
  EXPECT_NEAR(bound->offline_packing_pct, 81.0, 1e-6);
}

TEST(AllocationUpperBound, CpuLimitsTheGpuPodsANodeHolds) {
  // 4 cores for pods of 3 cores: the relaxation allows 4/3 of a one-GPU pod.
  const std::vector<TraceNode> nodes = {{"n", 4000, 65536, 2, "T4"}};
  const std::vector<TracePod> pods = {GpuPod("a", 3000, 1, 1000), GpuPod("b", 3000, 1, 1000)};
  EXPECT_NEAR(Bound(nodes, pods), 100.0 * (4000.0 / 3000.0) * 1000 / 2000, 1e-6);
}

TEST(AllocationUpperBound, APodOnlyCountsOnTheModelsItAccepts) {
  const std::vector<TraceNode> nodes = {{"t4", 64000, 65536, 2, "T4"},
                                        {"v100", 64000, 65536, 2, "V100M16"}};
  const std::vector<TracePod> pods = {GpuPod("a", 1000, 1, 1000, {"V100M16"}),
                                      GpuPod("b", 1000, 1, 1000, {"V100M16"}),
                                      GpuPod("c", 1000, 1, 1000, {"V100M16"})};
  EXPECT_NEAR(Bound(nodes, pods), 50.0, 1e-6);
}

TEST(AllocationUpperBound, PodsOfMoreThanHalfTheNodesGpusTakeANodeEach) {
  // Two 5-GPU pods cannot share an 8-GPU node, and a 9-GPU pod fits nowhere.
  const std::vector<TraceNode> nodes = {{"n", 64000, 65536, 8, "T4"}};
  const std::vector<TracePod> pods = {GpuPod("a", 1000, 5, 1000), GpuPod("b", 1000, 5, 1000),
                                      GpuPod("c", 1000, 9, 1000)};
  EXPECT_NEAR(Bound(nodes, pods), 62.5, 1e-6);
}

TEST(AllocationUpperBound, CpuOnlyPodsAndEmptyInputsAllocateNothing) {
  const std::vector<TraceNode> nodes = {{"n", 64000, 65536, 2, "T4"}};
  TracePod cpu_only;
  cpu_only.name = "cpu";
  cpu_only.cpu_milli = 1000;
  auto bound = AllocationUpperBound(nodes, std::vector<TracePod>{cpu_only});
  ASSERT_TRUE(bound.ok());
  EXPECT_EQ(bound->gpu_alloc_pct, 0);
  EXPECT_EQ(bound->pod_types, 0);
  auto no_nodes = AllocationUpperBound({}, std::vector<TracePod>{GpuPod("a", 1, 1, 1000)});
  ASSERT_TRUE(no_nodes.ok());
  EXPECT_EQ(no_nodes->gpu_alloc_pct, 0);
}

TEST(AllocationUpperBound, NodesAndPodsAreGroupedIntoClassesAndTypes) {
  const std::vector<TraceNode> nodes = {{"a", 64000, 65536, 2, "T4"},
                                        {"b", 64000, 65536, 2, "T4"},
                                        {"c", 96000, 65536, 8, "V100M16"}};
  const std::vector<TracePod> pods = {GpuPod("x", 1000, 1, 500), GpuPod("y", 1000, 1, 500),
                                      GpuPod("z", 2000, 1, 500)};
  auto bound = AllocationUpperBound(nodes, pods);
  ASSERT_TRUE(bound.ok());
  EXPECT_EQ(bound->node_classes, 2);
  EXPECT_EQ(bound->pod_types, 2);
}

// A synthetic cluster of mixed models and node sizes, pods of every kind.
std::vector<TraceNode> MixedNodes() {
  std::vector<TraceNode> nodes;
  for (int i = 0; i < 30; ++i) {
    const int gpus = i % 3 == 0 ? 8 : (i % 3 == 1 ? 2 : 4);
    nodes.push_back({"node-" + std::to_string(100 + i), int64_t{gpus} * 3000, int64_t{gpus} * 32768,
                     gpus, i % 4 == 0 ? "V100M16" : "T4"});
  }
  return nodes;
}

std::vector<TracePod> MixedPods() {
  std::mt19937_64 rng(7);
  std::vector<TracePod> pods;
  const int64_t shares[] = {100, 250, 460, 500, 650, 810};
  for (int i = 0; i < 300; ++i) {
    const int64_t cpu = 2000 + 1000 * static_cast<int64_t>(rng() % 10);
    const std::string name = "pod-" + std::to_string(i);
    switch (rng() % 6) {
      case 0:
        pods.push_back(GpuPod(name, cpu, 0, 0));
        break;
      case 1:
      case 2:
        pods.push_back(GpuPod(name, cpu, 1, shares[rng() % 6]));
        break;
      case 3:
        pods.push_back(GpuPod(name, cpu, 1, 1000));
        break;
      default:
        pods.push_back(GpuPod(
            name, cpu, rng() % 2 == 0 ? 2 : 4, 1000,
            rng() % 3 == 0 ? std::vector<std::string>{"V100M16"} : std::vector<std::string>{}));
    }
  }
  return pods;
}

TEST(UpperBoundPerSeed, IsAtOrAboveEveryPolicyAtEveryArrivedLoad) {
  const std::vector<TraceNode> nodes = MixedNodes();
  const std::vector<TracePod> pods = MixedPods();
  const std::vector<uint64_t> seeds = {1, 2, 3};
  auto bounds = UpperBoundPerSeed(nodes, pods, seeds);
  ASSERT_TRUE(bounds.ok()) << bounds.error().message;
  ASSERT_EQ(bounds->size(), seeds.size());
  PolicyFactories extra;
  extra["tessera"] = [](const TargetWorkload&) { return MakeTesseraPolicy(); };
  for (const char* policy :
       {"random", "dotprod", "gpuclustering", "gpupacking", "bestfit", "fgd", "tessera"}) {
    auto runs = RunReplay(nodes, pods, policy, seeds, 1.3, 1, &extra);
    ASSERT_TRUE(runs.ok()) << runs.error().message;
    for (size_t i = 0; i < seeds.size(); ++i) {
      const double bound = (*bounds)[i].gpu_alloc_pct;
      for (double allocated : (*runs)[i].series.gpu_alloc_pct) {
        if (std::isnan(allocated)) continue;
        // The series is rounded to 2 decimals.
        EXPECT_LE(allocated, bound + 0.005) << policy << " seed " << seeds[i];
      }
      // The offline packing is a placement: it cannot beat the bound either.
      EXPECT_LE((*bounds)[i].offline_packing_pct, bound + 1e-6);
    }
  }
}

TEST(UpperBoundPerSeed, BoundsTheSameWorkloadTheReplayDraws) {
  // Seeds draw different inflated workloads, so their bounds may differ; the same seed gives
  // the same bound.
  const std::vector<TraceNode> nodes = MixedNodes();
  const std::vector<TracePod> pods = MixedPods();
  auto a = UpperBoundPerSeed(nodes, pods, {5, 6});
  auto b = UpperBoundPerSeed(nodes, pods, {6});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)[1].gpu_alloc_pct, (*b)[0].gpu_alloc_pct);
}

}  // namespace
}  // namespace tessera::sim::replay
