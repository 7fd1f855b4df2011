#include "scheduler/extender_service.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "adapters/threads/thread_pool.h"
#include "core/codec/pod_devices.h"
#include "scheduler/service_fixture.h"
#include "support/builders.h"
#include "support/k8s_json.h"

namespace tessera::scheduler {
namespace {

using codec::Json;
using testing::A100Mig;
using testing::NodeJson;
using testing::NodeWith;
using testing::PodBuilder;
using testing::PodJson;
using testing::RtxPro6000Mig;
using testing::SharingGpu;
using testing_support::FakeWriter;
using testing_support::QuotaJson;
using testing_support::ReviewJson;
using testing_support::ServiceTest;

TEST_F(ServiceTest, FilterChoosesOneNodeReservesAndWritesThePlacement) {
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
  EXPECT_EQ(s.pending_reservations(), 1u);
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
    Json r = Json::parse(service->Filter(body));
    EXPECT_NE(r["Error"].get<std::string>().find("nested deeper than 128"), std::string::npos)
        << r.dump();
    Json p = Json::parse(service->Prioritize(body));
    EXPECT_TRUE(p.is_array() || p.is_object()) << p.dump();
  }
  const std::string review =
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"r1",)"
      R"("object":)" +
      pod_in_filter + "}}";
  Json w = Json::parse(service->Webhook(review));
  EXPECT_NE(w.dump().find("nested deeper than 128"), std::string::npos) << w.dump();
  // Still serving.
  const auto pod = PodBuilder("ns/ok").Container(1, 1000).Build();
  EXPECT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
}

TEST_F(ServiceTest, BindCreatesTheBindingAndMarksTheBindPhase) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  auto pod = PodBuilder("ns/p").Container(1, 4000).Build();
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  EXPECT_EQ(Bind(pod, "n1"), "");
  EXPECT_EQ(writer.bound["ns/p"], "n1");
  EXPECT_EQ(writer.annotations["ns/p"]["hami.io/bind-phase"], "allocating");
  EXPECT_EQ(writer.annotations["ns/p"]["hami.io/bind-time"], "1767225600");
  EXPECT_EQ(s.pending_reservations(), 0u);
  EXPECT_TRUE(Holds("ns/p"));
  EXPECT_TRUE(writer.locks.empty()) << "no HAMi node lock unless asked for";
}

TEST_F(ServiceTest, PlacementWrittenInBindTakesOnePatchAndNoneInFilter) {
  options.write_placement_in_bind = true;
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  auto pod = PodBuilder("ns/p").Container(1, 4000).Build();
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  EXPECT_EQ(writer.patches, 0) << "filter answers without an API round trip";
  EXPECT_TRUE(Holds("ns/p"));
  EXPECT_EQ(Bind(pod, "n1"), "");
  EXPECT_EQ(writer.patches, 1);
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
  writer.fail_patch = true;
  EXPECT_EQ(Bind(pod, "n1"), "injected patch failure");
  EXPECT_FALSE(Holds("ns/p"));
  EXPECT_TRUE(writer.bound.empty());
}

TEST_F(ServiceTest, HamiNodeLockModeLocksTheNodeBeforeBinding) {
  options.hami_node_lock = true;
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  auto pod = PodBuilder("ns/p").Container(1, 4000).Build();
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  EXPECT_EQ(Bind(pod, "n1"), "");
  EXPECT_EQ(writer.locks, std::vector<std::string>{"n1"});
}

TEST_F(ServiceTest, FailedAnnotationWriteReleasesTheReservation) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  writer.fail_patch = true;
  auto pod = PodBuilder("ns/p").Container(1, 32768).Build();
  Json r = Filter(pod, {"n1"});
  EXPECT_NE(r["Error"].get<std::string>().find("injected patch failure"), std::string::npos);
  EXPECT_TRUE(r["NodeNames"].is_null());
  EXPECT_FALSE(Holds("ns/p"));
  EXPECT_EQ(s.pending_reservations(), 0u);
  // The whole card is free again for the next pod.
  writer.fail_patch = false;
  EXPECT_EQ(Filter(PodBuilder("ns/q").Container(1, 32768).Build(), {"n1"})["NodeNames"][0], "n1");
}

