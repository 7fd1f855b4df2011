#include "core/codec/k8s_objects.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::codec {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

Json Parse(const char* text) { return Json::parse(text); }

// --- Pods ------------------------------------------------------------------------------------

TEST(DecodePodTest, ReadsMetadataSpecAndStatus) {
  auto pod = DecodePod(Parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "gpu-pod", "namespace": "team-a", "uid": "u-1",
                 "resourceVersion": "42",
                 "annotations": {"hami.io/vgpu-node": "node-1"},
                 "labels": {"app": "train"}},
    "spec": {"nodeName": "node-1", "schedulerName": "hami-scheduler",
             "containers": [{"name": "main", "image": "cuda",
                             "resources": {"limits": {"nvidia.com/gpu": "1",
                                                      "nvidia.com/gpumem": "3000"},
                                           "requests": {"cpu": "500m"}}}]},
    "status": {"phase": "Running"}
  })"));
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_EQ(pod->name, "gpu-pod");
  EXPECT_EQ(pod->ns, "team-a");
  EXPECT_EQ(pod->Key(), "team-a/gpu-pod");
  EXPECT_EQ(pod->uid, "u-1");
  EXPECT_EQ(pod->resource_version, "42");
  EXPECT_THAT(pod->annotations, ElementsAre(Pair("hami.io/vgpu-node", "node-1")));
  EXPECT_THAT(pod->labels, ElementsAre(Pair("app", "train")));
  EXPECT_EQ(pod->node_name, "node-1");
  EXPECT_EQ(pod->scheduler_name, "hami-scheduler");
  EXPECT_EQ(pod->phase, "Running");
  EXPECT_FALSE(pod->deleting);
  EXPECT_THAT(pod->init_containers, IsEmpty());
  ASSERT_EQ(pod->containers.size(), 1u);
  EXPECT_EQ(pod->containers[0].name, "main");
  EXPECT_THAT(pod->containers[0].limits,
              ElementsAre(Pair("nvidia.com/gpu", "1"), Pair("nvidia.com/gpumem", "3000")));
  EXPECT_THAT(pod->containers[0].requests, ElementsAre(Pair("cpu", "500m")));
  EXPECT_FALSE(pod->containers[0].privileged);
}

TEST(DecodePodTest, MissingNamespaceIsDefault) {
  auto pod = DecodePod(Parse(R"({"metadata": {"name": "p"}})"));
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_EQ(pod->ns, "default");
  EXPECT_THAT(pod->containers, IsEmpty());
}

// spec.priority, what preemption compares; absent is 0, as kube-scheduler counts it.
TEST(DecodePodTest, ReadsThePriority) {
  auto pod = DecodePod(Parse(R"({"metadata": {"name": "p"}, "spec": {"priority": -5}})"));
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_EQ(pod->priority, -5);
  pod = DecodePod(Parse(R"({"metadata": {"name": "p"}, "spec": {"priority": 2000001000}})"));
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_EQ(pod->priority, 2000001000);
  EXPECT_EQ(DecodePod(Parse(R"({"metadata": {"name": "p"}})")).value().priority, 0);
  auto wide = DecodePod(Parse(R"({"metadata": {"name": "p"}, "spec": {"priority": 4294967296}})"));
  ASSERT_FALSE(wide.ok());
  EXPECT_THAT(wide.error().message, ::testing::HasSubstr("spec.priority"));
  EXPECT_FALSE(
      DecodePod(Parse(R"({"metadata": {"name": "p"}, "spec": {"priority": "high"}})")).ok());
}

