// FinalStateScenario, what `tessera serve --cluster` serves: every scenario file and example, run
// to its end, gives a scenario without history whose simulation ends in the same state.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "core/mig/catalog.h"
#include "sim/report.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace tessera::sim {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> ScenarioPaths() {
  std::vector<std::string> out;
  for (const char* dir : {"tests/scenarios", "examples"}) {
    for (const auto& e : fs::directory_iterator(fs::path(TESSERA_SOURCE_DIR) / dir)) {
      if (e.path().extension() == ".yaml") out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

Scenario Load(const std::string& path) {
  auto catalog = mig::GpuModelCatalog::Builtin();
  EXPECT_TRUE(catalog.ok());
  auto scenario = LoadScenarioFile(path, catalog.value());
  EXPECT_TRUE(scenario.ok()) << scenario.error().message;
  return scenario.ok() ? std::move(scenario.value()) : Scenario{};
}

std::vector<std::string> Keys(const std::vector<model::Pod>& pods) {
  std::vector<std::string> keys;
  for (const auto& p : pods) keys.push_back(p.Key());
  return keys;
}

class FinalStateScenarioTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FinalStateScenarioTest, SimulatingItEndsInTheSameStateWithTheSamePendingPods) {
  Simulator original(Load(GetParam()));
  original.RunAll();
  const Scenario final_state = FinalStateScenario(Load(GetParam()));
  Simulator replayed(final_state);
  replayed.RunAll();
  EXPECT_EQ(FinalJson(replayed.state()), FinalJson(original.state()));
  EXPECT_EQ(Keys(replayed.pending()), Keys(original.pending()));
  // Only creates: running pods first, bound to their node, then the pending ones.
  const size_t running = original.running().size();
  ASSERT_EQ(final_state.steps.size(), running + original.pending().size());
  for (size_t i = 0; i < final_state.steps.size(); ++i) {
    const ScenarioStep& step = final_state.steps[i];
    ASSERT_EQ(step.kind, ScenarioStep::Kind::kCreate);
    if (i < running) {
      EXPECT_FALSE(step.pod.node_name.empty()) << step.pod.Key();
    } else {
      EXPECT_TRUE(step.pod.node_name.empty()) << step.pod.Key();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Files, FinalStateScenarioTest, ::testing::ValuesIn(ScenarioPaths()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = fs::path(param_info.param).stem().string();
                           for (char& c : name) {
                             if (std::isalnum(static_cast<unsigned char>(c)) == 0) c = '_';
                           }
                           return name;
                         });

TEST(FinalStateScenarioTest, NodesAreAsTheLastNodeStepLeftThem) {
  const Scenario final_state = FinalStateScenario(
      Load(std::string(TESSERA_SOURCE_DIR) + "/tests/scenarios/node_liveness.yaml"));
  ASSERT_EQ(final_state.nodes.size(), 2U);
  EXPECT_EQ(final_state.nodes[0].name, "n1");
  EXPECT_EQ(final_state.nodes[0].allocatable.at("nvidia.com/gpu"), "0");  // step 3's
  EXPECT_EQ(final_state.nodes[1].name, "n2");
}

TEST(FinalStateScenarioTest, ADeletedPodIsGoneAndARetriedOneRunsInItsPlace) {
  const Scenario final_state =
      FinalStateScenario(Load(std::string(TESSERA_SOURCE_DIR) + "/examples/demo-mig.yaml"));
  std::vector<std::string> keys;
  for (const auto& step : final_state.steps) keys.push_back(step.pod.Key());
  EXPECT_THAT(keys, ::testing::ElementsAre("default/p2", "default/p3"));
  EXPECT_EQ(final_state.steps[1].pod.node_name, "node-a");
}

// A pod that came with a placement but no node, and fits nowhere when scheduled again, holds its
// placement while it waits: it is one pending create that still carries it.
TEST(FinalStateScenarioTest, APendingPodKeepsThePlacementItCameWith) {
  auto catalog = mig::GpuModelCatalog::Builtin();
  ASSERT_TRUE(catalog.ok());
  auto scenario = LoadScenarioText(R"(
nodes:
  - name: n1
    gpus: [{ model: "Tesla T4", memoryMiB: 16000, uuid: GPU-0 }]
steps:
  - create:
      metadata:
        name: u
        annotations: { hami.io/vgpu-node: n1, hami.io/vgpu-devices-allocated: "GPU-0,NVIDIA,6000,0:;" }
      spec: { containers: [{ name: c0, resources: { limits: { nvidia.com/gpu: 1, nvidia.com/gpumem: 20000 } } }] }
)",
                                   catalog.value(), "unbound.yaml");
  ASSERT_TRUE(scenario.ok()) << scenario.error().message;
  Simulator original(scenario.value());
  original.RunAll();
  ASSERT_EQ(original.pending().size(), 1U);
  ASSERT_EQ(original.state().node("n1")->usage[0].used_mem, 6000);

  const Scenario final_state = FinalStateScenario(scenario.value());
  ASSERT_EQ(final_state.steps.size(), 1U);
  EXPECT_TRUE(final_state.steps[0].pod.node_name.empty());
  Simulator replayed(final_state);
  replayed.RunAll();
  EXPECT_EQ(FinalJson(replayed.state()), FinalJson(original.state()));
  EXPECT_EQ(Keys(replayed.pending()), Keys(original.pending()));
}

}  // namespace
}  // namespace tessera::sim
