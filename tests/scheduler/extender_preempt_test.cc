// The preempt verb over the cluster view: kube-scheduler's candidates in, the victims the GPU
// search chose (by uid) out; nodes where nothing works dropped.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scheduler/extender_verbs.h"
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

class PreemptTest : public ServiceTest {
 protected:
  // A pod running on `node`, holding `mem` MiB of `uuid`.
  void Running(const std::string& key, int32_t priority, const std::string& node,
               const std::string& uuid, int mem) {
    model::Pod pod =
        PodBuilder(key).Priority(priority).Container(1, mem, 10).PlacedOn(node, uuid, mem).Build();
    pod.node_name = node;
    pod.phase = "Running";
    service->view.UpsertPodModel(pod);
  }
  // kube-scheduler's request as a nodeCacheCapable extender gets it.
  static std::string Body(const model::Pod& pod, const Json& meta_victims) {
    return Json{{"Pod", PodJson(pod)}, {"NodeNameToMetaVictims", meta_victims}}.dump();
  }
  static Json Victims(const std::vector<std::string>& uids, int violations = 0) {
    Json pods = Json::array();
    for (const auto& uid : uids) pods.push_back({{"UID", uid}});
    return Json{{"Pods", pods}, {"NumPDBViolations", violations}};
  }
  Json Preempt(const std::string& body) {
    ExtenderVerbs::PreemptAnswer answer = service->verbs.Preempt(body);
    EXPECT_EQ(answer.error, "");
    return Json::parse(answer.body)["NodeNameToMetaVictims"];
  }
};

TEST_F(PreemptTest, VictimsAreChosenByGpuNeedAndNodesWhereNothingWorksAreDropped) {
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1", 8000)}),
              NodeWith("n2", {SharingGpu("GPU-2", 2000)}),
              NodeWith("n3", {SharingGpu("GPU-3", 8000)})});
  Running("ns/big", 1, "n1", "GPU-1", 6000);
  Running("ns/small", 1, "n1", "GPU-1", 2000);
  Running("ns/tiny", 1, "n2", "GPU-2", 1000);
  const model::Pod pod = PodBuilder("ns/p").Priority(100).Container(1, 4000, 10).Build();
  // kube-scheduler's count-based choice on n1 is the small pod, which frees too little; it also
  // evicts a pod holding no GPU (for CPU), which the answer keeps. On n3 the pod fits by GPUs:
  // kube-scheduler's victims stand.
  Json out = Preempt(Body(pod, {{"n1", Victims({"uid-small", "uid-cpu-hog"})},
                                {"n2", Victims({"uid-tiny"})},
                                {"n3", Victims({"uid-other"}, 1)}}));
  ASSERT_TRUE(out.contains("n1"));
  EXPECT_EQ(out["n1"], Victims({"uid-big", "uid-cpu-hog"}));
  EXPECT_FALSE(out.contains("n2"));  // 2000 MiB in all: no eviction helps
  EXPECT_EQ(out["n3"], Victims({"uid-other"}, 1));
  const std::string metrics = service->view.metrics().Render({});
  EXPECT_NE(metrics.find(R"(tessera_preempt_requests_total{result="ok"} 1)"), std::string::npos);
  EXPECT_NE(metrics.find(R"(tessera_preempt_nodes_total{verdict="chosen"} 1)"), std::string::npos);
  EXPECT_NE(metrics.find(R"(tessera_preempt_nodes_total{verdict="dropped"} 1)"), std::string::npos);
}

// One request's search is bounded over all its nodes, not only per node: past the budget, nodes
// are left out (never answered with kube-scheduler's GPU-blind victims).
TEST_F(PreemptTest, NodesPastTheRequestsFitBudgetAreLeftOut) {
  options.preempt_fit_budget = 1;  // n1's search spends it (and its reprieve pass more)
  MakeSynced(
      {NodeWith("n1", {SharingGpu("GPU-1", 8000)}), NodeWith("n2", {SharingGpu("GPU-2", 8000)})});
  Running("ns/a", 1, "n1", "GPU-1", 8000);
  Running("ns/b", 1, "n2", "GPU-2", 8000);
  const model::Pod pod = PodBuilder("ns/p").Priority(100).Container(1, 4000, 10).Build();
  Json out = Preempt(Body(pod, {{"n1", Victims({"uid-a"})}, {"n2", Victims({"uid-b"})}}));
  EXPECT_EQ(out["n1"], Victims({"uid-a"}));
  EXPECT_FALSE(out.contains("n2")) << out.dump();
  const std::string metrics = service->view.metrics().Render({});
  EXPECT_NE(metrics.find(R"(tessera_preempt_nodes_total{verdict="over_budget"} 1)"),
            std::string::npos)
      << metrics;
}

// kube-scheduler with PR #135486 sends a node its own plugins fit without eviction (GPU
// resources are ignoredByScheduler) with no victims: tessera fills in the GPU victims, and leaves
// a node where GPUs are not the problem empty, for another extender (omitting it would reject it).
TEST_F(PreemptTest, NodesSentWithoutVictimsGetTheGpuVictims) {
  MakeSynced(
      {NodeWith("n1", {SharingGpu("GPU-1", 8000)}), NodeWith("n2", {SharingGpu("GPU-2", 8000)})});
  Running("ns/full", 1, "n1", "GPU-1", 8000);
  const model::Pod pod = PodBuilder("ns/p").Priority(100).Container(1, 4000, 10).Build();
  Json out = Preempt(Body(pod, {{"n1", Victims({})}, {"n2", Victims({})}}));
  EXPECT_EQ(out["n1"], Victims({"uid-full"}));
  EXPECT_EQ(out["n2"], Victims({}));
}

