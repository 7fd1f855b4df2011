// The filter with HAMi's node lock (--node-lock=hami): while a node is held for one pod (its bind
// will lock it, or the feed shows the lock), the next pods go to the best node that is not, so
// that their binds do not fail with node lock contention; a locked node is still offered when
// nothing else fits.
#include <gtest/gtest.h>

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
using testing::SharingGpu;
using testing_support::ServiceTest;

std::string OnlyNode(const Json& answer) {
  if (!answer["NodeNames"].is_array() || answer["NodeNames"].size() != 1) return "";
  return answer["NodeNames"][0].get<std::string>();
}

TEST_F(ServiceTest, WithoutTheNodeLockTheNextPodJoinsTheFirstOnItsNode) {
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")}), NodeWith("n2", {SharingGpu("GPU-2")})});
  const std::string first =
      OnlyNode(Filter(PodBuilder("ns/a").Container(1, 4000).Build(), {"n1", "n2"}));
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(OnlyNode(Filter(PodBuilder("ns/b").Container(1, 4000).Build(), {"n1", "n2"})), first)
      << "packing: the premise of the tests below";
}

TEST_F(ServiceTest, WithTheNodeLockTheNextPodAvoidsTheNodeTheFirstWillLock) {
  options.hami_node_lock = true;
  auto& s =
      MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")}), NodeWith("n2", {SharingGpu("GPU-2")})});
  const std::string first =
      OnlyNode(Filter(PodBuilder("ns/a").Container(1, 4000).Build(), {"n1", "n2"}));
  ASSERT_FALSE(first.empty());
  const std::string other = first == "n1" ? "n2" : "n1";
  EXPECT_EQ(OnlyNode(Filter(PodBuilder("ns/b").Container(1, 4000).Build(), {"n1", "n2"})), other);
  const std::string metrics = s.view.metrics().Render({});
  EXPECT_NE(metrics.find("tessera_filter_locked_nodes_avoided_total 1"), std::string::npos)
      << metrics;
  // Both held now: the third goes where it would have gone, and its bind meets the lock there
  // (nothing else to choose).
  EXPECT_EQ(OnlyNode(Filter(PodBuilder("ns/c").Container(1, 4000).Build(), {"n1", "n2"})), first);
}

TEST_F(ServiceTest, ALockedNodeIsStillOfferedWhenNothingElseFits) {
  options.hami_node_lock = true;
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")}), NodeWith("n2", {SharingGpu("GPU-2", 2000)})});
  EXPECT_EQ(OnlyNode(Filter(PodBuilder("ns/a").Container(1, 4000).Build(), {"n1", "n2"})), "n1");
  EXPECT_EQ(OnlyNode(Filter(PodBuilder("ns/b").Container(1, 4000).Build(), {"n1", "n2"})), "n1");
}

TEST_F(ServiceTest, ALockTheFeedShowsIsAvoidedUntilTheFeedShowsItReleased) {
  options.hami_node_lock = true;
  auto& s =
      MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")}), NodeWith("n2", {SharingGpu("GPU-2")})});
  // Which node an unlocked cluster gives the pod (both are alike).
  const std::string best =
      OnlyNode(Filter(PodBuilder("ns/probe").Container(1, 4000).Build(), {"n1", "n2"}));
  ASSERT_FALSE(best.empty());
  ASSERT_EQ(Bind(PodBuilder("ns/probe").Container(1, 4000).Build(), best), "");
  model::Node locked = NodeWith(best, {SharingGpu(best == "n1" ? "GPU-1" : "GPU-2")});
  locked.annotations["hami.io/mutex.lock"] = "2026-01-01T00:00:00Z,ns,probe";
  s.view.UpsertNode(NodeJson(locked));
  const std::string other = best == "n1" ? "n2" : "n1";
  auto a = PodBuilder("ns/a").Container(1, 4000).Build();
  EXPECT_EQ(OnlyNode(Filter(a, {"n1", "n2"})), other);
  ASSERT_EQ(Bind(a, other), "");
  // The device plugin released the probe's lock; a's own bind locked `other`.
  locked.annotations.erase("hami.io/mutex.lock");
  s.view.UpsertNode(NodeJson(locked));
  model::Node a_locked = NodeWith(other, {SharingGpu(other == "n1" ? "GPU-1" : "GPU-2")});
  a_locked.annotations["hami.io/mutex.lock"] = "2026-01-01T00:00:01Z,ns,a";
  s.view.UpsertNode(NodeJson(a_locked));
  EXPECT_EQ(OnlyNode(Filter(PodBuilder("ns/b").Container(1, 4000).Build(), {"n1", "n2"})), best);
}

TEST_F(ServiceTest, AFailedBindGivesUpTheNodeItWouldHaveLocked) {
  options.hami_node_lock = true;
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")}), NodeWith("n2", {SharingGpu("GPU-2")})});
  auto a = PodBuilder("ns/a").Container(1, 4000).Build();
  const std::string first = OnlyNode(Filter(a, {"n1", "n2"}));
  ASSERT_FALSE(first.empty());
  writer.fail_bind = true;
  EXPECT_EQ(Bind(a, first), "injected bind failure");
  EXPECT_EQ(OnlyNode(Filter(PodBuilder("ns/b").Container(1, 4000).Build(), {"n1", "n2"})), first);
}

TEST_F(ServiceTest, APodFilteredAgainHoldsOnlyItsNewNode) {
  options.hami_node_lock = true;
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")}), NodeWith("n2", {SharingGpu("GPU-2")})});
  auto a = PodBuilder("ns/a").Container(1, 4000).Build();
  const std::string first = OnlyNode(Filter(a, {"n1", "n2"}));
  ASSERT_FALSE(first.empty());
  const std::string other = first == "n1" ? "n2" : "n1";
  // kube-scheduler asks again, offering only the other node (its own plugins changed their
  // mind): the pod's first node is not held for it any more.
  ASSERT_EQ(OnlyNode(Filter(a, {other})), other);
  EXPECT_EQ(OnlyNode(Filter(PodBuilder("ns/b").Container(1, 4000).Build(), {"n1", "n2"})), first);
}

}  // namespace
}  // namespace tessera::scheduler
