// The MIG instances tessera did not create (a node's tessera.io/foreign-mig-instances, written
// by its agent) hold their slices in the cluster state, kept with every node update.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/codec/foreign_mig.h"
#include "core/model/annotations.h"
#include "core/state/cluster_state.h"
#include "support/builders.h"

namespace tessera::state {
namespace {

using ::testing::HasSubstr;
using testing::NodeWith;
using testing::RtxPro6000Mig;
using testing::SharingGpu;

const std::string kForeign(model::annotations::kForeignMigInstances);

model::Node WithForeign(model::Node node, const std::vector<codec::ForeignMigInstance>& list) {
  node.annotations[kForeign] = codec::EncodeForeignMigInstances(list);
  return node;
}

TEST(ForeignMigStateTest, ForeignInstancesHoldTheirSlicesUntilTheAnnotationGoes) {
  ClusterState s{config::SchedulerConfig{}};
  const model::Node plain = NodeWith("n", {RtxPro6000Mig("GPU-r")});
  s.UpsertNode(WithForeign(plain, {{"GPU-r", "1g.24gb", {3, 3}, 5}}));
  const NodeState* n = s.node("n");
  ASSERT_TRUE(n->usable()) << n->unusable_reason;
  const DeviceUsage& u = n->usage[0];
  EXPECT_EQ(u.layout.occupied, 0b111000U);
  EXPECT_EQ(u.foreign_slices, 0b111000U);
  EXPECT_TRUE(u.Trusted());  // the GPU stays open for the other slices
  EXPECT_EQ(u.used, 0);      // no pod holds it
  ASSERT_EQ(n->instances[0].size(), 1U);
  EXPECT_TRUE(n->instances[0][0].foreign);
  EXPECT_EQ(n->instances[0][0].pod_key, "");
  EXPECT_EQ(ClusterState::LayoutWithoutForeign(*n, 0).occupied, 0U);

  // An update that leaves the annotation keeps it; one without it frees the slices.
  s.UpsertNode(WithForeign(plain, {{"GPU-r", "1g.24gb", {3, 3}, 5}}));
  EXPECT_EQ(s.node("n")->usage[0].foreign_slices, 0b111000U);
  s.UpsertNode(plain);
  EXPECT_EQ(s.node("n")->usage[0], DeviceUsage{});
  EXPECT_TRUE(s.node("n")->instances[0].empty());
}

TEST(ForeignMigStateTest, PodsComeAndGoAroundForeignInstances) {
  ClusterState s{config::SchedulerConfig{}};
  s.UpsertNode(
      WithForeign(NodeWith("n", {RtxPro6000Mig("GPU-r")}), {{"GPU-r", "1g.24gb", {0, 3}, 1}}));
  PodReservation pod{"ns/p",
                     "u",
                     "n",
                     0,
                     {{{"GPU-r", "NVIDIA", 24192, 25}}},
                     {{0, 0, "GPU-r", "1g.24gb", {9, 3}, std::nullopt}}};
  s.AddPod(pod);
  EXPECT_EQ(s.node("n")->usage[0].layout.occupied, 0b111000000111U);
  s.RemovePod("ns/p");
  EXPECT_EQ(s.node("n")->usage[0].layout.occupied, 0b111U);  // the foreign one stays
  EXPECT_EQ(s.node("n")->usage[0].foreign_slices, 0b111U);
}

// The hardware holds a foreign instance whatever the annotations say: one at a pod's reserved
// placement, of a profile the registration does not list, or at a placement it does not list,
// takes its slices without closing the GPU.
TEST(ForeignMigStateTest, AForeignInstanceTakesItsSlicesEvenWhereRulesDisagree) {
  ClusterState s{config::SchedulerConfig{}};
  s.UpsertNode(WithForeign(NodeWith("n", {RtxPro6000Mig("GPU-r")}),
                           {{"GPU-r", "1g.24gb", {0, 3}, 1}, {"GPU-r", "1g.12gb", {6, 2}, 2}}));
  PodReservation pod{"ns/p",
                     "u",
                     "n",
                     0,
                     {{{"GPU-r", "NVIDIA", 24192, 25}}},
                     {{0, 0, "GPU-r", "1g.24gb", {0, 3}, std::nullopt}}};
  s.AddPod(pod);
  const DeviceUsage& u = s.node("n")->usage[0];
  EXPECT_EQ(u.layout.occupied, 0b11000111U);
  EXPECT_EQ(u.foreign_slices, 0b11000111U);
  EXPECT_TRUE(u.Trusted());
}

TEST(ForeignMigStateTest, OnlyGpusInMigModeOfThisNodeAreAffected) {
  ClusterState s{config::SchedulerConfig{}};
  s.UpsertNode(
      WithForeign(NodeWith("n", {SharingGpu("GPU-s"), RtxPro6000Mig("GPU-r")}),
                  {{"GPU-s", "1g.24gb", {0, 3}, 1}, {"GPU-elsewhere", "1g.24gb", {0, 3}, 1}}));
  const NodeState* n = s.node("n");
  ASSERT_TRUE(n->usable());
  EXPECT_EQ(n->usage[0], DeviceUsage{});
  EXPECT_EQ(n->usage[1], DeviceUsage{});
  EXPECT_EQ(n->foreign_mig.size(), 2U);  // as the agent wrote it
}

// Which slices are taken is unknown: the node is unusable with the decode error, naming node
// and field; other nodes are not affected, and a correct value makes it usable again.
TEST(ForeignMigStateTest, AMalformedAnnotationMakesOnlyItsNodeUnusable) {
  ClusterState s{config::SchedulerConfig{}};
  model::Node bad = NodeWith("bad", {RtxPro6000Mig("GPU-b")});
  bad.annotations[kForeign] = R"([{"gpu":"GPU-b","profile":"1g.24gb","start":40,"size":3}])";
  s.UpsertNode(bad);
  s.UpsertNode(
      WithForeign(NodeWith("good", {RtxPro6000Mig("GPU-g")}), {{"GPU-g", "1g.24gb", {0, 3}, 1}}));
  EXPECT_FALSE(s.node("bad")->usable());
  EXPECT_THAT(s.node("bad")->unusable_reason,
              HasSubstr("node unusable: node bad: annotation "
                        "tessera.io/foreign-mig-instances[0].start"));
  EXPECT_TRUE(s.node("good")->usable());
  bad.annotations[kForeign] = "";
  s.UpsertNode(bad);
  EXPECT_TRUE(s.node("bad")->usable()) << s.node("bad")->unusable_reason;
}

// Nodes that hold the same slices, one by a pod and one by a foreign instance, are not in one
// state: their failure reasons differ.
TEST(ForeignMigStateTest, ForeignSlicesSetANodesStateApart) {
  ClusterState s{config::SchedulerConfig{}};
  s.UpsertNode(NodeWith("a", {RtxPro6000Mig("GPU-a")}));
  s.UpsertNode(
      WithForeign(NodeWith("b", {RtxPro6000Mig("GPU-b")}), {{"GPU-b", "1g.24gb", {0, 3}, 1}}));
  s.AddPod(PodReservation{"ns/p",
                          "u",
                          "a",
                          0,
                          {{{"GPU-a", "NVIDIA", 24192, 25}}},
                          {{0, 0, "GPU-a", "1g.24gb", {0, 3}, std::nullopt}}});
  EXPECT_EQ(s.node("a")->usage[0].layout, s.node("b")->usage[0].layout);
  EXPECT_FALSE(s.node("a")->SameAs(*s.node("b")));
  EXPECT_NE(s.node("a")->state_class, s.node("b")->state_class);
}

}  // namespace
}  // namespace tessera::state
