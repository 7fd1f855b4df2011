#include "sim/mig_replay/metrics.h"

#include <gtest/gtest.h>

#include "test_fleet.h"

namespace tessera::sim::mig_replay {
namespace {

class MigMetricsTest : public ::testing::Test {
 protected:
  MigMetricsTest()
      : cluster_(testing::Nodes("A100-40GB", 2), MakeSyntheticWorkload(SyntheticMix::kUniform)) {}
  void Hold(const std::string& key, int device, const std::string& profile, uint32_t start) {
    const mig::GpuMigModel& gpu = cluster_.nodes()[0]->mig_models[device];
    const int p = gpu.ProfileIndex(profile);
    for (const auto& placement : gpu.profiles()[p].placements) {
      if (placement.start == start) {
        cluster_.Commit(key, 0, {InstancePick{device, p, placement}});
        return;
      }
    }
    FAIL() << profile << "@" << start;
  }
  MigCluster cluster_;
};

TEST_F(MigMetricsTest, EmptyClusterHasNothingAllocatedOrStranded) {
  const Snapshot s = SnapshotProbe(cluster_).Measure();
  EXPECT_EQ(s.memory_slice_ratio, 0);
  EXPECT_EQ(s.gpus_in_use_ratio, 0);
  EXPECT_EQ(s.stranded_ratio, 0);
  EXPECT_EQ(s.fragmentation_ratio, 0);
}

TEST_F(MigMetricsTest, SevenOneGLeaveTheLastSliceStranded) {
  // GPU 0: 1g at 0..6; slice 7 is free but no profile can start there.
  for (uint32_t i = 0; i < 7; ++i) Hold("p" + std::to_string(i), 0, "1g.5gb", i);
  const Snapshot s = SnapshotProbe(cluster_).Measure();
  EXPECT_DOUBLE_EQ(s.memory_slice_ratio, 7.0 / 16);
  EXPECT_DOUBLE_EQ(s.compute_slice_ratio, 7.0 / 14);
  EXPECT_DOUBLE_EQ(s.gpus_in_use_ratio, 0.5);
  EXPECT_DOUBLE_EQ(s.stranded_ratio, 1.0 / 16);
  // Every type fails on GPU 0 (probabilities sum to 1) and none on the empty GPU 1.
  EXPECT_DOUBLE_EQ(s.fragmentation_ratio, 1.0 / 16);
}

TEST_F(MigMetricsTest, FragmentationWeighsTheTypesThatNoLongerFit) {
  // GPU 0: 3g at 0..3. 1g, 2g and 3g still fit on slices 4-7; 4g (only at 0) and 7g do not.
  Hold("a", 0, "3g.20gb", 0);
  const Snapshot s = SnapshotProbe(cluster_).Measure();
  EXPECT_DOUBLE_EQ(s.stranded_ratio, 0);
  EXPECT_DOUBLE_EQ(s.fragmentation_ratio, (0.2 + 0.2) * 4 / 16);
  EXPECT_DOUBLE_EQ(s.compute_slice_ratio, 3.0 / 14);
}

}  // namespace
}  // namespace tessera::sim::mig_replay
