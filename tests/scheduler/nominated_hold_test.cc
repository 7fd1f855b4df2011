// The room preemption frees is held for the pod kube-scheduler nominated to it, from the moment
// its victims are gone until its own filter takes it over (ClusterView::Nomination).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scheduler/service_fixture.h"
#include "support/builders.h"
#include "support/k8s_json.h"

namespace tessera::scheduler {
namespace {

using codec::Json;
using testing::NodeWith;
using testing::PodBuilder;
using testing::PodJson;
using testing::SharingGpu;
using testing_support::ServiceTest;

class NominatedHoldTest : public ServiceTest {
 protected:
  // A pod bound to `node`, holding `mem` MiB of `uuid`.
  static model::Pod Running(const std::string& key, const std::string& node,
                            const std::string& uuid, int mem) {
    model::Pod pod =
        PodBuilder(key).Priority(1).Container(1, mem, 10).PlacedOn(node, uuid, mem).Build();
    pod.node_name = node;
    pod.phase = "Running";
    return pod;
  }
  // A pending pod of `priority` asking `mem` MiB, nominated to `node` ("": not nominated).
  static model::Pod Nominated(const std::string& key, int32_t priority, int mem,
                              const std::string& node) {
    model::Pod pod = PodBuilder(key).Priority(priority).Container(1, mem, 10).Build();
    pod.nominated_node = node;
    return pod;
  }
  static Json WithNomination(const model::Pod& pod) {
    Json j = PodJson(pod);
    if (!pod.nominated_node.empty()) j["status"]["nominatedNodeName"] = pod.nominated_node;
    return j;
  }
  bool Offered(const model::Pod& pod, const std::string& node) {
    const Json names = Filter(pod, {node})["NodeNames"];
    return names.is_array() && names == Json({node});
  }

  // n1 has one 8000 MiB GPU, all held by ns/victim; ns/p (priority 100, 6000 MiB) is nominated
  // to n1, as kube-scheduler does after the preempt call chose the victim.
  void PreemptedOnce() {
    MakeSynced({NodeWith("n1", {SharingGpu("GPU-1", 8000)})});
    service->view.UpsertPodModel(Running("ns/victim", "n1", "GPU-1", 8000));
    service->view.UpsertPodModel(Nominated("ns/p", 100, 6000, "n1"));
  }
  void VictimGone() { service->view.DeletePod(PodJson(Running("ns/victim", "n1", "GPU-1", 8000))); }
};

TEST_F(NominatedHoldTest, TheRoomTheVictimsFreeIsHeldForTheNominatedPod) {
  PreemptedOnce();
  EXPECT_FALSE(Holds("ns/p"));  // the victim still runs: nothing to hold yet
  VictimGone();
  EXPECT_TRUE(Holds("ns/p"));
  // A pod filtered before kube-scheduler retries the preemptor does not get the room, whatever
  // its priority (a hold is a reservation).
  const model::Pod other = PodBuilder("other/q").Priority(100).Container(1, 4000, 10).Build();
  EXPECT_FALSE(Offered(other, "n1"));
  EXPECT_FALSE(Holds("other/q"));
  // The preemptor's own filter takes the hold over, and its bind goes through.
  EXPECT_TRUE(Offered(Nominated("ns/p", 100, 6000, "n1"), "n1"));
  EXPECT_EQ(Bind(Nominated("ns/p", 100, 6000, "n1"), "n1"), "");
  const std::string metrics = service->view.metrics().Render({});
  EXPECT_NE(metrics.find("tessera_nominated_pod_holds_total 1"), std::string::npos) << metrics;
}

// A hold no filter claims expires with the reservation timeout, and is not made again.
TEST_F(NominatedHoldTest, AnUnclaimedHoldExpiresAndIsNotMadeAgain) {
  PreemptedOnce();
  VictimGone();
  ASSERT_TRUE(Holds("ns/p"));
  clock.now += options.reservation_timeout + std::chrono::seconds(1);
  EXPECT_EQ(service->housekeeping.ExpireReservations(), 1U);
  EXPECT_FALSE(Holds("ns/p"));
  const model::Pod other = PodBuilder("other/q").Container(1, 4000, 10).Build();
  EXPECT_TRUE(Offered(other, "n1"));
}

TEST_F(NominatedHoldTest, AWithdrawnNominationReleasesTheHold) {
  PreemptedOnce();
  VictimGone();
  ASSERT_TRUE(Holds("ns/p"));
  service->view.UpsertPodModel(Nominated("ns/p", 100, 6000, ""));
  EXPECT_FALSE(Holds("ns/p"));
  EXPECT_TRUE(Offered(PodBuilder("other/q").Container(1, 4000, 10).Build(), "n1"));
}

TEST_F(NominatedHoldTest, ADeletedNominatedPodHoldsNothing) {
  PreemptedOnce();
  VictimGone();
  ASSERT_TRUE(Holds("ns/p"));
  service->view.DeletePod(PodJson(Nominated("ns/p", 100, 6000, "n1")));
  EXPECT_FALSE(Holds("ns/p"));
  EXPECT_TRUE(Offered(PodBuilder("other/q").Container(1, 4000, 10).Build(), "n1"));
}

// After a restart the list may name the nominated pod before its victims: nothing is held until
// every pod of the list holds its own, then the hold is made if the victims are gone.
TEST_F(NominatedHoldTest, ARelistHoldsOnlyOnceEveryPodIsKnown) {
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1", 8000)})});
  const model::Pod preemptor = Nominated("ns/p", 100, 6000, "n1");
  const model::Pod victim = Running("ns/victim", "n1", "GPU-1", 8000);
  service->view.ReplacePods({WithNomination(preemptor), PodJson(victim)});
  EXPECT_FALSE(Holds("ns/p"));
  EXPECT_TRUE(Holds("ns/victim"));  // adopted whole, not squeezed by a hold
  service->view.ReplacePods({WithNomination(preemptor)});
  EXPECT_TRUE(Holds("ns/p"));
}

TEST_F(NominatedHoldTest, WhereTwoAreNominatedTheHigherPriorityIsHeld) {
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1", 8000)})});
  service->view.UpsertPodModel(Running("ns/victim", "n1", "GPU-1", 8000));
  service->view.UpsertPodModel(Nominated("ns/a-low", 50, 6000, "n1"));
  service->view.UpsertPodModel(Nominated("ns/b-high", 100, 6000, "n1"));
  VictimGone();
  EXPECT_TRUE(Holds("ns/b-high"));
  EXPECT_FALSE(Holds("ns/a-low"));
}

// The decoded pod, as the informer delivers it: status.nominatedNodeName is what starts a hold.
TEST_F(NominatedHoldTest, TheInformersNominationStartsTheHold) {
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1", 8000)})});
  service->view.UpsertPod(WithNomination(Nominated("ns/p", 100, 6000, "n1")));
  EXPECT_TRUE(Holds("ns/p"));  // the victims were gone before the nomination was written
  EXPECT_FALSE(Offered(PodBuilder("other/q").Container(1, 4000, 10).Build(), "n1"));
}

}  // namespace
}  // namespace tessera::scheduler
