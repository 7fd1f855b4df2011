#include "core/sched/fragmentation.h"

#include <gtest/gtest.h>

namespace tessera::sched {
namespace {

NodeCapacity Node(std::vector<int32_t> free, std::optional<int64_t> cpu = std::nullopt,
                  std::string type = "V100") {
  NodeCapacity c;
  c.gpu_free_mem = free;
  c.gpu_total_mem.assign(free.size(), 1000);
  c.gpu_free_cores.assign(free.size(), 100);
  c.gpu_usable.assign(free.size(), true);
  c.gpu_type = std::move(type);
  c.cpu_free_milli = cpu;
  return c;
}

DemandShape Shape(int gpus, int mem, int64_t cpu = 0, std::string type = "") {
  DemandShape s;
  s.gpus = gpus;
  s.gpu_mem_mib = mem;
  s.cpu_milli = cpu;
  s.gpu_type = std::move(type);
  return s;
}

TEST(NodeFragmentationTest, GpusTooSmallForAFittingShapeAreFragments) {
  // A 500-milli shape fits (GPU 0); GPU 1's 300 free cannot hold it.
  EXPECT_DOUBLE_EQ(NodeFragmentation(Node({800, 300}), {{Shape(1, 500), 1.0}}), 0.3);
}

TEST(NodeFragmentationTest, AShapeThatDoesNotFitMakesAllFreeCapacityFragment) {
  EXPECT_DOUBLE_EQ(NodeFragmentation(Node({800, 300}), {{Shape(1, 900), 1.0}}), 1.1);
  // Two whole GPUs: only one is fully free.
  EXPECT_DOUBLE_EQ(NodeFragmentation(Node({1000, 300}), {{Shape(2, 1000), 1.0}}), 1.3);
  // The host lacks CPU for the shape.
  EXPECT_DOUBLE_EQ(NodeFragmentation(Node({1000}, 100), {{Shape(1, 100, 200), 1.0}}), 1.0);
  // The shape asks for another model.
  EXPECT_DOUBLE_EQ(NodeFragmentation(Node({1000}), {{Shape(1, 100, 0, "T4,A10"), 1.0}}), 1.0);
  EXPECT_DOUBLE_EQ(NodeFragmentation(Node({1000}), {{Shape(1, 100, 0, "T4,V100"), 1.0}}), 0.0);
}

TEST(NodeFragmentationTest, CpuOnlyShapesCountAllFreeGpuAndWeightsAdd) {
  std::vector<WeightedShape> mix = {{Shape(0, 0, 1000), 0.25}, {Shape(1, 500), 0.75}};
  EXPECT_DOUBLE_EQ(NodeFragmentation(Node({800, 300}), mix), 0.25 * 1.1 + 0.75 * 0.3);
}

TEST(NodeFragmentationTest, UnusableGpusAreLeftOut) {
  NodeCapacity n = Node({800, 300});
  n.gpu_usable[1] = false;
  EXPECT_DOUBLE_EQ(NodeFragmentation(n, {{Shape(1, 500), 1.0}}), 0.0);
}

TEST(DemandMixTest, TargetKeepsTheMostFrequentShapesAndRenormalises) {
  DemandMix mix(1.0, 0.9);
  for (int i = 0; i < 6; ++i) mix.Observe(Shape(1, 500));
  for (int i = 0; i < 3; ++i) mix.Observe(Shape(1, 1000));
  mix.Observe(Shape(2, 1000));
  const auto& target = mix.Target();
  ASSERT_EQ(target.size(), 2U);  // 6 + 3 of 10 reach 90%
  EXPECT_EQ(target[0].shape, Shape(1, 500));
  EXPECT_DOUBLE_EQ(target[0].weight, 6.0 / 9.0);
  EXPECT_DOUBLE_EQ(target[1].weight, 3.0 / 9.0);
}

TEST(DemandMixTest, DecayFollowsTheRecentWorkload) {
  DemandMix mix(0.5, 1.0);
  for (int i = 0; i < 10; ++i) mix.Observe(Shape(1, 500));
  for (int i = 0; i < 10; ++i) mix.Observe(Shape(1, 100));
  const auto& target = mix.Target();
  ASSERT_EQ(target.size(), 2U);
  EXPECT_EQ(target[0].shape, Shape(1, 100));
  EXPECT_GT(target[0].weight, 0.99);
}

}  // namespace
}  // namespace tessera::sched
