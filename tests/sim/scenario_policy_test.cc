// The scenario file's policy section: MIG placement options and operators' node policies.
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

TEST(ScenarioPolicyTest, DefinesNodePoliciesThatTheDefaultMayName) {
  auto catalog = mig::GpuModelCatalog::Builtin();
  ASSERT_TRUE(catalog.ok());
  auto sc = LoadScenarioText(
      std::string("policy: { node: pack, define: [\"pack=hami-node-score:2,fullness:1\"] }\n") +
          kNodes,
      *catalog, "t.yaml");
  ASSERT_TRUE(sc.ok()) << sc.error().message;
  ASSERT_EQ(sc->policy.defined_node_policies.size(), 1U);
  EXPECT_EQ(sc->policy.node.Definition(), "pack=hami-node-score:2,fullness:1");
}

TEST(ScenarioPolicyTest, BadNodePolicyDefinitionsNameTheField) {
  auto catalog = mig::GpuModelCatalog::Builtin();
  ASSERT_TRUE(catalog.ok());
  struct Case {
    std::string policy;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"{ define: \"p=fullness:1\" }",
            "t.yaml: policy.define: expected a list of NAME=PLUGIN:WEIGHT,..."},
           {"{ define: [1] }", "t.yaml: policy.define[0]: expected a string"},
           {"{ define: [\"p=fulness:1\"] }",
            "t.yaml: policy.define: node policy definition \"p=fulness:1\": unknown plugin "
            "\"fulness\" (plugins: fragmentation, hami-node-score, fullness)"},
           {"{ define: [\"p=fullness:1\", \"p=fragmentation:1\"] }",
            "t.yaml: policy.define: node policy \"p\" is defined twice"},
           {"{ node: q, define: [\"p=fullness:1\"] }",
            "t.yaml: policy.node: unknown node scheduler policy \"q\" (expected tessera, binpack, "
            "spread, p)"},
       }) {
    SCOPED_TRACE(c.policy);
    auto sc = LoadScenarioText("policy: " + c.policy + "\n" + kNodes, *catalog, "t.yaml");
    ASSERT_FALSE(sc.ok());
    EXPECT_EQ(sc.error().message, c.message);
  }
}

}  // namespace
}  // namespace tessera::sim
