// Issue 37: the scheduler survives what a network sends it. Bind goes only where the pod's last
// filter said; one request cannot make unbounded work; every map keyed by what clients send is
// bounded and measured.
#include "scheduler/scheduler_service.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/extender/extender_args_decoder.h"
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

model::Pod CpuPod(const std::string& key) {
  model::Pod pod = PodBuilder(key).Build();
  pod.containers.push_back(testing::ContainerBuilder("c").Limit("cpu", "1").Build());
  return pod;
}

std::string BindBodyWith(const model::Pod& pod, const std::string& uid, const std::string& node) {
  return Json{{"PodName", pod.name}, {"PodNamespace", pod.ns}, {"PodUID", uid}, {"Node", node}}
      .dump();
}

// ---- bind only what was filtered ------------------------------------------------------------

TEST_F(ServiceTest, BindWithoutThePodUidIsRefusedNamingTheField) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  const auto pod = PodBuilder("ns/p").Container(1, 4000).Build();
  ASSERT_EQ(Filter(pod, {"n1"})["NodeNames"][0], "n1");
  const int patches = writer.patches;
  for (const std::string& body :
       {BindBodyWith(pod, "", "n1"),
        Json{{"PodName", "p"}, {"PodNamespace", "ns"}, {"Node", "n1"}}.dump()}) {
    const std::string error = Json::parse(s.verbs.Bind(body))["Error"];
    EXPECT_EQ(error, "ExtenderBindingArgs.PodUID: missing") << body;
  }
  EXPECT_EQ(writer.patches, patches);
  EXPECT_TRUE(writer.bound.empty());
  EXPECT_EQ(Bind(pod, "n1"), "") << "the pod's own bind still goes through";
}

TEST_F(ServiceTest, BindToANodeTheFilterDidNotOfferIsRefusedWithoutWrites) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")}), NodeWith("n2", {})});
  // A pass-through pod may go to any node its filter passed through, and only there.
  const model::Pod cpu = CpuPod("ns/cpu");
  ASSERT_EQ(Filter(cpu, {"n1", "n2"})["NodeNames"], Json::parse(R"(["n1","n2"])"));
  EXPECT_EQ(Bind(cpu, "n3"),
            "node n3 was not offered by the last filter of pod ns/cpu; it must be filtered again");
  // A GPU pod to the node of its placement only, and only under the uid that was filtered.
  const auto gpu = PodBuilder("ns/gpu").Container(1, 4000).Build();
  ASSERT_EQ(Filter(gpu, {"n1"})["NodeNames"][0], "n1");
  const std::string other_uid =
      Json::parse(s.verbs.Bind(BindBodyWith(gpu, "forged", "n1")))["Error"];
  EXPECT_EQ(other_uid,
            "pod ns/gpu (uid forged) is not the pod its last filter was for; it must be filtered "
            "again");
  const int patches = writer.patches;
  EXPECT_TRUE(writer.bound.empty());
  EXPECT_EQ(writer.annotations["ns/gpu"].count("hami.io/bind-phase"), 0u);
  EXPECT_EQ(Bind(cpu, "n2"), "");
  EXPECT_EQ(Bind(gpu, "n1"), "");
  EXPECT_EQ(writer.patches, patches) << "the GPU pod's bind-phase rides on its Binding";
  EXPECT_EQ(writer.annotations["ns/gpu"]["hami.io/bind-phase"], "allocating");
}

TEST_F(ServiceTest, BindOfAPodNeverFilteredHereIsRefusedWithoutWrites) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-0")})});
  // Running on n1, as the informer shows it: it holds devices there, but no filter offered n1.
  model::Pod running = PodBuilder("ns/running").Container(1, 6000).Build();
  running.node_name = "n1";
  running.annotations["hami.io/vgpu-node"] = "n1";
  running.annotations["hami.io/bind-phase"] = "success";
  running.annotations["hami.io/vgpu-devices-allocated"] = "GPU-0,NVIDIA,6000,0:;";
  s.view.UpsertPod(PodJson(running));
  EXPECT_EQ(Bind(running, "n1"),
            "pod ns/running has no filter answer here (never filtered by this replica, or too "
            "long ago); it must be filtered again");
  EXPECT_EQ(Bind(CpuPod("ns/never"), "n1").find("pod ns/never has no filter answer"), 0u);
  EXPECT_EQ(writer.patches, 0);
  EXPECT_TRUE(writer.bound.empty());
  EXPECT_TRUE(Holds("ns/running"));
}