// metadata.creationTimestamp, kept as written (RFC 3339 text sorts as the time does).
TEST(DecodePodTest, ReadsTheCreationTimestamp) {
  auto pod = DecodePod(
      Parse(R"({"metadata": {"name": "p", "creationTimestamp": "2026-12-06T10:00:00Z"}})"));
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_EQ(pod->created, "2026-12-06T10:00:00Z");
  auto bad = DecodePod(Parse(R"({"metadata": {"name": "p", "creationTimestamp": 5}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, ::testing::HasSubstr("creationTimestamp"));
}

// status.nominatedNodeName: where kube-scheduler's preemption made room for the pod.
TEST(DecodePodTest, ReadsTheNominatedNode) {
  auto pod = DecodePod(Parse(
      R"({"metadata": {"name": "p"}, "status": {"phase": "Pending", "nominatedNodeName": "n1"}})"));
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_EQ(pod->nominated_node, "n1");
  EXPECT_EQ(DecodePod(Parse(R"({"metadata": {"name": "p"}})")).value().nominated_node, "");
  auto bad = DecodePod(Parse(R"({"metadata": {"name": "p"}, "status": {"nominatedNodeName": 3}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, ::testing::HasSubstr("nominatedNodeName"));
}

// The controlling owner's kind and uid: only the reference marked controller counts.
TEST(DecodePodTest, ReadsTheControllingOwnersKindAndUid) {
  auto pod = DecodePod(Parse(R"({"metadata": {"name": "p", "ownerReferences": [
      {"kind": "Node", "name": "n", "uid": "node-uid"},
      {"kind": "ReplicaSet", "name": "rs", "uid": "rs-uid", "controller": true}]}})"));
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_EQ(pod->controller_kind, "ReplicaSet");
  EXPECT_EQ(pod->controller_uid, "rs-uid");
  auto unowned = DecodePod(Parse(
      R"({"metadata": {"name": "p", "ownerReferences": [{"kind": "Job", "controller": false}]}})"));
  ASSERT_TRUE(unowned.ok()) << unowned.error().message;
  EXPECT_EQ(unowned->controller_kind, "");
  auto bad = DecodePod(Parse(R"({"metadata": {"name": "p", "ownerReferences": {"kind": "Job"}}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, ::testing::HasSubstr("Pod default/p: metadata.ownerReferences"));
}

TEST(DecodePodDisruptionBudgetTest, ReadsTheSelectorAndTheAllowance) {
  auto b = DecodePodDisruptionBudget(Parse(R"({
    "metadata": {"name": "db", "namespace": "data"},
    "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"},
      "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["canary"]}]}},
    "status": {"disruptionsAllowed": 1}})"));
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->Key(), "data/db");
  EXPECT_FALSE(b->no_selector);
  EXPECT_THAT(b->match_labels, ElementsAre(Pair("app", "db")));
  ASSERT_EQ(b->match_expressions.size(), 1U);
  EXPECT_EQ(b->match_expressions[0].op, model::LabelRequirement::Operator::kNotIn);
  EXPECT_THAT(b->match_expressions[0].values, ElementsAre("canary"));
  EXPECT_EQ(b->disruptions_allowed, 1);
  EXPECT_TRUE(b->Selects("data", {{"app", "db"}}));
}

TEST(DecodePodDisruptionBudgetTest, WithoutASelectorItSelectsNothing) {
  auto b = DecodePodDisruptionBudget(Parse(R"({"metadata": {"name": "x", "namespace": "n"}})"));
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_TRUE(b->no_selector);
  EXPECT_EQ(b->disruptions_allowed, 0);
  auto empty = DecodePodDisruptionBudget(
      Parse(R"({"metadata": {"name": "x", "namespace": "n"}, "spec": {"selector": {}}})"));
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->no_selector);  // {} selects every pod of the namespace
}

TEST(DecodePodDisruptionBudgetTest, MalformedFieldsAreNamed) {
  auto error = [](const char* text) {
    auto b = DecodePodDisruptionBudget(Parse(text));
    return b.ok() ? std::string("ok") : b.error().message;
  };
  EXPECT_THAT(error(R"({"metadata": {"name": "x"}, "spec": {"selector": 3}})"),
              ::testing::HasSubstr("spec.selector: expected an object"));
  EXPECT_THAT(error(R"({"metadata": {"name": "x"}, "spec": {"selector": {"matchExpressions":
                [{"key": "a", "operator": "Near"}]}}})"),
              ::testing::HasSubstr("matchExpressions[0].operator"));
  EXPECT_THAT(error(R"({"metadata": {"name": "x"}, "status": {"disruptionsAllowed": -1}})"),
              ::testing::HasSubstr("disruptionsAllowed"));
  EXPECT_THAT(error(R"({"metadata": {"name": "x"}, "spec": {"selector": {"matchExpressions":
                [{"key": "a", "operator": "In", "values": [1]}]}}})"),
              ::testing::HasSubstr("values: expected strings"));
}