TEST_F(PreemptTest, APodAPdbProtectsIsSparedWhenAnotherSetWorks) {
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1", 8000)})});
  model::Pod guarded = PodBuilder("db/guarded")
                           .Priority(1)
                           .Label("app", "db")
                           .Container(1, 4000, 10)
                           .PlacedOn("n1", "GPU-1", 4000)
                           .Build();
  guarded.node_name = "n1";
  guarded.phase = "Running";
  service->view.UpsertPodModel(guarded);
  Running("db/x", 1, "n1", "GPU-1", 2000);
  Running("db/y", 1, "n1", "GPU-1", 2000);
  const model::Pod pod = PodBuilder("ns/p").Priority(100).Container(1, 4000, 10).Build();
  EXPECT_EQ(Preempt(Body(pod, {{"n1", Victims({})}}))["n1"], Victims({"uid-guarded"}));
  service->view.UpsertDisruptionBudget(
      Json{{"metadata", {{"name", "db"}, {"namespace", "db"}}},
           {"spec", {{"selector", {{"matchLabels", {{"app", "db"}}}}}}},
           {"status", {{"disruptionsAllowed", 0}}}});
  EXPECT_EQ(Preempt(Body(pod, {{"n1", Victims({})}}))["n1"], Victims({"uid-x", "uid-y"}));
  service->view.DeleteDisruptionBudget(Json{{"metadata", {{"name", "db"}, {"namespace", "db"}}}});
  EXPECT_EQ(Preempt(Body(pod, {{"n1", Victims({})}}))["n1"], Victims({"uid-guarded"}));
}

TEST_F(PreemptTest, PodsOfEqualPriorityAreNeverVictims) {
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1", 8000)})});
  Running("ns/peer", 100, "n1", "GPU-1", 6000);
  const model::Pod pod = PodBuilder("ns/p").Priority(100).Container(1, 4000, 10).Build();
  EXPECT_EQ(Preempt(Body(pod, {{"n1", Victims({"uid-peer"})}})), Json::object());
}

// A pod whose reservation waits for its bind may not be on kube-scheduler's node yet: naming it
// would fail the whole preemption, so another set is chosen.
TEST_F(PreemptTest, PodsAwaitingTheirBindAreSpared) {
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1", 8000)})});
  Running("ns/running", 1, "n1", "GPU-1", 4000);
  const model::Pod filtered = PodBuilder("ns/filtered").Priority(1).Container(1, 4000, 10).Build();
  ASSERT_EQ(Filter(filtered, {"n1"})["NodeNames"], Json({"n1"}));
  const model::Pod pod = PodBuilder("ns/p").Priority(100).Container(1, 4000, 10).Build();
  Json out = Preempt(Body(pod, {{"n1", Victims({"uid-filtered"})}}));
  EXPECT_EQ(out["n1"], Victims({"uid-running"}));
}

// A scheduler that is not nodeCacheCapable sends whole pods: the same answer, by uid.
TEST_F(PreemptTest, WholePodVictimsAreReadByUid) {
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1", 8000)})});
  Running("ns/big", 1, "n1", "GPU-1", 8000);
  const model::Pod pod = PodBuilder("ns/p").Priority(100).Container(1, 4000, 10).Build();
  const model::Pod victim = PodBuilder("ns/big").Build();
  const std::string body =
      Json{{"Pod", PodJson(pod)},
           {"NodeNameToVictims", {{"n1", {{"Pods", {PodJson(victim)}}, {"NumPDBViolations", 0}}}}}}
          .dump();
  EXPECT_EQ(Preempt(body)["n1"], Victims({"uid-big"}));
}

TEST_F(PreemptTest, APodWithoutGpusKeepsKubeSchedulersVictims) {
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1", 8000)})});
  const model::Pod pod = PodBuilder("ns/cpu").Priority(100).Build();
  Json out = Preempt(Body(pod, {{"n1", Victims({"uid-a"})}, {"unknown", Victims({"uid-b"})}}));
  EXPECT_EQ(out["n1"], Victims({"uid-a"}));
  EXPECT_EQ(out["unknown"], Victims({"uid-b"}));
}

TEST_F(PreemptTest, FailuresAreFailedCalls) {
  Make();  // not synced
  const model::Pod pod = PodBuilder("ns/p").Priority(100).Container(1, 4000, 10).Build();
  ExtenderVerbs::PreemptAnswer not_ready =
      service->verbs.Preempt(Body(pod, {{"n1", Victims({"uid-a"})}}));
  EXPECT_NE(not_ready.error, "");
  EXPECT_FALSE(not_ready.bad_request);
  ExtenderVerbs::PreemptAnswer malformed = service->verbs.Preempt(R"({"Pod":[]})");
  EXPECT_NE(malformed.error, "");
  EXPECT_TRUE(malformed.bad_request);
  ExtenderVerbs::PreemptAnswer bad_pod = service->verbs.Preempt(
      R"({"Pod":{"metadata":{"name":"p"},"spec":{"priority":"x"}},"NodeNameToMetaVictims":{}})");
  EXPECT_TRUE(bad_pod.bad_request);
  EXPECT_NE(bad_pod.error.find("ExtenderPreemptionArgs.Pod"), std::string::npos);
}

}  // namespace
}  // namespace tessera::scheduler
