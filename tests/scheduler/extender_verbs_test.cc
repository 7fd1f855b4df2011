// The extender verbs over the cluster view: filter, bind, prioritize and the webhook, their
// bodies in and out, the cluster writes and what a failed write undoes.
#include "scheduler/extender_verbs.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "adapters/threads/thread_pool.h"
#include "core/codec/pod_devices.h"
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
using testing::RtxPro6000Mig;
using testing::SharingGpu;
using testing_support::ServiceTest;

// ---- filter -------------------------------------------------------------------------------------

TEST_F(ServiceTest, FilterChoosesOneNodeReservesAndWritesThePlacement) {
  options.write_placement_in_bind = false;  // --write-placement=filter, HAMi's way
  auto& s =
      MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")}), NodeWith("n2", {SharingGpu("GPU-2")})});
  auto pod = PodBuilder("ns/p").Container(1, 4000, 30).Build();
  Json r = Filter(pod, {"n1", "n2"});
  EXPECT_EQ(r["Error"], "");
  ASSERT_EQ(r["NodeNames"].size(), 1u);
  const std::string node = r["NodeNames"][0];
  EXPECT_TRUE(r["FailedNodes"].is_null());
  auto& ann = writer.annotations["ns/p"];
  EXPECT_EQ(ann["hami.io/vgpu-node"], node);
  EXPECT_EQ(ann["hami.io/vgpu-time"], "1767225600");
  auto devices = codec::DecodePodDevices(ann["hami.io/vgpu-devices-allocated"]);
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0][0].used_mem, 4000);
  EXPECT_EQ((*devices)[0][0].used_cores, 30);
  EXPECT_TRUE(Holds("ns/p"));
  EXPECT_EQ(s.view.pending_reservations(), 1u);
}

// Counts the batches it hands to a real thread pool.
class CountingRunner final : public TaskRunner {
 public:
  explicit CountingRunner(size_t threads) : pool_(threads) {}
  size_t concurrency() const override { return pool_.concurrency(); }
  void Run(size_t count, const std::function<void(size_t)>& task) override {
    ++batches;
    pool_.Run(count, task);
  }
  int batches = 0;

 private:
  threads::ThreadPool pool_;
};

TEST_F(ServiceTest, FilterOnSeveralThreadsAnswersAsOnOne) {
  // 600 nodes in different states (GPU sizes differ), so the filter has enough work to split.
  std::vector<model::Node> nodes;
  std::vector<std::string> names;
  for (int i = 0; i < 600; ++i) {
    names.push_back("n" + std::to_string(i));
    nodes.push_back(NodeWith(names.back(), {SharingGpu("GPU-" + names.back(), 16000 + 8 * i)}));
  }
  const auto pod = PodBuilder("ns/p").Container(1, 17000, 30).Build();
  MakeSynced(nodes);
  const Json one = Filter(pod, names);
  CountingRunner runner(2);
  options.filter_runner = &runner;
  MakeSynced(nodes);
  const Json two = Filter(pod, names);
  EXPECT_EQ(runner.batches, 1);
  EXPECT_EQ(two["Error"], "");
  EXPECT_EQ(two["NodeNames"], one["NodeNames"]);
  ASSERT_EQ(two["NodeNames"].size(), 1u);
  // A pod that fits nowhere: the same reason for every node.
  const auto big = PodBuilder("ns/big").Container(1, 30000).Build();
  const Json refused = Filter(big, names);
  EXPECT_EQ(runner.batches, 2);
  options.filter_runner = nullptr;
  MakeSynced(nodes);
  EXPECT_EQ(Filter(big, names), refused);
}