TEST_F(ServiceTest, FailedBindReleasesTheReservation) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  auto pod = PodBuilder("ns/p").Container(1, 32768).Build();
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  writer.fail_bind = true;
  EXPECT_EQ(Bind(pod, "n1"), "injected bind failure");
  EXPECT_FALSE(Holds("ns/p"));
  EXPECT_EQ(s.pending_reservations(), 0u);
}

TEST_F(ServiceTest, UnboundReservationExpiresAfterTheTimeout) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  auto pod = PodBuilder("ns/p").Container(1, 32768).Build();
  s.UpsertPod(PodJson(pod));  // as the informer shows it, so its filter answer is kept
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  clock.now += std::chrono::seconds(29);
  EXPECT_EQ(s.ExpireReservations(), 0u);
  EXPECT_TRUE(Holds("ns/p"));
  clock.now += std::chrono::seconds(2);
  EXPECT_EQ(s.ExpireReservations(), 1u);
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
  EXPECT_EQ(s.ExpireReservations(), 0u);
  EXPECT_TRUE(Holds("ns/p"));
}

TEST_F(ServiceTest, NotSyncedAnswersWithAnErrorInsteadOfGuessing) {
  auto& s = Make();
  s.ReplaceNodes({NodeJson(NodeWith("n1", {SharingGpu("GPU-1")}))});
  Json r = Filter(PodBuilder("ns/p").Container(1, 1000).Build(), {"n1"});
  EXPECT_NE(r["Error"].get<std::string>().find("has not synced"), std::string::npos);
  std::string why;
  EXPECT_FALSE(s.Ready(&why));
  s.SetSynced(true);
  EXPECT_TRUE(s.Ready(&why));
}

TEST_F(ServiceTest, FollowerDoesNotServe) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  s.SetLeader(false);
  auto pod = PodBuilder("ns/p").Container(1, 1000).Build();
  Json r = Filter(pod, {"n1"});
  EXPECT_NE(r["Error"].get<std::string>().find("not the leader"), std::string::npos);
  EXPECT_EQ(writer.patches, 0);
  std::string why;
  EXPECT_FALSE(s.Ready(&why));
  EXPECT_EQ(why, "this replica is not the leader");
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
  s.SetSynced(true);
  EXPECT_NE(Json::parse(s.Filter("{"))["Error"].get<std::string>().find("invalid JSON"),
            std::string::npos);
  EXPECT_EQ(Json::parse(s.Filter(R"({"NodeNames":[]})"))["Error"], "extender args missing pod");
  EXPECT_NE(Json::parse(s.Bind("[]"))["Error"].get<std::string>(), "");
  EXPECT_EQ(Json::parse(s.Prioritize("nope")), Json::array());
  Json w = Json::parse(s.Webhook("{}"));
  EXPECT_FALSE(w["response"]["allowed"].get<bool>());
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
  s.DeletePod(PodJson(gone));
  EXPECT_EQ(Filter(p3, {"node-a"})["NodeNames"][0], "node-a");
}

TEST_F(ServiceTest, RestartRebuildsReservationsFromAnnotations) {
  auto& first = Make();
  const Json node = NodeJson(NodeWith("n1", {SharingGpu("GPU-1")}));
  first.ReplaceNodes({node});
  first.SetSynced(true);
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
  ExtenderService second(config::SchedulerConfig{}, options, second_writer, clocks);
  second.ReplaceNodes({node});
  second.ReplacePods({PodJson(bound), PodJson(unbound)});
  second.SetSynced(true);
  size_t held = 0;
  second.WithState([&](const state::ClusterState& st) { held = st.pods().size(); });
  EXPECT_EQ(held, 2u);
  EXPECT_EQ(second.pending_reservations(), 1u) << "the unbound one waits for its bind";
  // The GPU is full: nothing is booked twice.
  Json r = Json::parse(
      second.Filter(FilterBody(PodBuilder("ns/new").Container(1, 1000).Build(), {"n1"})));
  EXPECT_TRUE(r["NodeNames"].is_null()) << r.dump();
  // The bind of the pod filtered before the restart still works.
  EXPECT_EQ(Json::parse(second.Bind(BindBody(unbound, "n1")))["Error"], "");
}

