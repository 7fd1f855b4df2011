// The agents' GPU usage (tessera.io/gpu-usage) in tessera serve: kept in its own table beside
// the scheduling state, so a change of it alone moves no stamp, signature or equivalence class;
// a malformed value is ignored and never makes the node unusable; /ui/state carries it.

#include <gtest/gtest.h>

#include <string>

#include "core/model/annotations.h"
#include "scheduler/service_fixture.h"
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

const std::string kUsage(model::annotations::kGpuUsage);

model::Node UsageNode(const std::string* usage) {
  model::Node n = NodeWith("n1", {RtxPro6000Mig("GPU-r")});
  if (usage != nullptr) n.annotations[kUsage] = *usage;
  return n;
}

struct Stamps {
  uint64_t change_stamp = 0;
  uint64_t signature = 0;
  int spec_id = 0;
  int state_class = 0;
  bool has_usage_annotation = false;
  bool usable = false;
};

Stamps Read(SchedulerService& s) {
  Stamps out;
  s.view.WithState([&](const state::ClusterState& st) {
    const state::NodeState* n = st.node("n1");
    ASSERT_NE(n, nullptr);
    out.change_stamp = n->change_stamp;
    out.signature = n->signature;
    out.spec_id = n->spec_id;
    out.state_class = n->state_class;
    out.has_usage_annotation = n->node.Annotation(kUsage) != nullptr;
    out.usable = n->usable();
  });
  return out;
}

TEST_F(ServiceTest, AUsageOnlyChangeLeavesTheSchedulingStateAsItIs) {
  const std::string first = "1767225600;GPU-r=-,8000|0:-,8000|3:-,-";
  auto& s = MakeSynced({UsageNode(&first)});
  const Stamps before = Read(s);
  EXPECT_FALSE(before.has_usage_annotation);  // the state never holds it
  EXPECT_TRUE(before.usable);
  const auto ui_before = s.reads.UiState();

  const std::string second = "1767225660;GPU-r=-,20000|0:-,20000|3:-,-";
  s.view.UpsertNode(NodeJson(UsageNode(&second)));
  const Stamps after = Read(s);
  EXPECT_EQ(after.change_stamp, before.change_stamp);
  EXPECT_EQ(after.signature, before.signature);
  EXPECT_EQ(after.spec_id, before.spec_id);
  EXPECT_EQ(after.state_class, before.state_class);
  EXPECT_FALSE(after.has_usage_annotation);

  // ... while /ui/state shows the new reading, under a new version.
  const auto ui_after = s.reads.UiState();
  EXPECT_EQ(ui_after.version, ui_before.version);
  EXPECT_NE(ui_after.usage_version, ui_before.usage_version);
  const Json body = Json::parse(*ui_after.json);
  EXPECT_EQ(body["usage"]["n1"][0], 1767225660);
  EXPECT_EQ(body["usage"]["n1"][1][0][0], "GPU-r");
  EXPECT_TRUE(body["usage"]["n1"][1][0][1].is_null());  // unknown, not 0
  EXPECT_EQ(body["usage"]["n1"][1][0][2], 20000);
  EXPECT_EQ(body["usage"]["n1"][1][0][3][0], Json::parse("[0, null, 20000]"));
  EXPECT_EQ(body["usage"]["n1"][1][0][3][1], Json::parse("[3, null, null]"));

  // A change the state reads still applies, usage or not.
  model::Node labelled = UsageNode(&second);
  labelled.labels["x"] = "y";
  s.view.UpsertNode(NodeJson(labelled));
  EXPECT_NE(Read(s).change_stamp, before.change_stamp);
}

TEST_F(ServiceTest, AMalformedUsageIsIgnoredAndTheNodeStillSchedules) {
  const std::string bad = "yesterday;GPU-r=lots";
  auto& s = MakeSynced({UsageNode(&bad)});
  EXPECT_TRUE(Read(s).usable);
  EXPECT_EQ(s.view.gpu_usage().malformed(), 1U);
  const Json body = Json::parse(*s.reads.UiState().json);
  EXPECT_TRUE(body["usage"].is_object());
  EXPECT_FALSE(body["usage"].contains("n1"));
  const auto pod = PodBuilder("default/p").MigMode().Container(1, 8000).Build();
  EXPECT_EQ(Filter(pod, {"n1"})["NodeNames"].size(), 1U);

  // Fixed by the agent's next write; the node's usage goes when the node does.
  const std::string good = "1767225600;GPU-r=-,0";
  s.view.UpsertNode(NodeJson(UsageNode(&good)));
  EXPECT_TRUE(Json::parse(*s.reads.UiState().json)["usage"].contains("n1"));
  s.view.DeleteNode(NodeJson(UsageNode(&good)));
  EXPECT_EQ(s.view.gpu_usage().size(), 0U);
  EXPECT_FALSE(Json::parse(*s.reads.UiState().json)["usage"].contains("n1"));
}

}  // namespace
}  // namespace tessera::scheduler