// A value nested 80 000 deep in a pod (an annotation, a resource limit) once overflowed the stack
// while its error message printed it: every endpoint that reads a pod answers with an error and
// the service goes on.
TEST_F(ServiceTest, DeeplyNestedValuesInAPodAreRefusedNotFatal) {
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-a")})});
  const std::string deep = std::string(80000, '[') + std::string(80000, ']');
  const std::string pod_in_filter =
      R"({"metadata":{"name":"p","namespace":"ns","uid":"u","annotations":{"x":)" + deep +
      R"(}},"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":)" + deep +
      R"(}}}]}})";
  for (const std::string& body : {R"({"Pod":)" + pod_in_filter + R"(,"NodeNames":["n1"]})",
                                  R"({"Pod":)" + pod_in_filter + "}"}) {
    Json r = Json::parse(service->verbs.Filter(body));
    EXPECT_NE(r["Error"].get<std::string>().find("nested deeper than 128"), std::string::npos)
        << r.dump();
    Json p = Json::parse(service->verbs.Prioritize(body));
    EXPECT_TRUE(p.is_array() || p.is_object()) << p.dump();
  }
  const std::string review =
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"r1",)"
      R"("object":)" +
      pod_in_filter + "}}";
  Json w = Json::parse(service->verbs.Webhook(review));
  EXPECT_NE(w.dump().find("nested deeper than 128"), std::string::npos) << w.dump();
  // Still serving.
  const auto pod = PodBuilder("ns/ok").Container(1, 1000).Build();
  EXPECT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
}

TEST_F(ServiceTest, PodWithoutGpuPassesThroughAndBindsWithoutDevices) {
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  model::Pod pod = PodBuilder("ns/cpu").Build();
  pod.containers.push_back(testing::ContainerBuilder("c").Limit("cpu", "1").Build());
  Json r = Filter(pod, {"n1", "n2"});
  EXPECT_EQ(r["NodeNames"], Json::parse(R"(["n1","n2"])"));
  EXPECT_EQ(writer.patches, 0);
  EXPECT_EQ(Bind(pod, "n2"), "");
  EXPECT_EQ(writer.bound["ns/cpu"], "n2");
}

TEST_F(ServiceTest, MalformedRequestIsUnresolvableOnEveryNodeWithTheReason) {
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  model::Pod pod = PodBuilder("ns/p").Build();
  pod.containers.push_back(
      testing::ContainerBuilder("c0").Gpu(1).Limit("nvidia.com/gpumem", "lots").Build());
  Json r = Filter(pod, {"n1"});
  ASSERT_TRUE(r["FailedAndUnresolvableNodes"].is_object());
  const std::string why = r["FailedAndUnresolvableNodes"]["n1"];
  EXPECT_NE(why.find("nvidia.com/gpumem"), std::string::npos) << why;
  EXPECT_TRUE(r["NodeNames"].is_null());
}

TEST_F(ServiceTest, MalformedBodiesGetAnErrorField) {
  auto& s = Make();
  s.view.SetSynced(true);
  EXPECT_NE(Json::parse(s.verbs.Filter("{"))["Error"].get<std::string>().find("invalid JSON"),
            std::string::npos);
  EXPECT_EQ(Json::parse(s.verbs.Filter(R"({"NodeNames":[]})"))["Error"],
            "extender args missing pod");
  EXPECT_NE(Json::parse(s.verbs.Bind("[]"))["Error"].get<std::string>(), "");
  EXPECT_EQ(Json::parse(s.verbs.Prioritize("nope")), Json::array());
  Json w = Json::parse(s.verbs.Webhook("{}"));
  EXPECT_FALSE(w["response"]["allowed"].get<bool>());
}

TEST_F(ServiceTest, NodesWhereEvictionsCouldMakeRoomStayInFailedNodes) {
  MakeSynced(
      {NodeWith("n1", {SharingGpu("GPU-1", 32768)}), NodeWith("n2", {SharingGpu("GPU-2", 4096)})});
  ASSERT_EQ(Filter(PodBuilder("ns/big").Container(1, 30000).Build(), {"n1"})["NodeNames"],
            Json::parse(R"(["n1"])"));
  Json r = Filter(PodBuilder("ns/p").Container(1, 8000).Build(), {"n1", "n2"});
  // The same reason on both; only n1 would fit the pod once its pods were evicted.
  EXPECT_EQ(r["FailedNodes"], Json::parse(R"({"n1": "1/1 CardInsufficientMemory"})")) << r.dump();
  EXPECT_EQ(r["FailedAndUnresolvableNodes"], Json::parse(R"({"n2": "1/1 CardInsufficientMemory"})"))
      << r.dump();
  EXPECT_EQ(r["Error"], "");
}

