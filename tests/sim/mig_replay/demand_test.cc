#include "sim/mig_replay/demand.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_fleet.h"

namespace tessera::sim::mig_replay {
namespace {

using testing::Catalog;

std::string IntendedName(const std::string& model, const RequestType& type) {
  const Workload w{"w", {type}, {1.0}};
  MigCluster cluster(testing::Nodes(model, 1), w);
  const int p = cluster.Intended(0, 0, 0);
  return p < 0 ? "none" : cluster.nodes()[0]->mig_models[0].profiles()[p].name;
}

TEST(MigDemand, ComputeSlicesNeededRoundsUpTheShare) {
  EXPECT_EQ(ComputeSlicesNeeded(RequestType{3, 7, 1, ""}, 7), 3u);
  EXPECT_EQ(ComputeSlicesNeeded(RequestType{3, 7, 1, ""}, 4), 2u);       // ceil(12/7)
  EXPECT_EQ(ComputeSlicesNeeded(RequestType{4, 7, 1, ""}, 4), 3u);       // ceil(16/7)
  EXPECT_EQ(ComputeSlicesNeeded(RequestType{300, 1000, 1, ""}, 7), 3u);  // ceil(2.1)
  EXPECT_EQ(ComputeSlicesNeeded(RequestType{500, 1000, 1, ""}, 4), 2u);
  EXPECT_EQ(ComputeSlicesNeeded(RequestType{1, 1000, 1, ""}, 7), 1u);
}

TEST(MigDemand, SyntheticSizesMapToTheIntendedProfileOnEveryModel) {
  const Workload w = MakeSyntheticWorkload(SyntheticMix::kUniform);
  ASSERT_EQ(w.types.size(), 5u);
  const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
      {"A100-40GB", {"1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}},
      {"A100-80GB", {"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
      {"H100-SXM5-80GB", {"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
      {"H200-141GB", {"1g.18gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"}},
      {"B200-180GB", {"1g.23gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"}},
      // 4 compute slices: c = ceil(g * 4 / 7) = 1, 2, 2, 3, 4.
      {"RTX-PRO-6000-Blackwell-96GB", {"1g.24gb", "2g.48gb", "2g.48gb", "4g.96gb", "4g.96gb"}},
  };
  for (const auto& [model, names] : expected) {
    for (size_t t = 0; t < w.types.size(); ++t) {
      EXPECT_EQ(IntendedName(model, w.types[t]), names[t]) << model << " " << w.types[t].label;
    }
  }
}

TEST(MigDemand, OpenbPodsMapBySharePerModel) {
  std::vector<replay::TracePod> pods(5);
  pods[0].num_gpu = 0;  // CPU-only: dropped
  pods[1].num_gpu = 1;
  pods[1].gpu_milli = 300;
  pods[2].num_gpu = 1;
  pods[2].gpu_milli = 300;
  pods[3].num_gpu = 1;
  pods[3].gpu_milli = 1000;
  pods[4].num_gpu = 4;
  pods[4].gpu_milli = 1000;
  auto w = MakeOpenbWorkload(pods);
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_EQ(w->types.size(), 3u);
  EXPECT_EQ(w->types[0], (RequestType{300, 1000, 1, "milli 300"}));
  EXPECT_EQ(w->types[1], (RequestType{1000, 1000, 1, "gpu x1"}));
  EXPECT_EQ(w->types[2], (RequestType{1000, 1000, 4, "gpu x4"}));
  EXPECT_DOUBLE_EQ(w->probabilities[0], 0.5);
  EXPECT_DOUBLE_EQ(w->probabilities[2], 0.25);
  // 300 milli: 3 of 7 slices (3g) on an A100, 2 of 4 (2g) on the RTX PRO 6000.
  EXPECT_EQ(IntendedName("A100-40GB", w->types[0]), "3g.20gb");
  EXPECT_EQ(IntendedName("RTX-PRO-6000-Blackwell-96GB", w->types[0]), "2g.48gb");
  EXPECT_EQ(IntendedName("H100-SXM5-80GB", w->types[2]), "7g.80gb");
}

TEST(MigDemand, OpenbWithoutGpuPodsIsAnError) {
  std::vector<replay::TracePod> pods(2);
  EXPECT_FALSE(MakeOpenbWorkload(pods).ok());
}

TEST(MigDemand, SamplingIsSeeded) {
  const Workload w = MakeSyntheticWorkload(SyntheticMix::kSmallHeavy);
  std::mt19937_64 a(42), b(42);
  const auto x = SamplePoissonArrivals(w, 200, 3.0, a);
  const auto y = SamplePoissonArrivals(w, 200, 3.0, b);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(x[i].type, y[i].type);
    EXPECT_EQ(x[i].time, y[i].time);
    EXPECT_EQ(x[i].lifetime, y[i].lifetime);
    if (i > 0) {
      EXPECT_GT(x[i].time, x[i - 1].time);
    }
  }
}

// A memory request maps to the smallest profile with that memory on each model, so one request
// spans 7-slice and 4-slice GPUs (the mixed-rtx fleet).
TEST(MigDemand, MemoryRequestsMapToTheSmallestProfileWithThatMemory) {
  const Workload w = MakeMemoryMixWorkload();
  ASSERT_TRUE(NamesMemory(w));
  EXPECT_FALSE(NamesMemory(MakeSyntheticWorkload(SyntheticMix::kUniform)));
  std::vector<std::string> a100, h100, rtx;
  for (const RequestType& t : w.types) {
    a100.push_back(IntendedName("A100-40GB", t));
    h100.push_back(IntendedName("H100-SXM5-80GB", t));
    rtx.push_back(IntendedName("RTX-PRO-6000-Blackwell-96GB", t));
  }
  EXPECT_THAT(
      a100, ::testing::ElementsAre("1g.5gb", "1g.5gb", "3g.20gb", "3g.20gb", "7g.40gb", "7g.40gb"));
  EXPECT_THAT(h100, ::testing::ElementsAre("1g.10gb", "1g.10gb", "2g.20gb", "2g.20gb", "3g.40gb",
                                           "3g.40gb"));
  EXPECT_THAT(rtx, ::testing::ElementsAre("1g.24gb", "1g.24gb", "1g.24gb", "1g.24gb", "2g.48gb",
                                          "2g.48gb"));
  double sum = 0;
  for (double p : w.probabilities) sum += p;
  EXPECT_NEAR(sum, 1.0, 1e-12);
  // More than 40 GB fits no A100-40GB profile.
  EXPECT_EQ(IntendedName("A100-40GB", RequestType{1, 1, 1, "big", 41000}), "none");
}

}  // namespace
}  // namespace tessera::sim::mig_replay
