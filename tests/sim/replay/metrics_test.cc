#include "sim/replay/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace tessera::sim::replay {
namespace {

PodShape Shape(int64_t cpu, int gpus, int64_t milli, std::vector<std::string> models = {}) {
  TracePod pod{"p", cpu, 1, gpus, gpus > 0 ? milli : 0, std::move(models)};
  return ShapeOf(pod);
}

TracePod Pod(int64_t cpu, int gpus, int64_t milli) {
  return TracePod{"p", cpu, 1, gpus, gpus > 0 ? milli : 0, {}};
}

// frag.go, GetNodePodFrag and NodeGpuShareFragAmount, case by case. Node: 10 cores, GPUs with
// 1000, 300 and 0 milli free (1300 idle).
TEST(ShapeFrag, FragGoCases) {
  const std::vector<int32_t> gpus = {1000, 300, 0};
  // Q3: the shape fits; only GPUs with less than its 500 milli are fragment: 300 + 0.
  EXPECT_EQ(ClassifyFrag(Shape(4000, 1, 500), 10000, "T4", gpus), FragCase::kQ3Satisfied);
  EXPECT_EQ(ShapeFrag(Shape(4000, 1, 500), 10000, "T4", gpus), 300);
  // Q3 for a whole GPU: the partly used GPUs are fragment.
  EXPECT_EQ(ShapeFrag(Shape(4000, 1, 1000), 10000, "T4", gpus), 300);
  // Q4: GPUs fit, CPU does not: all idle GPU milli.
  EXPECT_EQ(ClassifyFrag(Shape(12000, 1, 500), 10000, "T4", gpus), FragCase::kQ4LackCpu);
  EXPECT_EQ(ShapeFrag(Shape(12000, 1, 500), 10000, "T4", gpus), 1300);
  // Q2: CPU fits, two whole GPUs do not.
  EXPECT_EQ(ClassifyFrag(Shape(4000, 2, 1000), 10000, "T4", gpus), FragCase::kQ2LackGpu);
  EXPECT_EQ(ShapeFrag(Shape(4000, 2, 1000), 10000, "T4", gpus), 1300);
  // Q1: neither.
  EXPECT_EQ(ClassifyFrag(Shape(12000, 2, 1000), 10000, "T4", gpus), FragCase::kQ1LackBoth);
  EXPECT_EQ(ShapeFrag(Shape(12000, 2, 1000), 10000, "T4", gpus), 1300);
  // XL / XR: a CPU-only shape can never use the GPUs: all idle milli, CPU fitting or not.
  EXPECT_EQ(ClassifyFrag(Shape(4000, 0, 0), 10000, "T4", gpus), FragCase::kXlSatisfied);
  EXPECT_EQ(ClassifyFrag(Shape(12000, 0, 0), 10000, "T4", gpus), FragCase::kXrLackCpu);
  EXPECT_EQ(ShapeFrag(Shape(4000, 0, 0), 10000, "T4", gpus), 1300);
  EXPECT_EQ(ShapeFrag(Shape(12000, 0, 0), 10000, "T4", gpus), 1300);
  // No access: the shape wants another model.
  EXPECT_EQ(ClassifyFrag(Shape(4000, 1, 500, {"V100M16"}), 10000, "T4", gpus), FragCase::kNoAccess);
  EXPECT_EQ(ShapeFrag(Shape(4000, 1, 500, {"V100M16"}), 10000, "T4", gpus), 1300);
  EXPECT_EQ(ClassifyFrag(Shape(4000, 1, 500, {"V100M16", "T4"}), 10000, "T4", gpus),
            FragCase::kQ3Satisfied);
  // A node without GPUs: a typed shape has no access, an untyped one lacks GPUs.
  EXPECT_EQ(ClassifyFrag(Shape(4000, 1, 500, {"T4"}), 10000, "", {}), FragCase::kNoAccess);
  EXPECT_EQ(ClassifyFrag(Shape(4000, 1, 500), 10000, "", {}), FragCase::kQ2LackGpu);
}

TEST(FragCalculator, IsTheProbabilityWeightedSum) {
  TargetWorkload target;
  target.shapes = {{Shape(4000, 1, 500), 1, 0.25},
                   {Shape(0, 0, 0), 1, 0.5},
                   {Shape(4000, 1, 500, {"V100M16"}), 1, 0.25}};
  const std::vector<std::string> models = {"T4", "V100M16"};
  FragCalculator frag(target, models);
  const std::vector<int32_t> gpus = {1000, 300, 0};
  EXPECT_DOUBLE_EQ(frag.NodeFrag(10000, 0, gpus), 0.25 * 300 + 0.5 * 1300 + 0.25 * 1300);
  EXPECT_DOUBLE_EQ(frag.NodeFrag(10000, 1, gpus), 0.25 * 300 + 0.5 * 1300 + 0.25 * 300);
  EXPECT_DOUBLE_EQ(frag.probability_sum(), 1.0);

  ReplayCluster cluster({{"n", 10000, 100, 3, "T4"}});
  EXPECT_DOUBLE_EQ(frag.NodeFrag(cluster, 0), 0.25 * 0 + 0.5 * 3000 + 0.25 * 3000);
}

TEST(BuildTargetWorkload, KeepsTheMostFrequentShapesUpToTheThreshold) {
  std::vector<TracePod> pods;
  for (int i = 0; i < 6; ++i) pods.push_back(Pod(1000, 1, 500));  // A
  for (int i = 0; i < 3; ++i) pods.push_back(Pod(2000, 0, 0));    // B
  pods.push_back(Pod(3000, 1, 1000));                             // C
  TargetWorkload target = BuildTargetWorkload(pods, 80);
  EXPECT_EQ(target.pods, 10);
  EXPECT_EQ(target.distinct_shapes, 3u);
  ASSERT_EQ(target.shapes.size(), 2u);  // 6 < 8, 6 + 3 >= 8
  EXPECT_EQ(target.shapes[0].shape, ShapeOf(Pod(1000, 1, 500)));
  EXPECT_EQ(target.shapes[0].count, 6);
  EXPECT_NEAR(target.shapes[0].probability, 6.0 / 9.0, 1e-12);  // renormalised
  EXPECT_NEAR(target.shapes[1].probability, 3.0 / 9.0, 1e-12);

  // The whole distribution, uncut and not renormalised.
  ASSERT_EQ(target.distribution.size(), 3u);
  EXPECT_EQ(target.distribution[0].shape, target.shapes[0].shape);
  EXPECT_EQ(target.distribution[2].shape, ShapeOf(Pod(3000, 1, 1000)));
  EXPECT_EQ(target.distribution[2].count, 1);
  EXPECT_NEAR(target.distribution[0].probability, 0.6, 1e-12);
  EXPECT_NEAR(target.distribution[2].probability, 0.1, 1e-12);

  TargetWorkload all = BuildTargetWorkload(pods, 100);
  ASSERT_EQ(all.shapes.size(), 3u);
  EXPECT_NEAR(all.shapes[2].probability, 0.1, 1e-12);
}

TEST(BuildTargetWorkload, TiesGoToTheLargerShapeAndMemoryIsIgnored) {
  std::vector<TracePod> pods = {Pod(1000, 0, 0), Pod(1000, 0, 0), Pod(2000, 0, 0), Pod(2000, 0, 0)};
  pods[1].memory_mib = 999;  // same shape
  TargetWorkload target = BuildTargetWorkload(pods, 95);
  ASSERT_EQ(target.shapes.size(), 2u);
  EXPECT_EQ(target.shapes[0].shape.cpu_milli, 2000);
  EXPECT_EQ(target.shapes[1].shape.cpu_milli, 1000);
}

TEST(SeriesRecorder, BucketsByRoundedArrivedLoadAndFallsBackToNeighbours) {
  SeriesRecorder recorder(10);  // 10 GPUs: 1% = 100 milli
  recorder.Record(0, 0, 100, 10000);
  recorder.Record(50, 50, 100, 9950);    // 0.5% rounds (half to even) to 0
  recorder.Record(150, 100, 200, 9900);  // 1.5% rounds to 2
  RunSeries series = recorder.Finish();
  ASSERT_GE(series.gpu_alloc_pct.size(), 131u);
  EXPECT_DOUBLE_EQ(series.gpu_alloc_pct[0], 0.25);
  EXPECT_DOUBLE_EQ(series.gpu_alloc_pct[2], 1.0);
  EXPECT_DOUBLE_EQ(series.gpu_alloc_pct[1], 0.5);  // no sample at 1: mean over 0..2
  EXPECT_DOUBLE_EQ(series.gpu_alloc_pct[3], 1.0);  // mean over 2..4
  EXPECT_TRUE(std::isnan(series.gpu_alloc_pct[4]));
  EXPECT_DOUBLE_EQ(series.frag_amount_pct[0], 1.0);  // 100 milli of 10000
  EXPECT_NEAR(series.frag_ratio_pct[0], (1.0 + 100.0 * 100 / 9950) / 2, 1e-12);
}

}  // namespace
}  // namespace tessera::sim::replay