TEST_F(ServiceTest, UnschedulablePodGetsPerNodeReasonsAndAnEvent) {
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  Json r = Filter(PodBuilder("ns/p").Container(2, 1000).Build(), {"n1"});
  // No eviction gives the node a second GPU: preemption is ruled out there.
  EXPECT_EQ(r["FailedAndUnresolvableNodes"]["n1"], "NodeInsufficientDevice") << r.dump();
  EXPECT_TRUE(r["FailedNodes"].is_null()) << r.dump();
  ASSERT_FALSE(writer.events.empty());
  EXPECT_EQ(writer.events.back(),
            "ns/p Warning FilteringFailed: 1 nodes NodeInsufficientDevice(n1)");
}

// A node that takes no pod is refused with its own words, but counted in the metric under one
// bounded label: a label per registration error would grow /metrics without bound.
TEST_F(ServiceTest, AnUnusableNodeIsOneMetricLabelWhateverItsError) {
  auto& s = Make();
  model::Node bad = NodeWith("bad", {SharingGpu("GPU-B")});
  bad.annotations["hami.io/node-nvidia-register"] = "[{not json";
  s.view.ReplaceNodes({NodeJson(bad)});
  s.view.SetSynced(true);
  Json r = Filter(PodBuilder("ns/p").Container(1, 1000).Build(), {"bad"});
  const std::string why = r["FailedAndUnresolvableNodes"]["bad"];
  EXPECT_EQ(why.rfind("node unusable: ", 0), 0U) << r.dump();
  ASSERT_FALSE(writer.events.empty());
  // The Event says why in full.
  EXPECT_EQ(writer.events.back(), "ns/p Warning FilteringFailed: 1 nodes " + why + "(bad)");
  const std::string metrics = s.view.metrics().Render({});
  EXPECT_NE(metrics.find("tessera_filter_unschedulable_reasons_total{reason=\"NodeUnusable\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_EQ(metrics.find("reason=\"node unusable"), std::string::npos) << metrics;
}

TEST_F(ServiceTest, FailedAnnotationWriteReleasesTheReservation) {
  options.write_placement_in_bind = false;  // --write-placement=filter, HAMi's way
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  writer.fail_patch = true;
  auto pod = PodBuilder("ns/p").Container(1, 32768).Build();
  Json r = Filter(pod, {"n1"});
  EXPECT_NE(r["Error"].get<std::string>().find("injected patch failure"), std::string::npos);
  EXPECT_TRUE(r["NodeNames"].is_null());
  EXPECT_FALSE(Holds("ns/p"));
  EXPECT_EQ(s.view.pending_reservations(), 0u);
  // The whole card is free again for the next pod.
  writer.fail_patch = false;
  EXPECT_EQ(Filter(PodBuilder("ns/q").Container(1, 32768).Build(), {"n1"})["NodeNames"][0], "n1");
}

// ---- bind ---------------------------------------------------------------------------------------

TEST_F(ServiceTest, BindCreatesTheBindingAndMarksTheBindPhase) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  auto pod = PodBuilder("ns/p").Container(1, 4000).Build();
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  EXPECT_EQ(Bind(pod, "n1"), "");
  EXPECT_EQ(writer.bound["ns/p"], "n1");
  EXPECT_EQ(writer.annotations["ns/p"]["hami.io/bind-phase"], "allocating");
  EXPECT_EQ(writer.annotations["ns/p"]["hami.io/bind-time"], "1767225600");
  EXPECT_EQ(s.view.pending_reservations(), 0u);
  EXPECT_TRUE(Holds("ns/p"));
  EXPECT_TRUE(writer.locks.empty()) << "no HAMi node lock unless asked for";
}

