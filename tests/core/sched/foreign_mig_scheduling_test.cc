// MIG placement around instances tessera did not create (a node's
// tessera.io/foreign-mig-instances): never on their slices, a reason that names them when they
// are why a pod does not fit, and their slices free again once the annotation drops them.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/codec/foreign_mig.h"
#include "core/codec/mig_allocations.h"
#include "core/model/annotations.h"
#include "core/sched/explain.h"
#include "core/sched/scheduler.h"
#include "support/builders.h"
#include "support/decisions.h"

namespace tessera::sched {
namespace {

using ::testing::HasSubstr;
using testing::NodeWith;
using testing::PodBuilder;
using testing::RtxPro6000Mig;

const std::string kForeign(model::annotations::kForeignMigInstances);

class ForeignMigSchedulingTest : public ::testing::Test {
 protected:
  ForeignMigSchedulingTest()
      : state_(config::SchedulerConfig{}), scheduler_(state_, PolicyDefaults{}) {}

  // node-a: one RTX PRO 6000 in MIG mode (1g.24gb at 0, 3, 6, 9), with these foreign instances.
  void NodeWithForeign(const std::vector<uint32_t>& starts) {
    model::Node n = NodeWith("node-a", {RtxPro6000Mig("GPU-r")});
    std::vector<codec::ForeignMigInstance> foreign;
    foreign.reserve(starts.size());
    for (uint32_t s : starts) foreign.push_back({"GPU-r", "1g.24gb", {s, 3}, s + 1});
    if (!foreign.empty()) n.annotations[kForeign] = codec::EncodeForeignMigInstances(foreign);
    state_.UpsertNode(n);
  }
  Decision Schedule(const model::Pod& pod) { return scheduler_.Schedule(pod, nullptr, 1); }
  static std::vector<uint32_t> Starts(const Decision& d) {
    std::vector<uint32_t> starts;
    for (const auto& a : d.containers[0]) starts.push_back(a.placement.start);
    std::sort(starts.begin(), starts.end());
    return starts;
  }

  state::ClusterState state_;
  Scheduler scheduler_;
};

TEST_F(ForeignMigSchedulingTest, AMigPodIsPlacedAwayFromForeignInstances) {
  NodeWithForeign({0, 6});
  Decision d = Schedule(PodBuilder("default/p").MigMode().Container(2, 8000).Build());
  ASSERT_TRUE(d.scheduled()) << d.message;
  EXPECT_EQ(Starts(d), (std::vector<uint32_t>{3, 9}));
  // A whole-GPU profile cannot go either: its slices are partly taken.
  state_.AddPod(d.reservation);
  Decision big = Schedule(PodBuilder("default/big").MigMode().Container(1, 90000).Build());
  EXPECT_FALSE(big.scheduled());
}

TEST_F(ForeignMigSchedulingTest, WhenForeignInstancesFillTheGpuTheReasonNamesThem) {
  NodeWithForeign({0, 3, 6, 9});
  const model::Pod pod = PodBuilder("default/p").MigMode().Container(1, 8000).Build();
  Decision d = Schedule(pod);
  ASSERT_FALSE(d.scheduled());
  EXPECT_EQ(FormatNodeStatus(d.failed_nodes.at("node-a")),
            "1/1 CardMigSlicesHeldByForeignInstances");
  EXPECT_EQ(d.message, "0/1 nodes are available: 1 1/1 CardMigSlicesHeldByForeignInstances.");
  // No eviction frees them: kube-scheduler's preemption is not asked to try.
  EXPECT_EQ(testing::UnresolvableNodes(d).count("node-a"), 1U);

  Explanation e = ExplainPod(state_, pod, PolicyDefaults{}, ExplainLimits{});
  ASSERT_EQ(e.nodes.size(), 1U);
  ASSERT_EQ(e.nodes[0].gpus.size(), 1U);
  const GpuExplanation& g = e.nodes[0].gpus[0];
  EXPECT_EQ(g.reason, "CardMigSlicesHeldByForeignInstances");
  ASSERT_EQ(g.instances.size(), 4U);
  EXPECT_TRUE(g.instances[0].foreign);
  EXPECT_FALSE(e.nodes[0].fits_when_empty);
  EXPECT_THAT(FormatExplanation(e), HasSubstr("a=1g.24gb@0+3 (not tessera's)"));
}

// Pods and foreign instances together: tessera's reason only when the pod would fit without the
// foreign instances, HAMi's when the pods alone already leave no room.
TEST_F(ForeignMigSchedulingTest, TheReasonBlamesForeignInstancesOnlyWhenTheyAreWhy) {
  NodeWithForeign({0});
  auto hold = [&](const std::string& key, uint32_t start) {
    state_.AddPod(state::PodReservation{key,
                                        "uid-" + key,
                                        "node-a",
                                        0,
                                        {{{"GPU-r", "NVIDIA", 24192, 25}}},
                                        {{0, 0, "GPU-r", "1g.24gb", {start, 3}, std::nullopt}}});
  };
  const model::Pod two_slots = PodBuilder("default/p").MigMode().Container(1, 40000).Build();
  hold("default/at-9", 9);  // 2g.48gb could go at 0 but for the foreign instance
  Decision d = Schedule(two_slots);
  ASSERT_FALSE(d.scheduled());
  EXPECT_EQ(FormatNodeStatus(d.failed_nodes.at("node-a")),
            "1/1 CardMigSlicesHeldByForeignInstances");
  EXPECT_EQ(testing::UnresolvableNodes(d).count("node-a"), 0U);  // evicting the pod at 9 would help
  hold("default/at-3", 3);  // now the pods alone block both places
  d = Schedule(two_slots);
  ASSERT_FALSE(d.scheduled());
  EXPECT_EQ(FormatNodeStatus(d.failed_nodes.at("node-a")), "1/1 CardMigTopologyInfeasible");
}

TEST_F(ForeignMigSchedulingTest, TheAnnotationRemovedFreesTheSlices) {
  NodeWithForeign({0, 3, 6, 9});
  const model::Pod pod = PodBuilder("default/p").MigMode().Container(1, 8000).Build();
  ASSERT_FALSE(Schedule(pod).scheduled());
  NodeWithForeign({});
  Decision d = Schedule(pod);
  ASSERT_TRUE(d.scheduled()) << d.message;
}

TEST_F(ForeignMigSchedulingTest, AMalformedAnnotationRefusesTheNodeWithTheDecodeError) {
  model::Node n = NodeWith("node-a", {RtxPro6000Mig("GPU-r")});
  n.annotations[kForeign] = "[{\"gpu\":\"GPU-r\"}]";
  state_.UpsertNode(n);
  const model::Pod pod = PodBuilder("default/p").MigMode().Container(1, 8000).Build();
  Decision d = Schedule(pod);
  ASSERT_FALSE(d.scheduled());
  EXPECT_EQ(FormatNodeStatus(d.failed_nodes.at("node-a")),
            "node unusable: node node-a: annotation tessera.io/foreign-mig-instances[0].profile: "
            "missing or empty");
  // Other nodes are not affected.
  state_.UpsertNode(NodeWith("node-b", {RtxPro6000Mig("GPU-b")}));
  d = Schedule(pod);
  ASSERT_TRUE(d.scheduled()) << d.message;
  EXPECT_EQ(d.node, "node-b");
}

}  // namespace
}  // namespace tessera::sched