TEST_F(ServiceTest, OlderPodEventDoesNotDropAFreshReservation) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  auto pod = PodBuilder("ns/p").Container(1, 32768).Build();
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  s.UpsertPod(PodJson(pod));  // the ADDED event, from before the annotations were written
  EXPECT_TRUE(Holds("ns/p"));
  EXPECT_EQ(s.pending_reservations(), 1u);
}

TEST_F(ServiceTest, FinishedOrReplacedPodsReleaseTheirDevices) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  auto pod = PodBuilder("ns/p").Container(1, 32768).Build();
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  ASSERT_EQ(Bind(pod, "n1"), "");
  pod.annotations = writer.annotations["ns/p"];
  pod.node_name = "n1";
  pod.phase = "Running";
  s.UpsertPod(PodJson(pod));
  EXPECT_TRUE(Holds("ns/p"));
  model::Pod replaced = pod;
  replaced.uid = "another-uid";
  replaced.annotations.clear();
  replaced.node_name.clear();
  replaced.phase = "Pending";
  s.UpsertPod(PodJson(replaced));
  EXPECT_FALSE(Holds("ns/p")) << "a new pod with the same name holds nothing yet";
  s.UpsertPod(PodJson(pod));
  EXPECT_TRUE(Holds("ns/p"));
  pod.phase = "Succeeded";
  s.UpsertPod(PodJson(pod));
  EXPECT_FALSE(Holds("ns/p"));
}

TEST_F(ServiceTest, RelistDropsPodsThatAreGone) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  auto pod = PodBuilder("ns/p").Container(1, 32768).Build();
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  ASSERT_EQ(Bind(pod, "n1"), "");
  s.ReplacePods({});
  EXPECT_FALSE(Holds("ns/p"));
}