// One write per pod: the placement and bind-phase ride on the Binding (the API server sets them
// with the node); filter makes none.
TEST_F(ServiceTest, PlacementWrittenInBindIsOneWriteAndNoneInFilter) {
  options.write_placement_in_bind = true;
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  auto pod = PodBuilder("ns/p").Container(1, 4000).Build();
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  EXPECT_EQ(writer.patches, 0) << "filter answers without an API round trip";
  EXPECT_TRUE(Holds("ns/p"));
  EXPECT_EQ(Bind(pod, "n1"), "");
  EXPECT_EQ(writer.patches, 0);
  EXPECT_EQ(writer.bindings, 1);
  auto& ann = writer.annotations["ns/p"];
  EXPECT_EQ(ann["hami.io/vgpu-node"], "n1");
  EXPECT_FALSE(ann["hami.io/vgpu-devices-allocated"].empty());
  EXPECT_EQ(ann["hami.io/bind-phase"], "allocating");
  EXPECT_EQ(writer.bound["ns/p"], "n1");
}

TEST_F(ServiceTest, PlacementWrittenInBindIsReleasedWhenTheWriteFails) {
  options.write_placement_in_bind = true;
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  auto pod = PodBuilder("ns/p").Container(1, 32768).Build();
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  writer.fail_bind = true;
  EXPECT_EQ(Bind(pod, "n1"), "injected bind failure");
  EXPECT_TRUE(writer.annotations["ns/p"].empty()) << "nothing is written when the Binding fails";
  EXPECT_FALSE(Holds("ns/p"));
  EXPECT_TRUE(writer.bound.empty());
}

// A restart (or a new leader) between a pod's filter and its bind loses the in-memory
// reservation; the bind then places the pod on its node itself if it still fits there, and
// writes the placement with bind-phase: no retry, nothing booked twice.
TEST_F(ServiceTest, ABindAfterARestartPlacesThePodWhereItStillFits) {
  options.write_placement_in_bind = true;
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  model::Pod pod = PodBuilder("ns/p").Container(1, 4000).Build();
  pod.scheduler_name = options.webhook.scheduler_name;
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});  // the restart: nothing in memory
  service->view.UpsertPodModel(pod);                    // the informer's relist
  EXPECT_EQ(Bind(pod, "n1"), "");
  EXPECT_EQ(writer.bound["ns/p"], "n1");
  auto& ann = writer.annotations["ns/p"];
  EXPECT_EQ(ann["hami.io/vgpu-node"], "n1");
  EXPECT_EQ(ann["hami.io/vgpu-devices-allocated"], "GPU-1,NVIDIA,4000,0:;");
  EXPECT_EQ(ann["hami.io/bind-phase"], "allocating");
  EXPECT_EQ(writer.patches, 0);
  EXPECT_EQ(writer.bindings, 1);
  EXPECT_TRUE(Holds("ns/p"));
  EXPECT_EQ(service->view.pending_reservations(), 0U);
  const std::string metrics = service->view.metrics().Render({});
  EXPECT_NE(metrics.find("tessera_binds_placed_at_bind_total 1"), std::string::npos) << metrics;
}

TEST_F(ServiceTest, ABindAfterARestartIsRefusedWhereThePodNoLongerFits) {
  options.write_placement_in_bind = true;
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1", 8000)})});
  model::Pod pod = PodBuilder("ns/p").Container(1, 4000).Build();
  pod.scheduler_name = options.webhook.scheduler_name;
  service->view.UpsertPodModel(pod);
  model::Pod running =
      PodBuilder("ns/running").Container(1, 6000).PlacedOn("n1", "GPU-1", 6000).Build();
  running.node_name = "n1";
  running.phase = "Running";
  service->view.UpsertPodModel(running);
  EXPECT_EQ(Bind(pod, "n1"),
            "pod ns/p was not filtered by this replica (a restart or a new leader since) and no "
            "longer fits on node n1; it must be filtered again");
  EXPECT_TRUE(writer.bound.empty());
  EXPECT_EQ(writer.patches, 0);
  EXPECT_FALSE(Holds("ns/p"));
}

