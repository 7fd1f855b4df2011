// /defrag plans from the cluster view: the pods the last filter placed nowhere, the specs of the
// bound pods a controller recreates, and nothing else (ClusterView::CopyForDefrag,
// ReadViews::Defrag).
#include <gtest/gtest.h>

#include <string>

#include "scheduler/service_fixture.h"
#include "support/builders.h"
#include "support/k8s_json.h"

namespace tessera::scheduler {
namespace {

using testing::NodeWith;
using testing::PodBuilder;
using testing::PodJson;
using testing::SharingGpu;
using testing_support::ServiceTest;

class DefragViewTest : public ServiceTest {
 protected:
  // A pod bound to `node`, holding `mem` MiB of `uuid`, owned by a controller of `kind` ("":
  // none).
  static model::Pod Running(const std::string& key, const std::string& node,
                            const std::string& uuid, int mem, const std::string& kind) {
    model::Pod pod = PodBuilder(key).Container(1, mem, 10).PlacedOn(node, uuid, mem).Build();
    pod.node_name = node;
    pod.phase = "Running";
    pod.controller_kind = kind;
    return pod;
  }

  // n1 and n2 with one 12000 MiB GPU each: ns/w (a ReplicaSet's, 4000 MiB) on n1, ns/bare (no
  // controller, 6000 MiB) on n2, and ns/p (10000 MiB), which fits on neither, filtered.
  void Fragmented(const std::string& w_kind = "ReplicaSet") {
    MakeSynced({NodeWith("n1", {SharingGpu("GPU-1", 12000)}),
                NodeWith("n2", {SharingGpu("GPU-2", 12000)})});
    service->view.UpsertPodModel(Running("ns/w", "n1", "GPU-1", 4000, w_kind));
    service->view.UpsertPodModel(Running("ns/bare", "n2", "GPU-2", 6000, ""));
    service->view.UpsertPodModel(Pending());  // the informer shows it
    ASSERT_TRUE(Filter(Pending(), {"n1", "n2"})["NodeNames"].empty());
  }
  static model::Pod Pending() { return PodBuilder("ns/p").Container(1, 10000, 10).Build(); }
};

TEST_F(DefragViewTest, APodTheFilterPlacedNowhereIsAdmittedByMovingAControllersPod) {
  Fragmented();
  const DefragResult result = service->reads.Defrag({}, true);
  const sched::DefragPlan& plan = result.plan;
  ASSERT_EQ(plan.mode, sched::DefragPlan::Mode::kAdmitPending) << result.body;
  ASSERT_EQ(plan.steps.size(), 1U) << result.body;
  EXPECT_EQ(plan.steps[0].pod, "ns/w");
  EXPECT_EQ(plan.steps[0].node, "n1");
  EXPECT_EQ(plan.steps[0].replaced_node, "n2");
  ASSERT_EQ(plan.admitted.size(), 1U);
  EXPECT_EQ(plan.admitted[0].pod, "ns/p");
  EXPECT_EQ(plan.admitted[0].node, "n1");
  EXPECT_EQ(plan.unmovable.at("ns/bare"), "no controller recreates it");
  EXPECT_EQ(codec::Json::parse(result.body)["mode"], "admit-pending");
  // A dry run: the view is unchanged.
  EXPECT_TRUE(Holds("ns/w"));
  EXPECT_FALSE(Holds("ns/p"));
}

// A pod only a filter request named (kube-scheduler may still filter a pod deleted since; found
// in e2e, where such a pod from another test was planned onto this test's GPU) is not planned
// for; once the informer shows it, it is.
TEST_F(DefragViewTest, APodOnlyAFilterNamedIsNotPlannedFor) {
  MakeSynced(
      {NodeWith("n1", {SharingGpu("GPU-1", 12000)}), NodeWith("n2", {SharingGpu("GPU-2", 12000)})});
  service->view.UpsertPodModel(Running("ns/w", "n1", "GPU-1", 4000, "ReplicaSet"));
  service->view.UpsertPodModel(Running("ns/bare", "n2", "GPU-2", 6000, ""));
  ASSERT_TRUE(Filter(Pending(), {"n1", "n2"})["NodeNames"].empty());
  EXPECT_TRUE(service->view.CopyForDefrag().pending.empty());
  sched::DefragPlan plan = service->reads.Defrag({}, false).plan;
  EXPECT_NE(plan.mode, sched::DefragPlan::Mode::kAdmitPending);
  EXPECT_TRUE(plan.admitted.empty());
  EXPECT_EQ(plan.not_admitted.count("ns/p"), 0U);
  service->view.UpsertPodModel(Pending());
  EXPECT_EQ(service->view.CopyForDefrag().pending.size(), 1U);
  plan = service->reads.Defrag({}, false).plan;
  EXPECT_EQ(plan.mode, sched::DefragPlan::Mode::kAdmitPending);
  ASSERT_EQ(plan.admitted.size(), 1U);
  EXPECT_EQ(plan.admitted[0].pod, "ns/p");
}

TEST_F(DefragViewTest, ADaemonSetsPodIsNeverMoved) {
  Fragmented("DaemonSet");
  const sched::DefragPlan plan = service->reads.Defrag({}, false).plan;
  EXPECT_TRUE(plan.steps.empty());
  EXPECT_EQ(plan.unmovable.at("ns/w"), "its controller (DaemonSet) does not recreate it elsewhere");
  EXPECT_EQ(plan.not_admitted.count("ns/p"), 1U);
}

// The Job informer's objects decide whether a Job's pod moves: listed with retries to spare it
// does, updated to none (or malformed, or deleted) it stays.
TEST_F(DefragViewTest, AJobsPodMovesAsItsJobAsListedAllows) {
  MakeSynced(
      {NodeWith("n1", {SharingGpu("GPU-1", 12000)}), NodeWith("n2", {SharingGpu("GPU-2", 12000)})});
  model::Pod w = Running("ns/w", "n1", "GPU-1", 4000, "Job");
  w.labels["batch.kubernetes.io/controller-uid"] = "job-uid";
  service->view.UpsertPodModel(w);
  service->view.UpsertPodModel(Running("ns/bare", "n2", "GPU-2", 6000, ""));
  service->view.UpsertPodModel(Pending());
  ASSERT_TRUE(Filter(Pending(), {"n1", "n2"})["NodeNames"].empty());
  auto job = [](const char* spec_and_status) {
    return codec::Json::parse(
        std::string(R"({"metadata": {"name": "train", "namespace": "ns", "uid": "job-uid"}, )") +
        spec_and_status + "}");
  };
  service->view.ReplaceJobs({job(R"("spec": {"backoffLimit": 3})")});
  EXPECT_EQ(service->reads.Defrag({}, false).plan.steps.size(), 1U);
  service->view.UpsertJob(job(R"("spec": {"backoffLimit": 3}, "status": {"failed": 2})"));
  sched::DefragPlan plan = service->reads.Defrag({}, false).plan;
  EXPECT_TRUE(plan.steps.empty());
  EXPECT_EQ(plan.unmovable.at("ns/w"),
            "its Job ns/train would be left without a retry (backoffLimit 3, 2 failed) and its "
            "podFailurePolicy does not ignore evictions");
  service->view.UpsertJob(job(R"("spec": {"backoffLimit": 3})"));
  EXPECT_EQ(service->reads.Defrag({}, false).plan.steps.size(), 1U);
  // A malformed update forgets what was known: the pod stays.
  service->view.UpsertJob(job(R"("spec": {"backoffLimit": "three"})"));
  plan = service->reads.Defrag({}, false).plan;
  EXPECT_EQ(plan.unmovable.at("ns/w"), "its Job is not known, so its retries cannot be counted");
  service->view.UpsertJob(job(R"("spec": {"backoffLimit": 3})"));
  service->view.DeleteJob(job(R"("spec": {})"));
  EXPECT_TRUE(service->reads.Defrag({}, false).plan.steps.empty());
}

// A defragmentation run marks the pod it evicts with the node its replacement belongs on: once
// the feed shows that pod terminating, the controller's next pod is placed there (if it fits),
// once; other controllers' pods, and later pods of the same one, are placed as usual.
TEST_F(DefragViewTest, TheReplacementOfAMarkedEvictedPodIsPlacedWhereThePlanSaid) {
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1", 12000)}),
              NodeWith("n2", {SharingGpu("GPU-2", 12000)}),
              NodeWith("n3", {SharingGpu("GPU-3", 12000)})});
  model::Pod w = Running("ns/w", "n1", "GPU-1", 4000, "ReplicaSet");
  w.controller_uid = "rs-1";
  w.uid = "uid-w";
  service->view.UpsertPodModel(w);
  auto replacement = [](const std::string& key, const std::string& controller) {
    model::Pod pod = PodBuilder(key).Container(1, 4000, 10).Build();
    pod.controller_kind = "ReplicaSet";
    pod.controller_uid = controller;
    return pod;
  };
  const std::vector<std::string> nodes{"n1", "n2", "n3"};
  const std::string usual = service->view.Preview(replacement("ns/probe", "rs-1"), &nodes).node;
  ASSERT_FALSE(usual.empty());
  const std::string planned = usual == "n3" ? "n2" : "n3";
  // Marked but still running: nothing changes yet.
  w.annotations["tessera.io/defrag-moving-to"] = planned;
  service->view.UpsertPodModel(w);
  EXPECT_EQ(service->view.Preview(replacement("ns/probe", "rs-1"), &nodes).node, usual);
  w.deleting = true;
  service->view.UpsertPodModel(w);
  // Another controller's pod is not steered, nor is one offered only nodes without the move.
  EXPECT_EQ(Filter(replacement("ns/other", "rs-2"), nodes)["NodeNames"][0], usual);
  service->view.DeletePod(PodJson(replacement("ns/other", "rs-2")));
  EXPECT_EQ(Filter(replacement("ns/w-x", "rs-1"), {usual})["NodeNames"][0], usual);
  service->view.DeletePod(PodJson(replacement("ns/w-x", "rs-1")));
  EXPECT_EQ(Filter(replacement("ns/w-2", "rs-1"), nodes)["NodeNames"],
            codec::Json::array({planned}));
  std::string metrics = service->view.metrics().Render({});
  EXPECT_NE(metrics.find("tessera_defrag_steered_pods_total 1"), std::string::npos) << metrics;
  // The move is used: the deletion of the evicted pod does not bring it back.
  service->view.DeletePod(PodJson(w));
  const model::Pod next = replacement("ns/w-3", "rs-1");
  const std::string now_usual = service->view.Preview(next, &nodes).node;
  EXPECT_EQ(Filter(next, nodes)["NodeNames"][0], now_usual);
  metrics = service->view.metrics().Render({});
  EXPECT_NE(metrics.find("tessera_defrag_steered_pods_total 1"), std::string::npos) << metrics;
}