TEST_F(ServiceTest, BindOfABoundPodIsAnsweredWithoutWriting) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")}), NodeWith("n2", {})});
  const auto pod = PodBuilder("ns/p").Container(1, 4000).Build();
  ASSERT_EQ(Filter(pod, {"n1", "n2"})["NodeNames"][0], "n1");
  ASSERT_EQ(Bind(pod, "n1"), "");
  const int patches = writer.patches;
  const auto phase = writer.annotations["ns/p"];
  writer.bound.clear();
  // kube-scheduler retrying a bind that went through: success, and bind-phase is not rewritten.
  EXPECT_EQ(Bind(pod, "n1"), "");
  EXPECT_EQ(Bind(pod, "n2"), "pod ns/p is already bound to node n1, not n2");
  EXPECT_EQ(writer.patches, patches);
  EXPECT_EQ(writer.annotations["ns/p"], phase);
  EXPECT_TRUE(writer.bound.empty());

  // Bound as the informer shows it (another tessera process did the bind): the same.
  const model::Pod cpu = CpuPod("ns/cpu");
  ASSERT_EQ(Filter(cpu, {"n1", "n2"})["NodeNames"].size(), 2u);
  model::Pod bound = cpu;
  bound.node_name = "n2";
  s.view.UpsertPod(PodJson(bound));
  EXPECT_EQ(Bind(cpu, "n2"), "");
  EXPECT_EQ(Bind(cpu, "n1"), "pod ns/cpu is already bound to node n2, not n1");
  EXPECT_TRUE(writer.bound.empty());
  EXPECT_EQ(writer.patches, patches);
}

TEST_F(ServiceTest, AFilterThatPlacesThePodNowhereWithdrawsItsEarlierOffer) {
  MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  const model::Pod cpu = CpuPod("ns/p");
  ASSERT_EQ(Filter(cpu, {"n1"})["NodeNames"][0], "n1");
  // The same pod again, now asking for more than any GPU holds.
  model::Pod big = PodBuilder("ns/p").Container(1, 90000).Build();
  ASSERT_TRUE(Filter(big, {"n1"})["NodeNames"].is_null());
  EXPECT_EQ(Bind(big, "n1").find("pod ns/p has no filter answer"), 0u);
  EXPECT_TRUE(writer.bound.empty());
}

// ---- no unbounded work from one request ----------------------------------------------------

std::string NamesBody(const model::Pod& pod, size_t count, const std::string& first) {
  std::string body =
      R"({"Pod":)" + PodJson(pod).dump() + R"(,"Nodes":null,"NodeNames":[")" + first + "\"";
  body.reserve(body.size() + count * 12);
  for (size_t i = 1; i < count; ++i) body += ",\"x" + std::to_string(i) + "\"";
  return body + "]}";
}

TEST_F(ServiceTest, MoreCandidateNodesThanTheLimitAreRefusedBeforeAnyWork) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")}), NodeWith("n2", {})});
  // Two nodes known: the limit is its floor.
  ASSERT_EQ(s.verbs.candidate_limit(), ExtenderVerbs::kMinCandidateLimit);
  const auto pod = PodBuilder("ns/p").Container(1, 4000).Build();
  const std::map<std::string, size_t> before = s.view.ClientKeyedEntries();
  const std::string too_many =
      "ExtenderArgs.NodeNames: more than 1000 nodes, the most this scheduler takes in one request";
  EXPECT_EQ(Json::parse(s.verbs.Filter(NamesBody(pod, 1001, "n1")))["Error"], too_many);
  EXPECT_EQ(Json::parse(s.verbs.Prioritize(NamesBody(pod, 1001, "n1"))), Json::array());
  // A million names that no cluster has: the same answer, and nothing of it kept.
  const std::string flood = NamesBody(pod, 1000000, "n1");
  ASSERT_GT(flood.size(), 8u << 20);
  EXPECT_EQ(Json::parse(s.verbs.Filter(flood))["Error"], too_many);
  EXPECT_EQ(s.view.ClientKeyedEntries(), before);
  EXPECT_FALSE(Holds("ns/p"));
  EXPECT_LE(ExtenderVerbs::DecodeBuffersRetainedOnThisThread(),
            extender::ExtenderArgsDecoder::kMaxRetainedCapacity)
      << "the flood's buffers are freed after it";
  // Node objects count the same.
  Json items = Json::array();
  for (int i = 0; i < 1001; ++i) items.push_back(NodeJson(NodeWith("o" + std::to_string(i), {})));
  const Json objects{{"Pod", PodJson(pod)}, {"Nodes", {{"items", items}}}};
  EXPECT_EQ(Json::parse(s.verbs.Filter(objects.dump()))["Error"],
            "ExtenderArgs.Nodes.items: more than 1000 nodes, the most this scheduler takes in one "
            "request");
  // Up to the limit, names the cluster view does not know are "node unregistered".
  const Json at_limit = Json::parse(s.verbs.Filter(NamesBody(pod, 1000, "n1")));
  EXPECT_EQ(at_limit["NodeNames"], Json::parse(R"(["n1"])")) << at_limit["Error"];
}

