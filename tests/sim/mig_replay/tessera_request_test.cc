#include "sim/mig_replay/tessera_request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/mig_replay/benchmark.h"
#include "sim/mig_replay/policy.h"
#include "test_fleet.h"

namespace tessera::sim::mig_replay {
namespace {

using ::testing::HasSubstr;

// One GPU per model of a fleet.
std::vector<const mig::GpuMigModel*> FleetGpus(const FleetSpec& spec,
                                               std::vector<std::unique_ptr<MigCluster>>& keep,
                                               const Workload& w) {
  std::vector<const mig::GpuMigModel*> gpus;
  for (const auto& model : spec.models) {
    keep.push_back(std::make_unique<MigCluster>(testing::Nodes(model, 1), w));
    gpus.push_back(&keep.back()->nodes()[0]->mig_models[0]);
  }
  return gpus;
}

// Shares the openb trace uses (per mille), and whole GPUs.
std::vector<RequestType> OpenbLikeTypes() {
  std::vector<RequestType> out;
  for (int milli : {50, 100, 140, 143, 250, 286, 300, 429, 500, 571, 600, 750, 857, 900, 1000}) {
    out.push_back(RequestType{milli, 1000, 1, "milli " + std::to_string(milli)});
  }
  return out;
}

TEST(TesseraMigRequest, SelectsTheIntendedProfileOnEveryModelOfEveryFleet) {
  Workload shares = MakeSyntheticWorkload(SyntheticMix::kUniform);
  for (const auto& t : OpenbLikeTypes()) shares.types.push_back(t);
  const Workload memory = MakeMemoryMixWorkload();
  for (const FleetSpec& spec : AllFleets()) {
    // Shares only where the benchmark runs them (one compute-slice count); memory everywhere.
    Workload w = memory;
    if (RunsOn(spec, shares, testing::Catalog())) {
      w.types.insert(w.types.end(), shares.types.begin(), shares.types.end());
    }
    std::vector<std::unique_ptr<MigCluster>> keep;
    const auto gpus = FleetGpus(spec, keep, w);
    for (const RequestType& type : w.types) {
      auto request = ResolveTesseraRequest(gpus, type);
      ASSERT_TRUE(request.ok()) << spec.name << " " << type.label << ": "
                                << request.error().message;
      for (const mig::GpuMigModel* gpu : gpus) {
        EXPECT_EQ(SmallestEligibleProfile(*gpu, request.value()), IntendedProfile(*gpu, type))
            << spec.name << " " << type.label;
      }
    }
  }
}

TEST(TesseraMigRequest, NoSingleRequestFitsSevenAndFourSliceModelsAlike) {
  // 2/7 of a GPU is a 2g on both, but a 7-slice 2g has a smaller core share than the 4-slice
  // 1g: why the mixed fleet has no RTX PRO 6000.
  const Workload w = MakeSyntheticWorkload(SyntheticMix::kUniform);
  std::vector<std::unique_ptr<MigCluster>> keep;
  const auto gpus =
      FleetGpus(FleetSpec{"x", {"H100-SXM5-80GB", "RTX-PRO-6000-Blackwell-96GB"}, 1}, keep, w);
  auto request = ResolveTesseraRequest(gpus, w.types[1]);
  ASSERT_FALSE(request.ok());
  EXPECT_THAT(request.error().message, HasSubstr("2g"));
}

TEST(TesseraMigRequest, TheSchedulerPlacesTheIntendedProfileOnAnEmptyGpu) {
  const Workload w = MakeSyntheticWorkload(SyntheticMix::kUniform);
  for (const FleetSpec& spec : AllFleets()) {
    if (spec.models.size() != 1) continue;
    for (size_t t = 0; t < w.types.size(); ++t) {
      MigCluster cluster(testing::Nodes(spec.models[0], 1), w);
      auto policy = MakeMigPolicy(kPolicyTessera, cluster);
      ASSERT_TRUE(policy.ok()) << policy.error().message;
      ASSERT_TRUE(testing::Place(*policy.value(), cluster, "mig/p0", static_cast<int>(t)));
      const auto& instances = cluster.nodes()[0]->instances[0];
      ASSERT_EQ(instances.size(), 1u);
      EXPECT_EQ(instances[0].profile, cluster.Intended(0, 0, static_cast<int>(t)))
          << spec.name << " " << w.types[t].label;
    }
  }
}

TEST(TesseraMigRequest, WholeGpuPodsTakeOneFullProfilePerGpu) {
  Workload w;
  w.types = {RequestType{1000, 1000, 3, "gpu x3"}};
  w.probabilities = {1.0};
  MigCluster cluster(testing::Nodes("A100-40GB", 4), w);
  auto policy = MakeMigPolicy(kPolicyTessera, cluster);
  ASSERT_TRUE(policy.ok());
  ASSERT_TRUE(testing::Place(*policy.value(), cluster, "mig/p0", 0));
  int full = 0;
  for (int d = 0; d < 4; ++d) {
    for (const auto& i : cluster.nodes()[0]->instances[d]) full += i.profile_name == "7g.40gb";
  }
  EXPECT_EQ(full, 3);
  EXPECT_FALSE(testing::Place(*policy.value(), cluster, "mig/p1", 0));  // one GPU left
}

}  // namespace
}  // namespace tessera::sim::mig_replay
