// The scenario file's policy section: MIG placement options.
#include <gtest/gtest.h>

#include "core/mig/catalog.h"
#include "sim/scenario.h"

namespace tessera::sim {
namespace {

const char* kNodes = "nodes: [{ name: a, gpus: [{ model: A100-40GB, mode: mig }] }]\nsteps: []\n";

TEST(ScenarioPolicyTest, ReadsMigOptions) {
  auto catalog = mig::GpuModelCatalog::Builtin();
  ASSERT_TRUE(catalog.ok());
  auto sc = LoadScenarioText(std::string("policy: { node: binpack, migDemandPrior: \"1g=3,7g=1\", "
                                         "migPriorStrength: 20, migAllowLargerProfile: true }\n") +
                                 kNodes,
                             *catalog, "t.yaml");
  ASSERT_TRUE(sc.ok()) << sc.error().message;
  EXPECT_DOUBLE_EQ(sc->policy.mig_prior.by_slices.at(1), 3);
  EXPECT_DOUBLE_EQ(sc->policy.mig_prior.strength, 20);
  EXPECT_TRUE(sc->policy.mig_allow_larger_profiles);
}

TEST(ScenarioPolicyTest, BadPriorNamesTheField) {
  auto catalog = mig::GpuModelCatalog::Builtin();
  ASSERT_TRUE(catalog.ok());
  auto sc = LoadScenarioText(std::string("policy: { migDemandPrior: \"big=1\" }\n") + kNodes,
                             *catalog, "t.yaml");
  ASSERT_FALSE(sc.ok());
  EXPECT_NE(sc.error().message.find("t.yaml: policy.migDemandPrior"), std::string::npos)
      << sc.error().message;
}

}  // namespace
}  // namespace tessera::sim
