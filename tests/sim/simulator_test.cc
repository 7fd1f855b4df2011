#include "sim/simulator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/builders.h"

namespace tessera::sim {
namespace {

using ::testing::HasSubstr;
using testing::NodeWith;
using testing::PodBuilder;
using testing::SharingGpu;

ScenarioStep Create(model::Pod pod) {
  ScenarioStep s;
  s.kind = ScenarioStep::Kind::kCreate;
  s.pod = std::move(pod);
  return s;
}

ScenarioStep Delete(const std::string& key) {
  ScenarioStep s;
  s.kind = ScenarioStep::Kind::kDelete;
  s.pod_key = key;
  return s;
}

model::Pod Placed(const std::string& key, const std::string& node, const std::string& uuid,
                  int mem) {
  return PodBuilder(key).Container(1, mem).PlacedOn(node, uuid, mem).Build();
}

Scenario OneNode(std::vector<ScenarioStep> steps) {
  Scenario sc;
  sc.nodes.push_back(NodeWith("n1", {SharingGpu("GPU-0", 16000, 0, 0)}));
  sc.steps = std::move(steps);
  return sc;
}

int UsedMem(const Simulator& sim) { return sim.state().node("n1")->usage[0].used_mem; }

TEST(SimulatorTest, ARunningPodIsAdoptedAndItsDeleteGivesItsDevicesBack) {
  model::Pod running = Placed("ns/r", "n1", "GPU-0", 6000);
  running.node_name = "n1";
  Simulator sim(OneNode({Create(running), Delete("ns/r")}));
  auto created = sim.RunStep(0);
  ASSERT_EQ(created.size(), 1U);
  EXPECT_TRUE(created[0].adopted);
  EXPECT_TRUE(created[0].decision.scheduled());
  ASSERT_EQ(created[0].decision.containers.size(), 1U);
  EXPECT_EQ(created[0].decision.containers[0][0].uuid, "GPU-0");
  EXPECT_EQ(UsedMem(sim), 6000);
  auto deleted = sim.RunStep(1);
  ASSERT_FALSE(deleted.empty());
  EXPECT_TRUE(deleted[0].found);
  ASSERT_EQ(deleted[0].released.size(), 1U);
  EXPECT_EQ(deleted[0].released[0].mem, 6000);
  EXPECT_EQ(UsedMem(sim), 0);
}

// The informer's rules: an unbound pod that carries a placement holds it until kube-scheduler
// filters it again, and the new decision replaces it (the devices are not counted twice).
TEST(SimulatorTest, AnUnboundPodWithAPlacementIsScheduledAgainInItsPlace) {
  Simulator sim(OneNode({Create(Placed("ns/u", "n1", "GPU-0", 9000))}));
  auto created = sim.RunStep(0);
  ASSERT_EQ(created.size(), 1U);
  EXPECT_FALSE(created[0].adopted);
  EXPECT_TRUE(created[0].decision.scheduled()) << created[0].decision.message;
  EXPECT_EQ(UsedMem(sim), 9000);
  EXPECT_EQ(sim.state().node("n1")->usage[0].used, 1);
}

TEST(SimulatorTest, AFinishedPodIsNotScheduled) {
  model::Pod done = PodBuilder("ns/done").Container(1, 1000).Build();
  done.phase = "Succeeded";
  Simulator sim(OneNode({Create(done)}));
  auto created = sim.RunStep(0);
  ASSERT_EQ(created.size(), 1U);
  EXPECT_FALSE(created[0].decision.scheduled());
  EXPECT_THAT(created[0].error, HasSubstr("pod ns/done has finished (phase Succeeded)"));
  EXPECT_EQ(UsedMem(sim), 0);
  EXPECT_TRUE(sim.pending().empty());
}

}  // namespace
}  // namespace tessera::sim