TEST(DecodePodTest, KeepsInitContainersSeparateAndInOrder) {
  auto pod = DecodePod(Parse(R"({"metadata": {"name": "p"}, "spec": {
    "initContainers": [{"name": "i0"}, {"name": "i1"}],
    "containers": [{"name": "c0"}]}})"));
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  ASSERT_EQ(pod->init_containers.size(), 2u);
  EXPECT_EQ(pod->init_containers[0].name, "i0");
  EXPECT_EQ(pod->init_containers[1].name, "i1");
  ASSERT_EQ(pod->containers.size(), 1u);
  EXPECT_EQ(pod->containers[0].name, "c0");
}

TEST(DecodePodTest, UnnamedContainersGetTheirListNameAndPosition) {
  auto pod = DecodePod(Parse(R"({"metadata": {"name": "p"}, "spec": {
    "initContainers": [{}], "containers": [{"name": "a"}, {}]}})"));
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_EQ(pod->init_containers[0].name, "initContainers-0");
  EXPECT_EQ(pod->containers[1].name, "containers-1");
}

TEST(DecodePodTest, NumericQuantitiesKeepTheirJsonText) {
  auto pod = DecodePod(Parse(R"({"metadata": {"name": "p"}, "spec": {"containers": [
    {"name": "c", "resources": {"limits": {"nvidia.com/gpu": 2, "nvidia.com/gpucores": 0.5}}}]}})"));
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_THAT(pod->containers[0].limits,
              ElementsAre(Pair("nvidia.com/gpu", "2"), Pair("nvidia.com/gpucores", "0.5")));
}

TEST(DecodePodTest, NumericAndBooleanAnnotationsKeepTheirJsonText) {
  auto pod = DecodePod(Parse(R"({"metadata": {"name": "p",
    "annotations": {"nvidia.com/numa-bind": true, "hami.io/vgpu-time": 1705054796}}})"));
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_THAT(pod->annotations, ElementsAre(Pair("hami.io/vgpu-time", "1705054796"),
                                            Pair("nvidia.com/numa-bind", "true")));
}

TEST(DecodePodTest, ReadsPrivilegedFromTheSecurityContext) {
  auto pod = DecodePod(Parse(R"({"metadata": {"name": "p"}, "spec": {"containers": [
    {"name": "a", "securityContext": {"privileged": true}},
    {"name": "b", "securityContext": {"privileged": false}},
    {"name": "c", "securityContext": {}}]}})"));
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_TRUE(pod->containers[0].privileged);
  EXPECT_FALSE(pod->containers[1].privileged);
  EXPECT_FALSE(pod->containers[2].privileged);
}

// HAMi-core is not preloaded where CUDA_DISABLE_CONTROL parses as true (Go's ParseBool).
TEST(DecodePodTest, ReadsCudaDisableControlFromTheEnvironment) {
  auto pod = DecodePod(Parse(R"({"metadata": {"name": "p"}, "spec": {"containers": [
    {"name": "a", "env": [{"name": "X", "value": "1"}, {"name": "CUDA_DISABLE_CONTROL", "value": "true"}]},
    {"name": "b", "env": [{"name": "CUDA_DISABLE_CONTROL", "value": "1"}]},
    {"name": "c", "env": [{"name": "CUDA_DISABLE_CONTROL", "value": "yes"}]},
    {"name": "d", "env": [{"name": "CUDA_DISABLE_CONTROL", "valueFrom": {}}]},
    {"name": "e", "env": "not a list"},
    {"name": "f"}]}})"));
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_TRUE(pod->containers[0].cuda_disable_control);
  EXPECT_TRUE(pod->containers[1].cuda_disable_control);
  EXPECT_FALSE(pod->containers[2].cuda_disable_control);
  EXPECT_FALSE(pod->containers[3].cuda_disable_control);
  EXPECT_FALSE(pod->containers[4].cuda_disable_control);
  EXPECT_FALSE(pod->containers[5].cuda_disable_control);
}

