// The cluster view: readiness, and the feed of nodes, pods and ResourceQuotas (relists, restarts,
// malformed objects, pods that finish or are replaced, the node label selector).
#include "scheduler/cluster_view.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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
using testing_support::FakeWriter;
using testing_support::QuotaJson;
using testing_support::ReviewJson;
using testing_support::ServiceTest;

// ---- readiness ----------------------------------------------------------------------------------

TEST_F(ServiceTest, NotSyncedAnswersWithAnErrorInsteadOfGuessing) {
  auto& s = Make();
  s.view.ReplaceNodes({NodeJson(NodeWith("n1", {SharingGpu("GPU-1")}))});
  Json r = Filter(PodBuilder("ns/p").Container(1, 1000).Build(), {"n1"});
  EXPECT_NE(r["Error"].get<std::string>().find("has not synced"), std::string::npos);
  std::string why;
  EXPECT_FALSE(s.view.Ready(&why));
  s.view.SetSynced(true);
  EXPECT_TRUE(s.view.Ready(&why));
}

TEST_F(ServiceTest, FollowerDoesNotServe) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  s.view.SetLeader(false);
  auto pod = PodBuilder("ns/p").Container(1, 1000).Build();
  Json r = Filter(pod, {"n1"});
  EXPECT_NE(r["Error"].get<std::string>().find("not the leader"), std::string::npos);
  EXPECT_EQ(writer.patches, 0);
  std::string why;
  EXPECT_FALSE(s.view.Ready(&why));
  EXPECT_EQ(why, "this replica is not the leader");
}

// ---- pods and nodes -----------------------------------------------------------------------------

TEST_F(ServiceTest, RestartRebuildsReservationsFromAnnotations) {
  options.write_placement_in_bind = false;  // --write-placement=filter, HAMi's way
  auto& first = Make();
  const Json node = NodeJson(NodeWith("n1", {SharingGpu("GPU-1")}));
  first.view.ReplaceNodes({node});
  first.view.SetSynced(true);
  auto bound = PodBuilder("ns/bound").Container(1, 16000).Build();
  auto unbound = PodBuilder("ns/unbound").Container(1, 16000).Build();
  ASSERT_EQ(Filter(bound, {"n1"})["NodeNames"][0], "n1");
  ASSERT_EQ(Bind(bound, "n1"), "");
  ASSERT_EQ(Filter(unbound, {"n1"})["NodeNames"][0], "n1");
  // What the API server holds now.
  bound.annotations = writer.annotations["ns/bound"];
  bound.node_name = "n1";
  unbound.annotations = writer.annotations["ns/unbound"];

  FakeWriter second_writer;
  SchedulerService second(config::SchedulerConfig{}, options, second_writer, clocks);
  second.view.ReplaceNodes({node});
  second.view.ReplacePods({PodJson(bound), PodJson(unbound)});
  second.view.SetSynced(true);
  size_t held = 0;
  second.view.WithState([&](const state::ClusterState& st) { held = st.pods().size(); });
  EXPECT_EQ(held, 2u);
  EXPECT_EQ(second.view.pending_reservations(), 1u) << "the unbound one waits for its bind";
  // The GPU is full: nothing is booked twice.
  Json r = Json::parse(
      second.verbs.Filter(FilterBody(PodBuilder("ns/new").Container(1, 1000).Build(), {"n1"})));
  EXPECT_TRUE(r["NodeNames"].is_null()) << r.dump();
  // The bind of the pod filtered before the restart still works.
  EXPECT_EQ(Json::parse(second.verbs.Bind(BindBody(unbound, "n1")))["Error"], "");
}

TEST_F(ServiceTest, OlderPodEventDoesNotDropAFreshReservation) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  auto pod = PodBuilder("ns/p").Container(1, 32768).Build();
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  s.view.UpsertPod(PodJson(pod));  // the ADDED event, from before the annotations were written
  EXPECT_TRUE(Holds("ns/p"));
  EXPECT_EQ(s.view.pending_reservations(), 1u);
}

TEST_F(ServiceTest, FinishedOrReplacedPodsReleaseTheirDevices) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  auto pod = PodBuilder("ns/p").Container(1, 32768).Build();
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  ASSERT_EQ(Bind(pod, "n1"), "");
  pod.annotations = writer.annotations["ns/p"];
  pod.node_name = "n1";
  pod.phase = "Running";
  s.view.UpsertPod(PodJson(pod));
  EXPECT_TRUE(Holds("ns/p"));
  model::Pod replaced = pod;
  replaced.uid = "another-uid";
  replaced.annotations.clear();
  replaced.node_name.clear();
  replaced.phase = "Pending";
  s.view.UpsertPod(PodJson(replaced));
  EXPECT_FALSE(Holds("ns/p")) << "a new pod with the same name holds nothing yet";
  s.view.UpsertPod(PodJson(pod));
  EXPECT_TRUE(Holds("ns/p"));
  pod.phase = "Succeeded";
  s.view.UpsertPod(PodJson(pod));
  EXPECT_FALSE(Holds("ns/p"));
}