TEST_F(ServiceTest, MalformedNodeDoesNotPoisonOthers) {
  auto& s = Make();
  model::Node bad = NodeWith("bad", {SharingGpu("GPU-B")});
  bad.annotations["hami.io/node-nvidia-register"] = "[{not json";
  Json garbage = {{"metadata", {{"name", 42}}}};
  s.ReplaceNodes({garbage, NodeJson(bad), NodeJson(NodeWith("good", {SharingGpu("GPU-G")}))});
  s.SetSynced(true);
  Json r = Filter(PodBuilder("ns/p").Container(1, 1000).Build(), {"bad", "good"});
  EXPECT_EQ(r["NodeNames"], Json::parse(R"(["good"])")) << r.dump();
  auto metrics = s.metrics().Render({});
  EXPECT_NE(metrics.find("tessera_decode_errors_total{kind=\"node\"} 1"), std::string::npos)
      << metrics;
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

TEST_F(ServiceTest, PrioritizeScoresTheNodeFilterWouldChoose) {
  auto& s = MakeSynced(
      {NodeWith("n1", {SharingGpu("GPU-1", 8000)}), NodeWith("n2", {SharingGpu("GPU-2", 32768)})});
  auto pod = PodBuilder("ns/p").Container(1, 16000).Build();
  Json r = Json::parse(s.Prioritize(FilterBody(pod, {"n1", "n2"})));
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
  EXPECT_EQ(Json::parse(s.Prioritize(body)),
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
  Json r = Json::parse(s.Prioritize(FilterBody(pod, {"n1", "n2"})));
  EXPECT_EQ(r, Json::parse(R"([{"Host":"n1","Score":10},{"Host":"n2","Score":0}])"));
  // Scoring set the reservation aside and put it back: n1's GPU is still the pod's.
  Json other = Filter(PodBuilder("ns/q").Container(1, 1000).Build(), {"n1"});
  EXPECT_EQ(other["FailedNodes"]["n1"], "1/1 CardInsufficientMemory") << other;
}

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
  auto& s = MakeSynced({NodeWith("node-a", {RtxPro6000Mig("GPU-mig")}),
                        NodeWith("node-b", {SharingGpu("GPU-1", 8000)})});
  const std::string filter = ReadTestData("kube-scheduler-filter-args.json");
  ASSERT_FALSE(filter.empty());
  Json r = Json::parse(s.Filter(filter));
  EXPECT_EQ(r["NodeNames"], Json::parse(R"(["node-a"])")) << r.dump();
  auto mig =
      codec::DecodeMigAllocations(writer.annotations["demo/p1"]["hami.io/vgpu-mig-allocations"]);
  ASSERT_TRUE(mig.ok());
  EXPECT_EQ(mig->size(), 2u);
  const std::string bind = ReadTestData("kube-scheduler-bind-args.json");
  EXPECT_EQ(Json::parse(s.Bind(bind))["Error"], "");
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
        Json r = Json::parse(s.Filter(FilterBody(pod, {"n1", "n2"})));
        if (r["NodeNames"].is_array() && r["NodeNames"].size() == 1) {
          Json b = Json::parse(s.Bind(BindBody(pod, r["NodeNames"][0])));
          if (b["Error"] == "") ++scheduled;
        }
        s.UpsertNode(NodeJson(NodeWith("n2", {SharingGpu("GPU-2", 32768)})));
      }
    });
  }
  for (auto& th : threads) th.join();
  // 2 GPUs x 32768 MiB / 4096 MiB = 16 pods fit, and exactly that many were placed.
  EXPECT_EQ(scheduled.load(), 16);
  s.WithState([](const state::ClusterState& st) {
    for (const auto* node : st.node_list()) {
      EXPECT_LE(node->usage[0].used_mem, 32768) << node->name;
    }
  });
}

// Issue 13: a pending pod the informer delivered is explained from a copy of the state: what
// holds the GPU, and which running pod's departure would let it in; once it is gone from the
// informer, it is unknown.
TEST_F(ServiceTest, ExplainNamesThePodWhoseDepartureAdmitsAPendingPod) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-0", 8000)})});
  model::Pod running = PodBuilder("ns/running").Container(1, 6000).Build();
  running.node_name = "n1";
  running.annotations["hami.io/vgpu-node"] = "n1";
  running.annotations["hami.io/bind-phase"] = "success";
  running.annotations["hami.io/vgpu-devices-allocated"] = "GPU-0,NVIDIA,6000,0:;";
  s.UpsertPod(PodJson(running));
  model::Pod waiting = PodBuilder("ns/waiting").Container(1, 4000).Build();
  s.UpsertPod(PodJson(waiting));
  auto answer = s.Explain("ns/waiting", true);
  ASSERT_EQ(answer.status, 200) << answer.body;
  Json j = Json::parse(answer.body);
  EXPECT_FALSE(j["fits"].get<bool>());
  EXPECT_EQ(j["remedy"]["pods"], Json::parse(R"(["ns/running"])")) << answer.body;
  EXPECT_EQ(j["nodes"][0]["gpus"][0]["pods"], Json::parse(R"(["ns/running"])"));
  EXPECT_TRUE(Holds("ns/running"));  // the explanation's what-if left the state alone
  auto placed = s.Explain("ns/running", false);
  EXPECT_EQ(placed.status, 200);
  EXPECT_EQ(placed.body, "pod ns/running: placed on node n1\n");
  s.DeletePod(PodJson(waiting));
  EXPECT_EQ(s.Explain("ns/waiting", false).status, 404);
  EXPECT_EQ(s.Explain("ns", false).status, 400);
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
  s.UpsertPod(PodJson(running));
  s.UpsertPod(PodJson(running));  // the informer resends it
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
  s.DeletePod(PodJson(running));
  r = Filter(PodBuilder("ns/next").Container(1, 1000).Build(), {"n1"});
  EXPECT_EQ(r["NodeNames"][0], "n1") << r.dump();
}