TEST(DecodePodTest, DeletionTimestampMarksThePodDeleting) {
  auto pod = DecodePod(
      Parse(R"({"metadata": {"name": "p", "deletionTimestamp": "2026-08-21T06:20:39Z"}})"));
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_TRUE(pod->deleting);
}

TEST(DecodePodTest, NullDeletionTimestampIsNotDeleting) {
  auto pod = DecodePod(Parse(R"({"metadata": {"name": "p", "deletionTimestamp": null}})"));
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_FALSE(pod->deleting);
}

TEST(DecodePodTest, ReadsInitContainerStatusesWithExitCodes) {
  auto pod = DecodePod(Parse(R"({"metadata": {"name": "p"}, "status": {"phase": "Pending",
    "initContainerStatuses": [
      {"name": "i0", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
      {"name": "i1", "state": {"terminated": {"exitCode": 2}}},
      {"name": "i2", "state": {"running": {"startedAt": "2026-08-21T06:20:39Z"}}},
      "ignored"]}})"));
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_EQ(pod->phase, "Pending");
  ASSERT_EQ(pod->init_container_statuses.size(), 3u);
  EXPECT_EQ(pod->init_container_statuses[0].name, "i0");
  EXPECT_TRUE(pod->init_container_statuses[0].terminated);
  EXPECT_EQ(pod->init_container_statuses[0].exit_code, 0);
  EXPECT_TRUE(pod->init_container_statuses[1].terminated);
  EXPECT_EQ(pod->init_container_statuses[1].exit_code, 2);
  EXPECT_EQ(pod->init_container_statuses[2].name, "i2");
  EXPECT_FALSE(pod->init_container_statuses[2].terminated);
}

TEST(DecodePodTest, MatchesKeysCaseInsensitively) {
  auto pod = DecodePod(Parse(R"({"Metadata": {"Name": "p", "Namespace": "ns"},
    "Spec": {"NodeName": "n", "Containers": [{"Name": "c",
      "Resources": {"Limits": {"nvidia.com/gpu": "1"}}}]}})"));
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_EQ(pod->Key(), "ns/p");
  EXPECT_EQ(pod->node_name, "n");
  ASSERT_EQ(pod->containers.size(), 1u);
  EXPECT_THAT(pod->containers[0].limits, ElementsAre(Pair("nvidia.com/gpu", "1")));
}

TEST(DecodePodTest, InvalidPodIsAnErrorNamingTheField) {
  struct Case {
    const char* name;
    const char* json;
    const char* want;
  };
  const std::vector<Case> cases = {
      {"not an object", "[]", "Pod: expected an object"},
      {"no metadata", R"({"spec": {}})", "Pod: metadata missing"},
      {"metadata not an object", R"({"metadata": "p"})", "Pod: metadata missing"},
      {"no name", R"({"metadata": {}})", "Pod.metadata.name: missing"},
      {"name a number", R"({"metadata": {"name": 1}})",
       "Pod.metadata.name: expected a string, got 1"},
      {"namespace a number", R"({"metadata": {"name": "p", "namespace": 1}})",
       "Pod.metadata.namespace: expected a string, got 1"},
      {"annotations a list", R"({"metadata": {"name": "p", "annotations": []}})",
       "Pod.metadata.annotations: expected an object"},
      {"label value an object", R"({"metadata": {"name": "p", "labels": {"a": {}}}})",
       "Pod.metadata.labels[\"a\"]: expected a string, got {}"},
      {"spec not an object", R"({"metadata": {"name": "p"}, "spec": []})",
       "Pod default/p: spec: expected an object"},
      {"nodeName a number", R"({"metadata": {"name": "p"}, "spec": {"nodeName": 1}})",
       "Pod default/p: spec.nodeName: expected a string, got 1"},
      {"containers an object", R"({"metadata": {"name": "p"}, "spec": {"containers": {}}})",
       "Pod default/p: spec.containers: expected an array"},
      {"container not an object", R"({"metadata": {"name": "p"}, "spec": {"containers": [1]}})",
       "Pod default/p: spec.containers[0]: expected an object"},
      {"resources a list",
       R"({"metadata": {"name": "p"}, "spec": {"containers": [{"resources": []}]}})",
       "Pod default/p: spec.containers[0].resources: expected an object"},
      {"limits a list",
       R"({"metadata": {"name": "p"}, "spec": {"initContainers": [{"resources": {"limits": []}}]}})",
       "Pod default/p: spec.initContainers[0].resources.limits: expected an object"},
      {"quantity a bool",
       R"({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c",
         "resources": {"requests": {"nvidia.com/gpu": true}}}]}})",
       "Pod default/p: spec.containers[0].resources.requests[\"nvidia.com/gpu\"]: expected a "
       "quantity, got true"},
      {"privileged a string",
       R"({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c",
         "securityContext": {"privileged": "yes"}}]}})",
       "Pod default/p: spec.containers[0].securityContext.privileged: expected true or false, "
       "got \"yes\""},
      {"phase a number", R"({"metadata": {"name": "p"}, "status": {"phase": 1}})",
       "Pod default/p: status.phase: expected a string, got 1"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto pod = DecodePod(Parse(c.json));
    ASSERT_FALSE(pod.ok());
    EXPECT_EQ(pod.error().message, c.want);
  }
}