TEST_F(ServiceTest, TheCandidateLimitIsTwiceTheKnownNodes) {
  std::vector<model::Node> nodes;
  for (int i = 0; i < 700; ++i) nodes.push_back(NodeWith("n" + std::to_string(i), {}));
  auto& s = MakeSynced(nodes);
  EXPECT_EQ(s.verbs.candidate_limit(), 1400u);
  s.view.DeleteNode(NodeJson(nodes.back()));
  EXPECT_EQ(s.verbs.candidate_limit(), 1398u);
  const model::Pod cpu = CpuPod("ns/cpu");
  EXPECT_EQ(Json::parse(s.verbs.Filter(NamesBody(cpu, 1398, "n0")))["NodeNames"].size(), 1398u);
  EXPECT_NE(Json::parse(s.verbs.Filter(NamesBody(cpu, 1399, "n0")))["Error"], "");
}

// ---- every map keyed by client input is bounded ---------------------------------------------

// 600 pods no informer ever showed, in 600 namespaces: placed, refused and passed through, never
// bound. Once no filter has named them for the reservation timeout, the housekeeping pass has
// forgotten them all, and /ui's string table is back to what the cluster needs.
TEST_F(ServiceTest, PodsOnlyFiltersNamedAreForgottenAfterTheReservationTimeout) {
  std::vector<model::GpuDevice> gpus;
  for (uint32_t i = 0; i < 32; ++i) {
    gpus.push_back(SharingGpu("GPU-" + std::to_string(i), 32768, 0, i));
  }
  auto& s = MakeSynced({NodeWith("n1", gpus)});
  (void)s.reads.UiState();
  const std::map<std::string, size_t> baseline = s.view.ClientKeyedEntries();
  for (int i = 0; i < 600; ++i) {
    const std::string key = "ns-" + std::to_string(i) + "/p";
    if (i < 300) {
      ASSERT_EQ(Filter(PodBuilder(key).Container(1, 100).Build(), {"n1", "n2"})["NodeNames"][0],
                "n1");
    } else if (i < 450) {
      ASSERT_TRUE(
          Filter(PodBuilder(key).Container(1, 90000).Build(), {"n1"})["NodeNames"].is_null());
    } else {
      ASSERT_EQ(Filter(CpuPod(key), {"n1", "n2"})["NodeNames"].size(), 2u);
    }
    if (i % 100 == 99) (void)s.reads.UiState();  // someone watches /ui meanwhile
  }
  const std::map<std::string, size_t> flooded = s.view.ClientKeyedEntries();
  EXPECT_EQ(flooded.at("unbound"), baseline.at("unbound") + 600);
  EXPECT_EQ(flooded.at("filter_only"), 600u);
  EXPECT_EQ(flooded.at("filter_answers"), 450u);
  EXPECT_EQ(flooded.at("waiting"), 150u);
  EXPECT_EQ(flooded.at("refused"), 150u);
  EXPECT_EQ(flooded.at("passthrough"), 150u);
  EXPECT_EQ(flooded.at("filter_answer_names"), 2u) << "one list, shared";
  EXPECT_GT(flooded.at("ui_strings"), baseline.at("ui_strings") + 290);

  clock.now += options.reservation_timeout - std::chrono::seconds(1);
  EXPECT_EQ(s.housekeeping.ExpireReservations(), 0u);
  EXPECT_EQ(s.view.ClientKeyedEntries(), flooded) << "named within the timeout: kept";
  clock.now += std::chrono::seconds(1);
  EXPECT_EQ(s.housekeeping.ExpireReservations(), 300u);
  (void)s.reads.UiState();
  EXPECT_EQ(s.view.ClientKeyedEntries(), baseline);
  EXPECT_EQ(s.view.pending_reservations(), 0u);
  const std::string metrics = s.view.metrics().Render(s.reads.StateFamilies());
  EXPECT_NE(metrics.find("tessera_client_keyed_entries{map=\"filter_only\"} 0\n"),
            std::string::npos)
      << metrics;
}