// ---- GPU quotas (ResourceQuota limits.nvidia.com/gpumem, limits.nvidia.com/gpucores) ----------

TEST_F(ServiceTest, QuotaHoldsTheThirdPodUntilOneIsDeleted) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1", 16000), SharingGpu("GPU-2", 16000)})});
  s.ReplaceQuotas({QuotaJson("team", "gpu", {{"limits.nvidia.com/gpumem", "16000"}})});
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
  Json w = Json::parse(s.Webhook(ReviewJson("team", p3).dump()));
  EXPECT_FALSE(w["response"]["allowed"].get<bool>());
  const std::string why = w["response"]["status"]["message"];
  EXPECT_NE(why.find("exceeding resource quota"), std::string::npos) << why;
  EXPECT_NE(why.find("8000 MiB asked, 0 MiB left"), std::string::npos) << why;
  // HAMi's quota metrics: use in MiB against the limit.
  std::vector<prometheus::MetricFamily> families;
  s.WithState([&](const state::ClusterState& st) { families = GpuUsageFamilies(st); });
  const std::string text = s.metrics().Render(families);
  EXPECT_NE(text.find("hami_resource_quota_used{zone=\"vGPU\",namespace=\"team\",quota_name="
                      "\"nvidia.com/gpumem\",limit=\"16000\"} 16000"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("hami_resource_quota_limit{zone=\"vGPU\",namespace=\"team\",quota_name="
                      "\"nvidia.com/gpumem\"} 16000"),
            std::string::npos);
  // A deleted pod gives its share back.
  s.DeletePod(PodJson(p1));
  EXPECT_EQ(Filter(p3, {"n1"})["NodeNames"][0], "n1");
  Json allowed = Json::parse(s.Webhook(ReviewJson("elsewhere", p3).dump()));
  EXPECT_TRUE(allowed["response"]["allowed"].get<bool>()) << allowed.dump();
}

// Issue 13: tessera's own gauges on /metrics, from the state under the lock.
TEST_F(ServiceTest, PlacementMetricsDescribeSlicesStrandingReasonsAndReservationAge) {
  auto& s =
      MakeSynced({NodeWith("m1", {A100Mig("GPU-m")}), NodeWith("s1", {SharingGpu("GPU-s", 8000)})});
  ASSERT_EQ(
      Filter(PodBuilder("ns/three").MigMode().Container(1, 19000).Build(), {"m1"})["NodeNames"][0],
      "m1");
  ASSERT_EQ(
      Filter(PodBuilder("ns/whole-cores").Container(1, 2000, 100).Build(), {"s1"})["NodeNames"][0],
      "s1");
  Json refused = Filter(PodBuilder("ns/huge").Container(1, 40000).Build(), {"s1"});
  // More than the GPU holds: unresolvable by preemption.
  ASSERT_EQ(refused["FailedAndUnresolvableNodes"]["s1"], "1/1 CardInsufficientMemory")
      << refused.dump();
  clock.now += std::chrono::seconds(7);
  const std::string text = s.metrics().Render(s.StateFamilies());
  auto has = [&](const std::string& line) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  };
  const std::string gpu = R"({node="m1",device_uuid="GPU-m",device_index="0"})";
  has("tessera_gpu_free_memory_slices" + gpu + " 4");  // a 3g.20gb takes 4 of 8
  has("tessera_gpu_largest_free_run_slices" + gpu + " 4");
  has("tessera_gpu_largest_placeable_profile_bytes" + gpu + " " +
      std::to_string(19968LL * 1024 * 1024));  // 4g.20gb or 3g.20gb
  has("tessera_gpu_placeability" + gpu + " ");
  has("tessera_cluster_mig_fragmentation_ratio 0\n");
  has("tessera_cluster_sharing_stranded_memory_ratio 1\n");  // all cores of GPU-s are taken
  has("tessera_filter_unschedulable_reasons_total{reason=\"CardInsufficientMemory\"} 1");
  has("tessera_oldest_pending_reservation_age_seconds 7\n");
  EXPECT_EQ(text.find("tessera_gpu_free_memory_slices{node=\"s1\""), std::string::npos)
      << "shared GPUs have no slices";
}