TEST_F(ServiceTest, RelistDropsPodsThatAreGone) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  auto pod = PodBuilder("ns/p").Container(1, 32768).Build();
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  ASSERT_EQ(Bind(pod, "n1"), "");
  s.view.ReplacePods({});
  EXPECT_FALSE(Holds("ns/p"));
}

TEST_F(ServiceTest, MalformedNodeDoesNotPoisonOthers) {
  auto& s = Make();
  model::Node bad = NodeWith("bad", {SharingGpu("GPU-B")});
  bad.annotations["hami.io/node-nvidia-register"] = "[{not json";
  Json garbage = {{"metadata", {{"name", 42}}}};
  s.view.ReplaceNodes({garbage, NodeJson(bad), NodeJson(NodeWith("good", {SharingGpu("GPU-G")}))});
  s.view.SetSynced(true);
  Json r = Filter(PodBuilder("ns/p").Container(1, 1000).Build(), {"bad", "good"});
  EXPECT_EQ(r["NodeNames"], Json::parse(R"(["good"])")) << r.dump();
  auto metrics = s.view.metrics().Render({});
  EXPECT_NE(metrics.find("tessera_decode_errors_total{kind=\"node\"} 1"), std::string::npos)
      << metrics;
}

// Issue 14: a running pod whose hami.io/vgpu-mig-allocations does not decode is not dropped:
// its 7000 MiB count, its GPU is not offered to anyone (CardNotHealth), the problem is one
// Warning Event however often the informer sends the pod, and the GPU is free once it is gone.
TEST_F(ServiceTest, RunningPodWithAnUnreadableAnnotationHoldsItsGpu) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-0")})});
  model::Pod running = PodBuilder("ns/running").Container(1, 7000).Build();
  running.node_name = "n1";
  running.annotations["hami.io/vgpu-node"] = "n1";
  running.annotations["hami.io/bind-phase"] = "success";
  running.annotations["hami.io/vgpu-devices-allocated"] = "GPU-0,NVIDIA,7000,0:;";
  running.annotations["hami.io/vgpu-mig-allocations"] =
      R"([{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-0","profile":"1g.5gb","placement":{"start":0,"size":1}},)"
      R"({"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-0","profile":"1g.5gb","placement":{"start":1,"size":1}}])";
  s.view.UpsertPod(PodJson(running));
  s.view.UpsertPod(PodJson(running));  // the informer resends it
  EXPECT_TRUE(Holds("ns/running"));
  Json r = Filter(PodBuilder("ns/next").Container(1, 1000).Build(), {"n1"});
  EXPECT_TRUE(r["NodeNames"].is_null()) << r.dump();
  EXPECT_EQ(r["FailedNodes"]["n1"], "1/1 CardNotHealth") << r.dump();
  int events = 0;
  for (const auto& e : writer.events) {
    if (e.find("UnreadableGPUAllocation") != std::string::npos) {
      ++events;
      EXPECT_NE(e.find("GPUs GPU-0 are held whole"), std::string::npos) << e;
    }
  }
  EXPECT_EQ(events, 1);
  s.view.DeletePod(PodJson(running));
  r = Filter(PodBuilder("ns/next").Container(1, 1000).Build(), {"n1"});
  EXPECT_EQ(r["NodeNames"][0], "n1") << r.dump();
}

TEST_F(ServiceTest, NodeLabelSelectorLeavesOtherNodesUnregistered) {
  options.node_selector = {{"gpu", "on"}};
  model::Node in = NodeWith("in", {SharingGpu("GPU-1")});
  in.labels["gpu"] = "on";
  model::Node out = NodeWith("out", {SharingGpu("GPU-2")});
  out.labels["gpu"] = "off";
  auto& s = MakeSynced({in, out});
  auto pod = PodBuilder("ns/p").Container(1, 1000).Build();
  Json r = Filter(pod, {"out"});
  EXPECT_EQ(r["FailedAndUnresolvableNodes"]["out"], "node unregistered") << r.dump();
  EXPECT_EQ(Filter(pod, {"in", "out"})["NodeNames"][0], "in");
  // Relabelled: it is registered from the next update on.
  out.labels["gpu"] = "on";
  s.view.UpsertNode(NodeJson(out));
  auto second = PodBuilder("ns/q").Container(1, 1000).Build();
  EXPECT_EQ(Filter(second, {"out"})["NodeNames"][0], "out");
}

// ---- GPU quotas (ResourceQuota limits.nvidia.com/gpumem, limits.nvidia.com/gpucores) ------------