// Only pods this scheduler schedules, with the uid the bind names, are placed by a bind: a bind
// kube-scheduler never sends stays refused without writes.
TEST_F(ServiceTest, ABindIsNeverPlacedForAnotherSchedulersPodOrAnotherUid) {
  options.write_placement_in_bind = true;
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  model::Pod other = PodBuilder("ns/other").Container(1, 4000).Build();
  other.scheduler_name = "someone-else";
  service->view.UpsertPodModel(other);
  EXPECT_EQ(Bind(other, "n1").find("pod ns/other has no filter answer"), 0U);
  model::Pod ours = PodBuilder("ns/ours").Container(1, 4000).Build();
  ours.scheduler_name = options.webhook.scheduler_name;
  service->view.UpsertPodModel(ours);
  model::Pod forged = ours;
  forged.uid = "uid-forged";
  EXPECT_EQ(Bind(forged, "n1").find("pod ns/ours has no filter answer"), 0U);
  EXPECT_TRUE(writer.bound.empty());
  EXPECT_EQ(writer.patches, 0);
}

// A pod that still carries a key of an earlier placement (here HAMi's MIG allocation, now placed
// on a shared GPU) gets it removed by a patch before the Binding: a Binding can only set keys.
TEST_F(ServiceTest, AnEarlierPlacementsKeyIsRemovedByAPatchBeforeTheBinding) {
  options.write_placement_in_bind = true;
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  auto pod = PodBuilder("ns/p")
                 .Container(1, 4000)
                 .Annotation("hami.io/vgpu-mig-allocations", "stale")
                 .Build();
  writer.annotations["ns/p"]["hami.io/vgpu-mig-allocations"] = "stale";
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  EXPECT_EQ(Bind(pod, "n1"), "");
  EXPECT_EQ(writer.patches, 1);
  EXPECT_EQ(writer.annotations["ns/p"].count("hami.io/vgpu-mig-allocations"), 0U);
  EXPECT_EQ(writer.annotations["ns/p"]["hami.io/vgpu-node"], "n1");
  EXPECT_EQ(writer.bound["ns/p"], "n1");
}

TEST_F(ServiceTest, HamiNodeLockModeLocksTheNodeBeforeBinding) {
  options.hami_node_lock = true;
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  auto pod = PodBuilder("ns/p").Container(1, 4000).Build();
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  EXPECT_EQ(Bind(pod, "n1"), "");
  EXPECT_EQ(writer.locks, std::vector<std::string>{"n1"});
}

TEST_F(ServiceTest, FailedBindReleasesTheReservation) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  auto pod = PodBuilder("ns/p").Container(1, 32768).Build();
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  writer.fail_bind = true;
  EXPECT_EQ(Bind(pod, "n1"), "injected bind failure");
  EXPECT_FALSE(Holds("ns/p"));
  EXPECT_EQ(s.view.pending_reservations(), 0u);
}

// The case tessera started from, through the extender: one RTX PRO 6000 in MIG mode.
TEST_F(ServiceTest, MotivatingMigCaseThroughTheExtender) {
  auto& s = MakeSynced({NodeWith("node-a", {RtxPro6000Mig("GPU-mig")})});
  auto p1 = PodBuilder("default/p1").Container(2, 8000).MigMode().Build();
  auto p2 = PodBuilder("default/p2").Container(2, 8000).MigMode().Build();
  auto p3 = PodBuilder("default/p3").Container(2, 8000).MigMode().Build();
  ASSERT_EQ(Filter(p1, {"node-a"})["NodeNames"][0], "node-a");
  ASSERT_EQ(Bind(p1, "node-a"), "");
  ASSERT_EQ(Filter(p2, {"node-a"})["NodeNames"][0], "node-a");
  ASSERT_EQ(Bind(p2, "node-a"), "");
  Json r3 = Filter(p3, {"node-a"});
  EXPECT_TRUE(r3["NodeNames"].is_null());
  EXPECT_NE(r3["FailedNodes"]["node-a"].get<std::string>().find("CardInsufficientMemory"),
            std::string::npos)
      << r3.dump();
  // Four distinct 1g.24gb placements were written.
  std::set<std::string> placements;
  for (const auto& key : {"default/p1", "default/p2"}) {
    auto mig = codec::DecodeMigAllocations(writer.annotations[key]["hami.io/vgpu-mig-allocations"]);
    ASSERT_TRUE(mig.ok());
    for (const auto& m : *mig) {
      EXPECT_EQ(m.profile, "1g.24gb");
      placements.insert(std::to_string(m.placement.start));
    }
  }
  EXPECT_EQ(placements.size(), 4u);
  model::Pod gone = p1;
  gone.node_name = "node-a";
  s.view.DeletePod(PodJson(gone));
  EXPECT_EQ(Filter(p3, {"node-a"})["NodeNames"][0], "node-a");
}