TEST_F(ServiceTest, PodsOnlyFiltersNamedAreCappedLeastRecentlyNamedFirst) {
  options.max_filter_only_pods = 100;
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  const std::map<std::string, size_t> baseline = s.view.ClientKeyedEntries();
  auto refused = [](int i) {
    return PodBuilder("ns/p" + std::to_string(i)).Container(1, 90000).Build();
  };
  for (int i = 0; i < 250; ++i) ASSERT_TRUE(Filter(refused(i), {"n1"})["NodeNames"].is_null());
  ASSERT_TRUE(Filter(refused(0), {"n1"})["NodeNames"].is_null());  // p0 named again: newest
  const std::map<std::string, size_t> capped = s.view.ClientKeyedEntries();
  for (const char* map : {"filter_only", "unbound", "waiting", "refused"}) {
    EXPECT_EQ(capped.at(map), baseline.at(map) + 100) << map;
  }
  EXPECT_EQ(s.reads.Explain("ns/p0", false).outcome, ExplainResult::Outcome::kOk);
  EXPECT_EQ(s.reads.Explain("ns/p249", false).outcome, ExplainResult::Outcome::kOk);
  EXPECT_EQ(s.reads.Explain("ns/p150", false).outcome, ExplainResult::Outcome::kNotFound)
      << "the least recently named went first";
}

TEST_F(ServiceTest, PodsTheFeedShowsAreKeptUntilTheFeedDeletesThem) {
  auto& s = MakeSynced({NodeWith("n1", {SharingGpu("GPU-1")})});
  const std::map<std::string, size_t> baseline = s.view.ClientKeyedEntries();
  const model::Pod waiting = PodBuilder("ns/waiting").Container(1, 90000).Build();
  const model::Pod cpu = CpuPod("ns/cpu");
  s.view.UpsertPod(PodJson(waiting));
  s.view.UpsertPod(PodJson(cpu));
  ASSERT_TRUE(Filter(waiting, {"n1"})["NodeNames"].is_null());
  ASSERT_EQ(Filter(cpu, {"n1"})["NodeNames"].size(), 1u);
  clock.now += std::chrono::hours(1);
  s.housekeeping.ExpireReservations();
  std::map<std::string, size_t> kept = s.view.ClientKeyedEntries();
  EXPECT_EQ(kept.at("filter_only"), 0u);
  EXPECT_EQ(kept.at("waiting"), 1u);
  EXPECT_EQ(kept.at("refused"), 1u);
  EXPECT_EQ(kept.at("filter_answers"), 1u);
  EXPECT_EQ(kept.at("passthrough"), 1u);
  EXPECT_EQ(Bind(cpu, "n1"), "") << "its answer outlived the timeout";
  // A pod the filter named before the informer showed it is the feed's once shown.
  const model::Pod late = PodBuilder("ns/late").Container(1, 90000).Build();
  ASSERT_TRUE(Filter(late, {"n1"})["NodeNames"].is_null());
  EXPECT_EQ(s.view.ClientKeyedEntries().at("filter_only"), 1u);
  s.view.UpsertPod(PodJson(late));
  EXPECT_EQ(s.view.ClientKeyedEntries().at("filter_only"), 0u);
  for (const model::Pod& pod : {waiting, cpu, late}) s.view.DeletePod(PodJson(pod));
  EXPECT_EQ(s.view.ClientKeyedEntries(), baseline);
}

}  // namespace
}  // namespace tessera::scheduler