TEST_F(ServiceTest, QuotaHoldsTheThirdPodUntilOneIsDeleted) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1", 16000), SharingGpu("GPU-2", 16000)})});
  s.view.ReplaceQuotas({QuotaJson("team", "gpu", {{"limits.nvidia.com/gpumem", "16000"}})});
  auto p1 = PodBuilder("team/p1").Container(1, 8000).Build();
  auto p2 = PodBuilder("team/p2").Container(1, 8000).Build();
  auto p3 = PodBuilder("team/p3").Container(1, 8000).Build();
  auto other = PodBuilder("elsewhere/p").Container(1, 8000).Build();
  ASSERT_EQ(Filter(p1, {"n1"})["NodeNames"][0], "n1");
  ASSERT_EQ(Filter(p2, {"n1"})["NodeNames"][0], "n1");
  Json r3 = Filter(p3, {"n1"});
  EXPECT_TRUE(r3["NodeNames"].is_null());
  EXPECT_EQ(r3["FailedNodes"]["n1"], "2/2 ResourceQuotaNotFit") << r3.dump();
  EXPECT_EQ(Filter(other, {"n1"})["NodeNames"][0], "n1") << "quotas are per namespace";
  // The webhook denies it too, in HAMi's words.
  Json w = Json::parse(s.verbs.Webhook(ReviewJson("team", p3).dump()));
  EXPECT_FALSE(w["response"]["allowed"].get<bool>());
  const std::string why = w["response"]["status"]["message"];
  EXPECT_NE(why.find("exceeding resource quota"), std::string::npos) << why;
  EXPECT_NE(why.find("8000 MiB asked, 0 MiB left"), std::string::npos) << why;
  // HAMi's quota metrics: use in MiB against the limit.
  std::vector<prometheus::MetricFamily> families;
  s.view.WithState([&](const state::ClusterState& st) { families = GpuUsageFamilies(st); });
  const std::string text = s.view.metrics().Render(families);
  EXPECT_NE(text.find("hami_resource_quota_used{zone=\"vGPU\",namespace=\"team\",quota_name="
                      "\"nvidia.com/gpumem\",limit=\"16000\"} 16000"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("hami_resource_quota_limit{zone=\"vGPU\",namespace=\"team\",quota_name="
                      "\"nvidia.com/gpumem\"} 16000"),
            std::string::npos);
  // A deleted pod gives its share back.
  s.view.DeletePod(PodJson(p1));
  EXPECT_EQ(Filter(p3, {"n1"})["NodeNames"][0], "n1");
  Json allowed = Json::parse(s.verbs.Webhook(ReviewJson("elsewhere", p3).dump()));
  EXPECT_TRUE(allowed["response"]["allowed"].get<bool>()) << allowed.dump();
}

TEST_F(ServiceTest, QuotaUpdatesAndDeletesApplyAtOnce) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1", 16000)})});
  s.view.UpsertQuota(QuotaJson("team", "gpu", {{"limits.nvidia.com/gpucores", 20}}));
  auto pod = PodBuilder("team/p").Container(1, 1000, 30).Build();
  EXPECT_EQ(Filter(pod, {"n1"})["FailedNodes"]["n1"], "1/1 ResourceQuotaNotFit");
  s.view.UpsertQuota(QuotaJson("team", "gpu", {{"limits.nvidia.com/gpucores", 40}}));
  EXPECT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  s.view.UpsertQuota(QuotaJson("team", "gpu", {{"limits.nvidia.com/gpucores", 0}}));
  auto second = PodBuilder("team/q").Container(1, 1000, 10).Build();
  EXPECT_EQ(Filter(second, {"n1"})["FailedNodes"]["n1"], "1/1 ResourceQuotaNotFit")
      << "a limit of 0 blocks every GPU pod";
  s.view.DeleteQuota(QuotaJson("team", "gpu", Json::object()));
  EXPECT_EQ(Filter(second, {"n1"})["NodeNames"][0], "n1");
}

TEST_F(ServiceTest, MalformedQuotaIsSkippedAndNamedWithoutTouchingOthers) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1", 16000)})});
  s.view.ReplaceQuotas({Json::array(),
                        QuotaJson("bad", "gpu", {{"limits.nvidia.com/gpumem", "lots"}}),
                        QuotaJson("team", "gpu", {{"limits.nvidia.com/gpumem", 1000}})});
  auto bad = PodBuilder("bad/p").Container(1, 8000).Build();
  auto team = PodBuilder("team/p").Container(1, 8000).Build();
  EXPECT_EQ(Filter(bad, {"n1"})["NodeNames"][0], "n1") << "an unreadable limit limits nothing";
  EXPECT_EQ(Filter(team, {"n1"})["FailedNodes"]["n1"], "1/1 ResourceQuotaNotFit");
}

}  // namespace
}  // namespace tessera::scheduler