// ---- webhook -----------------------------------------------------------------------------------

TEST_F(ServiceTest, WebhookWarnsOfARequestJustAboveAMigProfileOfTheCluster) {
  auto& s = MakeSynced({NodeWith("node-a", {testing::A100Mig("GPU-a")})});
  const auto near = PodBuilder("apps/llm").Container(1, 20000).Build();
  Json w = Json::parse(s.verbs.Webhook(testing_support::ReviewJson("apps", near).dump()));
  EXPECT_TRUE(w["response"]["allowed"].get<bool>()) << w.dump();
  ASSERT_EQ(w["response"]["warnings"].size(), 1U) << w.dump();
  const std::string warning = w["response"]["warnings"][0];
  EXPECT_NE(warning.find("ask at most 19968 MiB to fit 3g.20gb"), std::string::npos) << warning;
  EXPECT_NE(warning.find("NVIDIA A100-SXM4-40GB"), std::string::npos) << warning;
  // A pod that keeps to shared GPUs gets no MIG hint.
  const auto shared = PodBuilder("apps/shared")
                          .Annotation("nvidia.com/vgpu-mode", "hami-core")
                          .Container(1, 20000)
                          .Build();
  Json v = Json::parse(s.verbs.Webhook(testing_support::ReviewJson("apps", shared).dump()));
  EXPECT_FALSE(v["response"].contains("warnings")) << v.dump();
}

// ---- prioritize ---------------------------------------------------------------------------------

TEST_F(ServiceTest, PrioritizeScoresTheNodeFilterWouldChoose) {
  auto& s = MakeSynced(
      {NodeWith("n1", {SharingGpu("GPU-1", 8000)}), NodeWith("n2", {SharingGpu("GPU-2", 32768)})});
  auto pod = PodBuilder("ns/p").Container(1, 16000).Build();
  Json r = Json::parse(s.verbs.Prioritize(FilterBody(pod, {"n1", "n2"})));
  EXPECT_EQ(r, Json::parse(R"([{"Host":"n1","Score":0},{"Host":"n2","Score":10}])"));
  EXPECT_EQ(writer.patches, 0) << "prioritize reserves nothing";
}

// Without nodeCacheCapable kube-scheduler sends whole Node objects: the names come from them.
TEST_F(ServiceTest, PrioritizeReadsTheNamesOfNodeObjects) {
  auto& s = MakeSynced(
      {NodeWith("n1", {SharingGpu("GPU-1", 8000)}), NodeWith("n2", {SharingGpu("GPU-2", 32768)})});
  auto pod = PodBuilder("ns/p").Container(1, 16000).Build();
  Json items = Json::array();
  for (const char* name : {"n2", "n1"}) items.push_back({{"metadata", {{"name", name}}}});
  const std::string body =
      Json{{"Pod", PodJson(pod)}, {"Nodes", {{"items", items}}}, {"NodeNames", nullptr}}.dump();
  EXPECT_EQ(Json::parse(s.verbs.Prioritize(body)),
            Json::parse(R"([{"Host":"n2","Score":10},{"Host":"n1","Score":0}])"));
}