// The Grafana dashboard in deploy/ is built on metrics tessera exports: every tessera_* and hami_*
// name its queries use appears on /metrics once the cluster has seen some work.
TEST_F(ServiceTest, TheGrafanaDashboardQueriesOnlyExportedMetrics) {
  auto& s =
      MakeSynced({NodeWith("m1", {A100Mig("GPU-m")}), NodeWith("s1", {SharingGpu("GPU-s", 8000)})});
  s.UpsertQuota(QuotaJson("ns", "gpu", {{"limits.nvidia.com/gpumem", 100000}}));
  ASSERT_EQ(
      Filter(PodBuilder("ns/mig").MigMode().Container(1, 4000).Build(), {"m1"})["NodeNames"][0],
      "m1");
  ASSERT_EQ(Filter(PodBuilder("ns/shared").Container(1, 2000, 10).Build(), {"s1"})["NodeNames"][0],
            "s1");
  ASSERT_TRUE(
      Filter(PodBuilder("ns/huge").Container(1, 40000).Build(), {"s1"})["NodeNames"].is_null());
  const std::string text = s.metrics().Render(s.StateFamilies());
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/deploy/grafana/tessera-dashboard.json");
  ASSERT_TRUE(in) << "deploy/grafana/tessera-dashboard.json";
  const Json dashboard = Json::parse(in);
  int names = 0;
  for (const Json& panel : dashboard.at("panels")) {
    for (const Json& target : panel.at("targets")) {
      const std::string expr = target.at("expr");
      for (size_t i = 0; i < expr.size();) {
        const bool starts =
            (expr.compare(i, 8, "tessera_") == 0 || expr.compare(i, 5, "hami_") == 0) &&
            (i == 0 ||
             !(std::isalnum(static_cast<unsigned char>(expr[i - 1])) || expr[i - 1] == '_'));
        if (!starts) {
          ++i;
          continue;
        }
        size_t end = i;
        while (end < expr.size() &&
               (std::isalnum(static_cast<unsigned char>(expr[end])) || expr[end] == '_'))
          ++end;
        const std::string name = expr.substr(i, end - i);
        ++names;
        EXPECT_NE(text.find("\n" + name), std::string::npos)
            << panel.at("title") << ": " << name << " is not exported";
        i = end;
      }
    }
  }
  EXPECT_GE(names, 15);
}

TEST_F(ServiceTest, QuotaUpdatesAndDeletesApplyAtOnce) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1", 16000)})});
  s.UpsertQuota(QuotaJson("team", "gpu", {{"limits.nvidia.com/gpucores", 20}}));
  auto pod = PodBuilder("team/p").Container(1, 1000, 30).Build();
  EXPECT_EQ(Filter(pod, {"n1"})["FailedNodes"]["n1"], "1/1 ResourceQuotaNotFit");
  s.UpsertQuota(QuotaJson("team", "gpu", {{"limits.nvidia.com/gpucores", 40}}));
  EXPECT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  s.UpsertQuota(QuotaJson("team", "gpu", {{"limits.nvidia.com/gpucores", 0}}));
  auto second = PodBuilder("team/q").Container(1, 1000, 10).Build();
  EXPECT_EQ(Filter(second, {"n1"})["FailedNodes"]["n1"], "1/1 ResourceQuotaNotFit")
      << "a limit of 0 blocks every GPU pod";
  s.DeleteQuota(QuotaJson("team", "gpu", Json::object()));
  EXPECT_EQ(Filter(second, {"n1"})["NodeNames"][0], "n1");
}

