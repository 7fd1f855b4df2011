// Housekeeping over the cluster view: reservations that no bind confirmed expire, and nodes
// without a live device plugin take no new pods (the requeue pass: housekeeping_requeue_test.cc).
#include "scheduler/housekeeping.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "scheduler/service_fixture.h"
#include "support/builders.h"
#include "support/k8s_json.h"

namespace tessera::scheduler {
namespace {

using codec::Json;
using testing::NodeJson;
using testing::NodeWith;
using testing::PodBuilder;
using testing::PodJson;
using testing::SharingGpu;
using testing_support::ServiceTest;

// ---- reservation expiry -------------------------------------------------------------------------

TEST_F(ServiceTest, UnboundReservationExpiresAfterTheTimeout) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  auto pod = PodBuilder("ns/p").Container(1, 32768).Build();
  s.view.UpsertPod(PodJson(pod));  // as the informer shows it, so its filter answer is kept
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  clock.now += std::chrono::seconds(29);
  EXPECT_EQ(s.housekeeping.ExpireReservations(), 0u);
  EXPECT_TRUE(Holds("ns/p"));
  clock.now += std::chrono::seconds(2);
  EXPECT_EQ(s.housekeeping.ExpireReservations(), 1u);
  EXPECT_FALSE(Holds("ns/p"));
  ASSERT_FALSE(writer.events.empty());
  EXPECT_NE(writer.events.back().find("ReservationExpired"), std::string::npos);
  // A late bind is refused rather than binding a GPU pod without devices.
  EXPECT_NE(Bind(pod, "n1").find("holds no reservation"), std::string::npos);
  EXPECT_TRUE(writer.bound.empty());
}

TEST_F(ServiceTest, BoundPodsNeverExpire) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  auto pod = PodBuilder("ns/p").Container(1, 32768).Build();
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  ASSERT_EQ(Bind(pod, "n1"), "");
  clock.now += std::chrono::hours(1);
  EXPECT_EQ(s.housekeeping.ExpireReservations(), 0u);
  EXPECT_TRUE(Holds("ns/p"));
}

// ---- node liveness and the node label selector --------------------------------------------------

TEST_F(ServiceTest, NodeWithoutAllocatableGpusGetsNoPodsAfterTheGracePeriod) {
  options.node_liveness_grace = std::chrono::seconds(60);
  model::Node node = NodeWith("n1", {SharingGpu("GPU-1")});
  node.allocatable["nvidia.com/gpu"] = "10";
  auto& s = MakeSynced({node});
  auto pod = PodBuilder("ns/p").Container(1, 1000).Build();
  EXPECT_EQ(s.housekeeping.CheckNodeLiveness(), 0u);
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  // The device plugin goes away: the kubelet drops the allocatable count to 0.
  node.allocatable["nvidia.com/gpu"] = "0";
  s.view.UpsertNode(NodeJson(node));
  clock.now += std::chrono::seconds(59);
  EXPECT_EQ(s.housekeeping.CheckNodeLiveness(), 0u);
  auto second = PodBuilder("ns/q").Container(1, 1000).Build();
  EXPECT_EQ(Filter(second, {"n1"})["NodeNames"][0], "n1") << "within the grace period";
  clock.now += std::chrono::seconds(2);
  EXPECT_EQ(s.housekeeping.CheckNodeLiveness(), 1u);
  auto third = PodBuilder("ns/r").Container(1, 1000).Build();
  Json r = Filter(third, {"n1"});
  // Evicting pods does not bring the device plugin back: no preemption there.
  EXPECT_EQ(r["FailedAndUnresolvableNodes"]["n1"],
            "node unregistered: no live device plugin (allocatable nvidia.com/gpu is 0)")
      << r.dump();
  EXPECT_TRUE(Holds("ns/p")) << "pods already there keep their devices";
  // The plugin is back: the node takes pods again at once.
  node.allocatable["nvidia.com/gpu"] = "10";
  s.view.UpsertNode(NodeJson(node));
  EXPECT_EQ(Filter(third, {"n1"})["NodeNames"][0], "n1");
  EXPECT_EQ(s.housekeeping.CheckNodeLiveness(), 0u);
}

TEST_F(ServiceTest, LivenessCheckCanBeTurnedOff) {
  options.node_liveness_grace = std::chrono::seconds(0);
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});  // no allocatable at all
  clock.now += std::chrono::hours(1);
  EXPECT_EQ(s.housekeeping.CheckNodeLiveness(), 0u);
  EXPECT_EQ(Filter(PodBuilder("ns/p").Container(1, 1000).Build(), {"n1"})["NodeNames"][0], "n1");
}

}  // namespace
}  // namespace tessera::scheduler
