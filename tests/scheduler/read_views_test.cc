// The read views over the cluster view: /explain and the state's metric families (the /ui/state
// body: ui_state_test.cc; its ETag: tests/app/ui_test.cc).
#include "scheduler/read_views.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "scheduler/service_fixture.h"
#include "support/builders.h"
#include "support/k8s_json.h"

namespace tessera::scheduler {
namespace {

using codec::Json;
using testing::A100Mig;
using testing::NodeWith;
using testing::PodBuilder;
using testing::PodJson;
using testing::SharingGpu;
using testing_support::QuotaJson;
using testing_support::ServiceTest;

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
  s.view.UpsertPod(PodJson(running));
  model::Pod waiting = PodBuilder("ns/waiting").Container(1, 4000).Build();
  s.view.UpsertPod(PodJson(waiting));
  auto answer = s.reads.Explain("ns/waiting", true);
  ASSERT_EQ(answer.outcome, ExplainResult::Outcome::kOk) << answer.body;
  Json j = Json::parse(answer.body);
  EXPECT_FALSE(j["fits"].get<bool>());
  EXPECT_EQ(j["remedy"]["pods"], Json::parse(R"(["ns/running"])")) << answer.body;
  EXPECT_EQ(j["nodes"][0]["gpus"][0]["pods"], Json::parse(R"(["ns/running"])"));
  EXPECT_TRUE(Holds("ns/running"));  // the explanation's what-if left the state alone
  auto placed = s.reads.Explain("ns/running", false);
  EXPECT_EQ(placed.outcome, ExplainResult::Outcome::kOk);
  EXPECT_EQ(placed.body, "pod ns/running: placed on node n1\n");
  s.view.DeletePod(PodJson(waiting));
  EXPECT_EQ(s.reads.Explain("ns/waiting", false).outcome, ExplainResult::Outcome::kNotFound);
  EXPECT_EQ(s.reads.Explain("ns", false).outcome, ExplainResult::Outcome::kBadRequest);
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
  const std::string text = s.view.metrics().Render(s.reads.StateFamilies());
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

// The placeability gauge prices a stranded slice as the decisions do (docs/placement.md,
// "Stranded slices and churn"): once a MIG pod placed has left, for less. GPU-a holds a 4g.20gb
// and a 1g at slice 6, which strands slice 7. Both runs see the same pods, so the same demand
// mix and the same layout of GPU-a; in the second the pod on m2 leaves.
TEST_F(ServiceTest, ThePlaceabilityGaugePricesAStrandedSliceAsTheDecisionsDo) {
  const auto placeability_of_a = [&](bool other_leaves) {
    auto& s = MakeSynced({NodeWith("m1", {A100Mig("GPU-a")}), NodeWith("m2", {A100Mig("GPU-b")})});
    const model::Pod other = PodBuilder("ns/other").MigMode().Container(1, 4000).Build();
    EXPECT_EQ(Filter(other, {"m2"})["NodeNames"][0], "m2");
    if (other_leaves) s.view.DeletePod(PodJson(other));
    EXPECT_EQ(Filter(PodBuilder("ns/four").MigMode().Container(1, 19000, 50).Build(),
                     {"m1"})["NodeNames"][0],
              "m1");
    EXPECT_EQ(
        Filter(PodBuilder("ns/one").MigMode().Container(1, 4000).Build(), {"m1"})["NodeNames"][0],
        "m1");
    uint32_t occupied = 0;
    s.view.WithState([&](const state::ClusterState& state) {
      occupied = state.node("m1")->usage[0].layout.occupied;
    });
    EXPECT_EQ(occupied, 0b01001111U);  // 4g.20gb at 0-3, 1g at 6: slice 7 stranded
    const std::string text = s.view.metrics().Render(s.reads.StateFamilies());
    const std::string name =
        R"(tessera_gpu_placeability{node="m1",device_uuid="GPU-a",device_index="0"} )";
    const size_t at = text.find(name);
    EXPECT_NE(at, std::string::npos) << text;
    return at == std::string::npos ? 0.0 : std::stod(text.substr(at + name.size()));
  };
  const double whole = placeability_of_a(/*other_leaves=*/false);
  const double scaled = placeability_of_a(/*other_leaves=*/true);
  EXPECT_GT(scaled, whole + 1.0);  // a stranded slice is worth 10 GiB at its whole price
}

// What /metrics serves (the families serialized one at a time, each HAMi legacy twin after them)
// is, line for line, what serializing every family at once gives: the same families, the same
// values, the same legacy names.
TEST_F(ServiceTest, TheStateMetricsTextIsEveryFamilySerializedOneAtATime) {
  auto& s =
      MakeSynced({NodeWith("m1", {A100Mig("GPU-m")}), NodeWith("s1", {SharingGpu("GPU-s", 8000)}),
                  NodeWith("s2", {SharingGpu("GPU-t", 16000), SharingGpu("GPU-u", 16000)})});
  s.view.UpsertQuota(QuotaJson("ns", "gpu", {{"limits.nvidia.com/gpumem", 100000}}));
  ASSERT_EQ(
      Filter(PodBuilder("ns/mig").MigMode().Container(1, 4000).Build(), {"m1"})["NodeNames"][0],
      "m1");
  ASSERT_EQ(Filter(PodBuilder("ns/shared").Container(2, 2000, 10).Build(), {"s2"})["NodeNames"][0],
            "s2");
  clock.now += std::chrono::seconds(3);
  std::vector<prometheus::MetricFamily> families = s.reads.StateFamilies();
  const auto legacy = LegacyGpuUsageFamilies(families);
  families.insert(families.end(), legacy.begin(), legacy.end());
  const std::string all_at_once = prometheus::TextSerializer().Serialize(families);
  const std::string streamed = s.reads.StateMetricsText(true);
  EXPECT_EQ(streamed, all_at_once);
  EXPECT_NE(streamed.find("GPUDeviceMemoryAllocated{zone=\"vGPU\",nodeid=\"s2\""),
            std::string::npos)
      << streamed;
  EXPECT_NE(streamed.find("QuotaUsed{zone=\"vGPU\",quotanamespace=\"ns\""), std::string::npos);
  EXPECT_EQ(s.reads.StateMetricsText(false).find("GPUDevice"), std::string::npos);
  // Around it, the registry's own metrics and the extra families, as Render puts them.
  EXPECT_EQ(s.view.metrics().RenderWith(streamed, {}), s.view.metrics().Render(families));
}

// The Grafana dashboard in deploy/ is built on metrics tessera exports: every tessera_* and hami_*
// name its queries use appears on /metrics once the cluster has seen some work. The node agents'
// tessera_agent_* names are on the agents' /metrics, checked against AgentMetrics
// (tests/agent_runtime/agent_dashboard_test.cc).
TEST_F(ServiceTest, TheGrafanaDashboardQueriesOnlyExportedMetrics) {
  auto& s =
      MakeSynced({NodeWith("m1", {A100Mig("GPU-m")}), NodeWith("s1", {SharingGpu("GPU-s", 8000)})});
  s.view.UpsertQuota(QuotaJson("ns", "gpu", {{"limits.nvidia.com/gpumem", 100000}}));
  ASSERT_EQ(
      Filter(PodBuilder("ns/mig").MigMode().Container(1, 4000).Build(), {"m1"})["NodeNames"][0],
      "m1");
  ASSERT_EQ(Filter(PodBuilder("ns/shared").Container(1, 2000, 10).Build(), {"s1"})["NodeNames"][0],
            "s1");
  ASSERT_TRUE(
      Filter(PodBuilder("ns/huge").Container(1, 40000).Build(), {"s1"})["NodeNames"].is_null());
  const std::string text = s.view.metrics().Render(s.reads.StateFamilies());
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
        i = end;
        if (name.starts_with("tessera_agent_")) continue;
        ++names;
        EXPECT_NE(text.find("\n" + name), std::string::npos)
            << panel.at("title") << ": " << name << " is not exported";
      }
    }
  }
  EXPECT_GE(names, 15);
}

}  // namespace
}  // namespace tessera::scheduler