// Once the movable pod is gone its spec goes with it, and the pending pod fits without a move.
TEST_F(DefragViewTest, APodThatLeftIsNeitherMovedNorKept) {
  Fragmented();
  service->view.DeletePod(PodJson(Running("ns/w", "n1", "GPU-1", 4000, "ReplicaSet")));
  const ClusterView::DefragInputs in = service->view.CopyForDefrag();
  EXPECT_TRUE(in.movable.empty());
  ASSERT_EQ(in.pending.size(), 1U);
  const sched::DefragPlan plan = service->reads.Defrag({}, false).plan;
  EXPECT_TRUE(plan.steps.empty());
  ASSERT_EQ(plan.admitted.size(), 1U);
  EXPECT_TRUE(plan.admitted[0].evicted.empty());
}

// Pending pods are this scheduler's: an unbound pod of another scheduler that no filter here
// has seen is not planned for; one of this scheduler's is, oldest first.
TEST_F(DefragViewTest, PendingPodsAreThisSchedulersOldestFirst) {
  options.webhook.scheduler_name = "tessera-scheduler";
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1", 12000)})});
  model::Pod theirs = PodBuilder("ns/theirs").Container(1, 1000, 10).Build();
  theirs.scheduler_name = "default-scheduler";
  model::Pod young = PodBuilder("ns/a-young").Container(1, 1000, 10).Build();
  young.scheduler_name = "tessera-scheduler";
  young.created = "2026-12-06T10:00:00Z";
  model::Pod old = young;
  old.name = "z-old";
  old.uid = "uid-z-old";
  old.created = "2026-12-06T09:00:00Z";
  for (const model::Pod& pod : {theirs, young, old}) service->view.UpsertPodModel(pod);
  const ClusterView::DefragInputs in = service->view.CopyForDefrag();
  ASSERT_EQ(in.pending.size(), 2U);
  EXPECT_EQ(in.pending[0].Key(), "ns/z-old");
  EXPECT_EQ(in.pending[1].Key(), "ns/a-young");
}

}  // namespace
}  // namespace tessera::scheduler
