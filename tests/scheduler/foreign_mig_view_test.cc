// tessera serve's view of the MIG instances tessera did not create: read from a node's
// tessera.io/foreign-mig-instances on each node event (no per-request rebuild), kept out of the
// filter's placements, named in its reasons, and counted in /metrics.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/codec/foreign_mig.h"
#include "core/model/annotations.h"
#include "scheduler/service_fixture.h"
#include "scheduler/service_metrics.h"
#include "support/builders.h"
#include "support/k8s_json.h"

namespace tessera::scheduler {
namespace {

using codec::Json;
using testing::NodeJson;
using testing::NodeWith;
using testing::PodBuilder;
using testing::RtxPro6000Mig;
using testing_support::ServiceTest;

model::Node MigNode(const std::vector<uint32_t>& foreign_starts) {
  model::Node n = NodeWith("n1", {RtxPro6000Mig("GPU-r")});
  std::vector<codec::ForeignMigInstance> foreign;
  foreign.reserve(foreign_starts.size());
  for (uint32_t s : foreign_starts) foreign.push_back({"GPU-r", "1g.24gb", {s, 3}, s + 1});
  if (!foreign.empty()) {
    n.annotations[std::string(model::annotations::kForeignMigInstances)] =
        codec::EncodeForeignMigInstances(foreign);
  }
  return n;
}

TEST_F(ServiceTest, ForeignInstancesFollowTheNodesAnnotation) {
  auto& s = MakeSynced({MigNode({0, 3, 6, 9})});
  const auto pod = PodBuilder("default/p").MigMode().Container(1, 8000).Build();
  Json r = Filter(pod, {"n1"});
  EXPECT_TRUE(r["NodeNames"].is_null()) << r.dump();
  // No eviction frees them, so kube-scheduler's preemption is not asked to try there.
  EXPECT_EQ(r["FailedAndUnresolvableNodes"]["n1"], "1/1 CardMigSlicesHeldByForeignInstances")
      << r.dump();
  std::vector<prometheus::MetricFamily> families;
  s.view.WithState([&](const state::ClusterState& st) { families = GpuUsageFamilies(st); });
  std::string text = s.view.metrics().Render(families);
  EXPECT_NE(text.find("tessera_foreign_mig_instances{node=\"n1\"} 4"), std::string::npos) << text;
  EXPECT_EQ(text.find("hami_node_gpu_mig_instance_info{"), std::string::npos) << text;

  // The agent found one gone: the node event frees its slices.
  s.view.UpsertNode(NodeJson(MigNode({0, 3, 6})));
  r = Filter(pod, {"n1"});
  ASSERT_EQ(r["NodeNames"].size(), 1U) << r.dump();
  EXPECT_EQ(Bind(pod, "n1"), "");
  s.view.WithState([&](const state::ClusterState& st) {
    const auto& instances = st.node("n1")->instances[0];
    ASSERT_EQ(instances.size(), 4U);
    for (const auto& inst : instances) {
      EXPECT_EQ(inst.foreign, inst.placement.start != 9) << inst.placement.start;
    }
  });
  s.view.WithState([&](const state::ClusterState& st) { families = GpuUsageFamilies(st); });
  text = s.view.metrics().Render(families);
  EXPECT_NE(text.find("tessera_foreign_mig_instances{node=\"n1\"} 3"), std::string::npos) << text;
}

}  // namespace
}  // namespace tessera::scheduler