// kube-scheduler scores a pod after filtering it, while the filter's reservation stands: the
// reservation must not push the score away from the node the filter chose.
TEST_F(ServiceTest, PrioritizeAfterFilterScoresTheFiltersNode) {
  auto& s = MakeSynced(
      {NodeWith("n1", {SharingGpu("GPU-1", 16000)}), NodeWith("n2", {SharingGpu("GPU-2", 32768)})});
  auto pod = PodBuilder("ns/p").Container(1, 16000).Build();
  Json f = Filter(pod, {"n1", "n2"});
  ASSERT_EQ(f["NodeNames"].size(), 1U) << f;
  const std::string chosen = f["NodeNames"][0];
  // Counted against itself, the pod would no longer fit on a 16000 MiB GPU it fills.
  ASSERT_EQ(chosen, "n1") << "the test needs the filter to fill n1";
  Json r = Json::parse(s.verbs.Prioritize(FilterBody(pod, {"n1", "n2"})));
  EXPECT_EQ(r, Json::parse(R"([{"Host":"n1","Score":10},{"Host":"n2","Score":0}])"));
  // Scoring set the reservation aside and put it back: n1's GPU is still the pod's.
  Json other = Filter(PodBuilder("ns/q").Container(1, 1000).Build(), {"n1"});
  EXPECT_EQ(other["FailedNodes"]["n1"], "1/1 CardInsufficientMemory") << other;
}

// ---- as kube-scheduler calls them -------------------------------------------------------------

std::string ReadTestData(const std::string& name) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/e2e/testdata/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Bodies captured from a real kube-scheduler 1.36 (e2e/testdata): kubectl turned gpumem 8000
// into the quantity "8k", requests were defaulted from limits, and the pod carries fields we do
// not model. The extender must read them as sent.
TEST_F(ServiceTest, AnswersTheBodiesARealKubeSchedulerSends) {
  options.write_placement_in_bind = false;  // --write-placement=filter, HAMi's way
  auto& s = MakeSynced({NodeWith("node-a", {RtxPro6000Mig("GPU-mig")}),
                        NodeWith("node-b", {SharingGpu("GPU-1", 8000)})});
  const std::string filter = ReadTestData("kube-scheduler-filter-args.json");
  ASSERT_FALSE(filter.empty());
  Json r = Json::parse(s.verbs.Filter(filter));
  EXPECT_EQ(r["NodeNames"], Json::parse(R"(["node-a"])")) << r.dump();
  auto mig =
      codec::DecodeMigAllocations(writer.annotations["demo/p1"]["hami.io/vgpu-mig-allocations"]);
  ASSERT_TRUE(mig.ok());
  EXPECT_EQ(mig->size(), 2u);
  const std::string bind = ReadTestData("kube-scheduler-bind-args.json");
  EXPECT_EQ(Json::parse(s.verbs.Bind(bind))["Error"], "");
  EXPECT_EQ(writer.bound["demo/p1"], "node-a");
}

// Many filters and binds at once (TSan runs this): no GPU memory is ever booked twice.
TEST_F(ServiceTest, ConcurrentFiltersAndBindsNeverDoubleBook) {
  auto& s = MakeSynced(
      {NodeWith("n1", {SharingGpu("GPU-1", 32768)}), NodeWith("n2", {SharingGpu("GPU-2", 32768)})});
  std::atomic<int> scheduled{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 4; ++i) {
        auto pod = PodBuilder("ns/p" + std::to_string(t) + "-" + std::to_string(i))
                       .Container(1, 4096, 10)
                       .Build();
        Json r = Json::parse(s.verbs.Filter(FilterBody(pod, {"n1", "n2"})));
        if (r["NodeNames"].is_array() && r["NodeNames"].size() == 1) {
          Json b = Json::parse(s.verbs.Bind(BindBody(pod, r["NodeNames"][0])));
          if (b["Error"] == "") ++scheduled;
        }
        s.view.UpsertNode(NodeJson(NodeWith("n2", {SharingGpu("GPU-2", 32768)})));
      }
    });
  }
  for (auto& th : threads) th.join();
  // 2 GPUs x 32768 MiB / 4096 MiB = 16 pods fit, and exactly that many were placed.
  EXPECT_EQ(scheduled.load(), 16);
  s.view.WithState([](const state::ClusterState& st) {
    for (const auto* node : st.node_list()) {
      EXPECT_LE(node->usage[0].used_mem, 32768) << node->name;
    }
  });
}

}  // namespace
}  // namespace tessera::scheduler
