#include "core/state/gpu_holders.h"

#include <gtest/gtest.h>

#include "support/builders.h"

namespace tessera::state {
namespace {

using testing::NodeWith;
using testing::RtxPro6000Mig;
using testing::SharingGpu;

TEST(GpuHoldersTest, ListsEachPodOnceByItsPositionOnTheNode) {
  ClusterState s{config::SchedulerConfig{}};
  s.UpsertNode(NodeWith(
      "n", {SharingGpu("GPU-a"), SharingGpu("GPU-b", 32768, 0, 1), RtxPro6000Mig("GPU-m")}));
  // b/two holds GPU-b twice (two containers): listed once.
  s.AddPod(PodReservation{"b/two",
                          "u",
                          "n",
                          0,
                          {{{"GPU-b", "NVIDIA", 1000, 10}}, {{"GPU-b", "NVIDIA", 1000, 10}}},
                          {}});
  s.AddPod(PodReservation{"a/one", "u", "n", 0, {{{"GPU-b", "NVIDIA", 500, 5}}}, {}});
  s.AddPod(PodReservation{"c/mig",
                          "u",
                          "n",
                          0,
                          {{{"GPU-m", "NVIDIA", 24192, 25}}},
                          {{0, 0, "GPU-m", "1g.24gb", {0, 3}, std::nullopt}}});
  // An unreadable annotation holds GPU-a whole.
  PodReservation broken{"d/broken", "u", "n", 0, {}, {}};
  broken.held_gpus = {"GPU-a"};
  s.AddPod(broken);
  // node.pods in key order: a/one, b/two, c/mig, d/broken.
  const auto all = PodsHoldingEachGpu(s, *s.node("n"));
  ASSERT_EQ(all.size(), 3U);
  EXPECT_EQ(all[0], (std::vector<size_t>{3}));
  EXPECT_EQ(all[1], (std::vector<size_t>{0, 1}));
  EXPECT_EQ(all[2], (std::vector<size_t>{2}));
  const auto shared = PodsHoldingEachGpu(s, *s.node("n"), /*shared_only=*/true);
  EXPECT_EQ(shared[1], (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(shared[2].empty());
}

TEST(GpuHoldersTest, AMigOnlyNodeHasNoSharedHolders) {
  ClusterState s{config::SchedulerConfig{}};
  s.UpsertNode(NodeWith("n", {RtxPro6000Mig("GPU-m")}));
  s.AddPod(PodReservation{"c/mig",
                          "u",
                          "n",
                          0,
                          {{{"GPU-m", "NVIDIA", 24192, 25}}},
                          {{0, 0, "GPU-m", "1g.24gb", {0, 3}, std::nullopt}}});
  EXPECT_TRUE(PodsHoldingEachGpu(s, *s.node("n"), true)[0].empty());
  EXPECT_EQ(PodsHoldingEachGpu(s, *s.node("n"))[0], (std::vector<size_t>{0}));
}

}  // namespace
}  // namespace tessera::state