// --- Nodes -----------------------------------------------------------------------------------

TEST(DecodeNodeTest, ReadsMetadataAndAllocatable) {
  auto node = DecodeNode(Parse(R"({"kind": "Node",
    "metadata": {"name": "node-1", "resourceVersion": "7",
                 "annotations": {"hami.io/node-handshake": "Requesting_2026-08-21 06:20:39"},
                 "labels": {"gpu": "on"}},
    "status": {"allocatable": {"nvidia.com/gpu": "10", "cpu": 16}}})"));
  ASSERT_TRUE(node.ok()) << node.error().message;
  EXPECT_EQ(node->name, "node-1");
  EXPECT_EQ(node->resource_version, "7");
  EXPECT_THAT(node->annotations,
              ElementsAre(Pair("hami.io/node-handshake", "Requesting_2026-08-21 06:20:39")));
  EXPECT_THAT(node->labels, ElementsAre(Pair("gpu", "on")));
  EXPECT_THAT(node->allocatable, ElementsAre(Pair("cpu", "16"), Pair("nvidia.com/gpu", "10")));
}

TEST(DecodeNodeTest, IgnoresANamespace) {
  auto node = DecodeNode(Parse(R"({"metadata": {"name": "n", "namespace": 5}})"));
  ASSERT_TRUE(node.ok()) << node.error().message;
  EXPECT_EQ(node->name, "n");
}

TEST(DecodeNodeTest, InvalidNodeIsAnErrorNamingTheField) {
  struct Case {
    const char* name;
    const char* json;
    const char* want;
  };
  const std::vector<Case> cases = {
      {"not an object", "\"node\"", "Node: expected an object"},
      {"no metadata", "{}", "Node: metadata missing"},
      {"no name", R"({"metadata": {"uid": "x"}})", "Node.metadata.name: missing"},
      {"annotation value a list",
       R"({"metadata": {"name": "n", "annotations": {"hami.io/node-nvidia-register": []}}})",
       "Node.metadata.annotations[\"hami.io/node-nvidia-register\"]: expected a string, got []"},
      {"allocatable a list", R"({"metadata": {"name": "n"}, "status": {"allocatable": []}})",
       "Node n: status.allocatable: expected an object"},
      {"allocatable value null",
       R"({"metadata": {"name": "n"}, "status": {"allocatable": {"nvidia.com/gpu": null}}})",
       "Node n: status.allocatable[\"nvidia.com/gpu\"]: expected a quantity, got null"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto node = DecodeNode(Parse(c.json));
    ASSERT_FALSE(node.ok());
    EXPECT_EQ(node.error().message, c.want);
  }
}

}  // namespace
}  // namespace tessera::codec
