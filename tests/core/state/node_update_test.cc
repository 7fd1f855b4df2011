// A node updated with its registration unchanged keeps the decoded devices; every other
// change still takes effect, and the state equals one built from scratch.
#include <gtest/gtest.h>

#include <string>

#include "core/model/annotations.h"
#include "core/state/cluster_state.h"
#include "support/builders.h"
#include "support/reservations.h"

namespace tessera::state {
namespace {

namespace ann = model::annotations;
using testing::NodeWith;
using testing::RtxPro6000Mig;
using testing::SharedGpuPod;
using testing::SharingGpu;

model::Node WithAnnotation(model::Node node, std::string_view key, const std::string& value) {
  node.annotations[std::string(key)] = value;
  return node;
}

// What a scheduler reads of a node, compared field by field.
void ExpectSameNode(const NodeState& got, const NodeState& want) {
  EXPECT_EQ(got.unusable_reason, want.unusable_reason);
  ASSERT_EQ(got.devices.size(), want.devices.size());
  for (size_t i = 0; i < got.devices.size(); ++i) {
    EXPECT_EQ(got.devices[i].uuid, want.devices[i].uuid);
    EXPECT_EQ(got.devices[i].total_mem_mib, want.devices[i].total_mem_mib);
    EXPECT_EQ(got.devices[i].healthy, want.devices[i].healthy);
  }
  EXPECT_EQ(got.mig_models.size(), want.mig_models.size());
  EXPECT_EQ(got.types_upper, want.types_upper);
  EXPECT_EQ(got.any_mig, want.any_mig);
  EXPECT_EQ(got.all_mig, want.all_mig);
  EXPECT_EQ(got.cordoned, want.cordoned);
  EXPECT_EQ(got.usage, want.usage);
  EXPECT_EQ(got.cpu_allocatable_milli, want.cpu_allocatable_milli);
}

TEST(NodeUpdateTest, AHeartbeatKeepsTheDecodedDevicesAndTheSpec) {
  ClusterState s{config::SchedulerConfig{}};
  const model::Node node = NodeWith("n", {SharingGpu("GPU-0"), SharingGpu("GPU-1")});
  s.UpsertNode(node);
  s.AddPod(SharedGpuPod("ns/a", "n", "GPU-1", 1000, 10));
  const model::GpuDevice* first = s.node("n")->devices.data();
  const int spec = s.node("n")->spec_id;

  s.UpsertNode(WithAnnotation(node, ann::kNodeHandshake, "Reported 2026-12-03T09:00:00Z"));
  const NodeState* n = s.node("n");
  EXPECT_EQ(n->devices.data(), first) << "the registration was decoded again";
  EXPECT_EQ(n->spec_id, spec);
  EXPECT_EQ(n->usage[1].used_mem, 1000);  // its pods are applied again
  EXPECT_NE(n->node.Annotation(std::string(ann::kNodeHandshake)), nullptr);
}

TEST(NodeUpdateTest, AChangedRegistrationIsDecodedAgain) {
  ClusterState s{config::SchedulerConfig{}};
  s.UpsertNode(NodeWith("n", {SharingGpu("GPU-0", 32768)}));
  const int spec = s.node("n")->spec_id;
  s.UpsertNode(NodeWith("n", {SharingGpu("GPU-0", 16384)}));
  ASSERT_EQ(s.node("n")->devices.size(), 1U);
  EXPECT_EQ(s.node("n")->devices[0].total_mem_mib, 16384);
  EXPECT_NE(s.node("n")->spec_id, spec);

  s.UpsertNode(NodeWith("n", {SharingGpu("GPU-0", 16384), RtxPro6000Mig("GPU-1")}));
  EXPECT_TRUE(s.node("n")->any_mig);
  EXPECT_EQ(s.node("n")->mig_models.size(), 2U);
}

TEST(NodeUpdateTest, ABadRegistrationStaysBadUntilItChanges) {
  ClusterState s{config::SchedulerConfig{}};
  model::Node bad;
  bad.name = "n";
  bad.annotations[std::string(ann::kNodeRegister)] = "[{not json";
  s.UpsertNode(bad);
  const std::string reason = s.node("n")->unusable_reason;
  EXPECT_NE(reason.find("node unusable: "), std::string::npos) << reason;
  s.UpsertNode(WithAnnotation(bad, ann::kNodeHandshake, "Requesting"));
  EXPECT_EQ(s.node("n")->unusable_reason, reason);

  s.UpsertNode(NodeWith("n", {SharingGpu("GPU-0")}));
  EXPECT_TRUE(s.node("n")->usable());
  model::Node gone = NodeWith("n", {});
  gone.annotations.erase(std::string(ann::kNodeRegister));
  s.UpsertNode(gone);
  EXPECT_EQ(s.node("n")->unusable_reason, "node unregistered");
  EXPECT_TRUE(s.node("n")->devices.empty());
}

TEST(NodeUpdateTest, ABadPairScoreThenAGoodOneMatchesAFreshState) {
  const model::Node good = NodeWith("n", {SharingGpu("GPU-0"), SharingGpu("GPU-1")});
  const model::Node bad_score = WithAnnotation(good, ann::kNodePairScore, "{broken");
  ClusterState s{config::SchedulerConfig{}};
  s.UpsertNode(good);
  s.UpsertNode(bad_score);
  EXPECT_FALSE(s.node("n")->usable());
  EXPECT_TRUE(s.node("n")->devices.empty());
  s.UpsertNode(bad_score);  // the same registration, still a bad score: still unusable
  EXPECT_FALSE(s.node("n")->usable());
  EXPECT_TRUE(s.node("n")->devices.empty());

  s.UpsertNode(good);
  ClusterState fresh{config::SchedulerConfig{}};
  fresh.UpsertNode(good);
  ExpectSameNode(*s.node("n"), *fresh.node("n"));
  EXPECT_EQ(s.node("n")->spec_id, fresh.node("n")->spec_id);
}

TEST(NodeUpdateTest, CordonAndBlockStillApplyWithAnUnchangedRegistration) {
  ClusterState s{config::SchedulerConfig{}};
  const model::Node node = NodeWith("n", {SharingGpu("GPU-0"), SharingGpu("GPU-1")});
  s.UpsertNode(node);
  const int open_spec = s.node("n")->spec_id;

  s.UpsertNode(WithAnnotation(node, ann::kDeviceCordon, "GPU-1"));
  EXPECT_EQ(s.node("n")->cordoned.count("GPU-1"), 1U);
  EXPECT_NE(s.node("n")->spec_id, open_spec) << "a cordoned GPU answers pods differently";

  s.SetNodeBlocked("n", "node not live");
  EXPECT_EQ(s.node("n")->unusable_reason, "node not live");
  s.UpsertNode(WithAnnotation(node, ann::kNodeHandshake, "Requesting"));
  EXPECT_EQ(s.node("n")->unusable_reason, "node not live");
  s.SetNodeBlocked("n", "");
  s.UpsertNode(node);
  EXPECT_TRUE(s.node("n")->usable());
  EXPECT_TRUE(s.node("n")->cordoned.empty());
  EXPECT_EQ(s.node("n")->spec_id, open_spec);
}

TEST(NodeUpdateTest, EveryUpdateLeavesTheStateAFreshBuildWouldHave) {
  const model::Node sharing = NodeWith("n", {SharingGpu("GPU-0"), SharingGpu("GPU-1")});
  const model::Node mig = NodeWith("n", {RtxPro6000Mig("GPU-0"), SharingGpu("GPU-1")});
  model::Node with_cpu = sharing;
  with_cpu.allocatable["cpu"] = "8";
  const model::Node steps[] = {
      sharing,
      WithAnnotation(sharing, ann::kNodeHandshake, "Requesting"),
      with_cpu,
      WithAnnotation(sharing, ann::kDeviceCordon, "GPU-0"),
      mig,
      WithAnnotation(mig, ann::kNodeHandshake, "Reported"),
      WithAnnotation(mig, ann::kNodePairScore, "not json"),
      mig,
      sharing,
  };
  ClusterState updated{config::SchedulerConfig{}};
  updated.AddPod(SharedGpuPod("ns/a", "n", "GPU-1", 2000, 20));
  int index = 0;
  for (const model::Node& step : steps) {
    SCOPED_TRACE("step " + std::to_string(index++));
    updated.UpsertNode(step);
    ClusterState fresh{config::SchedulerConfig{}};
    fresh.AddPod(SharedGpuPod("ns/a", "n", "GPU-1", 2000, 20));
    fresh.UpsertNode(step);
    ExpectSameNode(*updated.node("n"), *fresh.node("n"));
  }
}

}  // namespace
}  // namespace tessera::state