TEST_F(ServiceTest, MalformedQuotaIsSkippedAndNamedWithoutTouchingOthers) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1", 16000)})});
  s.ReplaceQuotas({Json::array(), QuotaJson("bad", "gpu", {{"limits.nvidia.com/gpumem", "lots"}}),
                   QuotaJson("team", "gpu", {{"limits.nvidia.com/gpumem", 1000}})});
  auto bad = PodBuilder("bad/p").Container(1, 8000).Build();
  auto team = PodBuilder("team/p").Container(1, 8000).Build();
  EXPECT_EQ(Filter(bad, {"n1"})["NodeNames"][0], "n1") << "an unreadable limit limits nothing";
  EXPECT_EQ(Filter(team, {"n1"})["FailedNodes"]["n1"], "1/1 ResourceQuotaNotFit");
}

// ---- node liveness and the node label selector ------------------------------------------------

TEST_F(ServiceTest, NodeWithoutAllocatableGpusGetsNoPodsAfterTheGracePeriod) {
  options.node_liveness_grace = std::chrono::seconds(60);
  model::Node node = NodeWith("n1", {SharingGpu("GPU-1")});
  node.allocatable["nvidia.com/gpu"] = "10";
  auto& s = MakeSynced({node});
  auto pod = PodBuilder("ns/p").Container(1, 1000).Build();
  EXPECT_EQ(s.CheckNodeLiveness(), 0u);
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  // The device plugin goes away: the kubelet drops the allocatable count to 0.
  node.allocatable["nvidia.com/gpu"] = "0";
  s.UpsertNode(NodeJson(node));
  clock.now += std::chrono::seconds(59);
  EXPECT_EQ(s.CheckNodeLiveness(), 0u);
  auto second = PodBuilder("ns/q").Container(1, 1000).Build();
  EXPECT_EQ(Filter(second, {"n1"})["NodeNames"][0], "n1") << "within the grace period";
  clock.now += std::chrono::seconds(2);
  EXPECT_EQ(s.CheckNodeLiveness(), 1u);
  auto third = PodBuilder("ns/r").Container(1, 1000).Build();
  Json r = Filter(third, {"n1"});
  // Evicting pods does not bring the device plugin back: no preemption there.
  EXPECT_EQ(r["FailedAndUnresolvableNodes"]["n1"],
            "node unregistered: no live device plugin (allocatable nvidia.com/gpu is 0)")
      << r.dump();
  EXPECT_TRUE(Holds("ns/p")) << "pods already there keep their devices";
  // The plugin is back: the node takes pods again at once.
  node.allocatable["nvidia.com/gpu"] = "10";
  s.UpsertNode(NodeJson(node));
  EXPECT_EQ(Filter(third, {"n1"})["NodeNames"][0], "n1");
  EXPECT_EQ(s.CheckNodeLiveness(), 0u);
}

TEST_F(ServiceTest, LivenessCheckCanBeTurnedOff) {
  options.node_liveness_grace = std::chrono::seconds(0);
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});  // no allocatable at all
  clock.now += std::chrono::hours(1);
  EXPECT_EQ(s.CheckNodeLiveness(), 0u);
  EXPECT_EQ(Filter(PodBuilder("ns/p").Container(1, 1000).Build(), {"n1"})["NodeNames"][0], "n1");
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
  s.UpsertNode(NodeJson(out));
  auto second = PodBuilder("ns/q").Container(1, 1000).Build();
  EXPECT_EQ(Filter(second, {"out"})["NodeNames"][0], "out");
}

}  // namespace
}  // namespace tessera::scheduler
