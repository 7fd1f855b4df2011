#include "adapters/kube/object_writes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_api_server.h"

namespace tessera::kube {
namespace {

using testing::ConfigFor;
using testing::FakeApiServer;
using ::testing::HasSubstr;
using testing::RecordedRequest;
using testing::ReplyJson;
using testing::StatusBody;

TEST(MergePatchPodMetadataTest, SendsAMergePatchWithTheResourceVersion) {
  FakeApiServer server;
  server.On("PATCH", "/api/v1/namespaces/team-a/pods/p1",
            [](const RecordedRequest&, httplib::Response& res) {
              ReplyJson(res, 200, {{"metadata", {{"name", "p1"}, {"annotations", {{"a", "1"}}}}}});
            });
  Client client(ConfigFor(server));
  const Json patch = {{"annotations", {{"a", "1"}, {"gone", nullptr}}}};
  auto pod = MergePatchPodMetadata(client, "team-a", "p1", patch, "42");
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  EXPECT_EQ((*pod)["metadata"]["annotations"]["a"], "1");

  const auto requests = server.Requests("PATCH", "/api/v1/namespaces/team-a/pods/p1");
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].Header("Content-Type"), "application/merge-patch+json");
  EXPECT_EQ(requests[0].JsonBody(), Json::parse(R"({"metadata":{"annotations":{"a":"1","gone":null},
                                        "resourceVersion":"42"}})"));
}

TEST(MergePatchPodMetadataTest, ConflictIsSurfacedWithTheObjectAndStatus) {
  FakeApiServer server;
  server.On("PATCH", "/api/v1/namespaces/ns/pods/p",
            [](const RecordedRequest&, httplib::Response& res) {
              ReplyJson(res, 409,
                        StatusBody(409, "Conflict",
                                   "the object has been modified; please apply your "
                                   "changes to the latest version and try again"));
            });
  Client client(ConfigFor(server));
  Response response;
  auto pod = MergePatchPodMetadata(client, "ns", "p", {{"labels", {{"x", "y"}}}}, "7", &response);
  ASSERT_FALSE(pod.ok());
  EXPECT_THAT(pod.error().message, HasSubstr("patch pod ns/p: HTTP 409: the object has been"));
  EXPECT_EQ(pod.error().code, ErrorCode::kConflict) << "callers retry on the code, not the text";
  EXPECT_EQ(response.status, 409);
  EXPECT_EQ(server.Count("PATCH", "/api/v1/namespaces/ns/pods/p"), 1U);  // never retried
}

TEST(MergePatchNodeMetadataTest, WithoutResourceVersionTheBodyHasNone) {
  FakeApiServer server;
  server.On("PATCH", "/api/v1/nodes/gpu-1", [](const RecordedRequest&, httplib::Response& res) {
    ReplyJson(res, 200, {{"kind", "Node"}});
  });
  Client client(ConfigFor(server));
  auto node = MergePatchNodeMetadata(client, "gpu-1", {{"annotations", {{"k", "v"}}}});
  ASSERT_TRUE(node.ok()) << node.error().message;
  const auto requests = server.Requests("PATCH", "/api/v1/nodes/gpu-1");
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].JsonBody(), Json::parse(R"({"metadata":{"annotations":{"k":"v"}}})"));
}

TEST(MergePatchNodeMetadataTest, MissingNodeNamesIt) {
  FakeApiServer server;  // answers 404 to everything
  Client client(ConfigFor(server));
  auto node = MergePatchNodeMetadata(client, "gone", {{"labels", {{"a", "b"}}}});
  ASSERT_FALSE(node.ok());
  EXPECT_THAT(node.error().message, HasSubstr("patch node gone: HTTP 404"));
  EXPECT_EQ(node.error().code, ErrorCode::kNotFound);
}

TEST(ResponseCodeTest, StatusesMapToErrorCodes) {
  auto code = [](long status) {
    Response r;
    r.status = status;
    return r.Code();
  };
  EXPECT_EQ(code(409), ErrorCode::kConflict);
  EXPECT_EQ(code(404), ErrorCode::kNotFound);
  EXPECT_EQ(code(410), ErrorCode::kNotFound);
  EXPECT_EQ(code(0), ErrorCode::kUnavailable);  // no answer
  EXPECT_EQ(code(429), ErrorCode::kUnavailable);
  EXPECT_EQ(code(503), ErrorCode::kUnavailable);
  EXPECT_EQ(code(422), ErrorCode::kInvalidInput);
  EXPECT_EQ(code(403), ErrorCode::kInvalidInput);
  Response conflict;
  conflict.status = 409;
  const Status s = conflict.ToError("patch node n1");
  EXPECT_EQ(s.code(), ErrorCode::kConflict);
  EXPECT_EQ(s.message(), "patch node n1: HTTP 409");
}

TEST(FailPodTest, PatchesTheStatusWithTheUidAsAPrecondition) {
  FakeApiServer server;
  server.On(
      "PATCH", "/api/v1/namespaces/ns/pods/p/status",
      [](const RecordedRequest&, httplib::Response& res) {
        ReplyJson(res, 200, {{"metadata", {{"name", "p"}}}, {"status", {{"phase", "Failed"}}}});
      });
  Client client(ConfigFor(server));
  auto pod = FailPod(client, "ns", "p", "uid-1", "MigInstanceLost", "gone");
  ASSERT_TRUE(pod.ok()) << pod.error().message;
  const auto requests = server.Requests("PATCH", "/api/v1/namespaces/ns/pods/p/status");
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].Header("Content-Type"), "application/strategic-merge-patch+json");
  EXPECT_EQ(requests[0].JsonBody(), Json::parse(R"({"metadata": {"uid": "uid-1"},
      "status": {"phase": "Failed", "reason": "MigInstanceLost", "message": "gone",
      "conditions": [{"type": "DisruptionTarget", "status": "True",
                      "reason": "MigInstanceLost", "message": "gone"}]}})"));
}

TEST(FailPodTest, WithoutAUidNothingIsSent) {
  FakeApiServer server;
  Client client(ConfigFor(server));
  auto pod = FailPod(client, "ns", "p", "", "MigInstanceLost", "gone");
  ASSERT_FALSE(pod.ok());
  EXPECT_THAT(pod.error().message, HasSubstr("fail pod ns/p: the pod's uid is required"));
  EXPECT_TRUE(server.Requests().empty());
}

TEST(BindPodTest, PostsABindingAndAcceptsCreated) {
  FakeApiServer server;
  server.On("POST", "/api/v1/namespaces/ns/pods/p/binding",
            [](const RecordedRequest&, httplib::Response& res) {
              ReplyJson(res, 201, {{"kind", "Status"}, {"status", "Success"}});
            });
  Client client(ConfigFor(server));
  Status s = BindPod(client, "ns", "p", "uid-1", "node-a");
  ASSERT_TRUE(s.ok()) << s.message();
  const auto requests = server.Requests("POST", "/api/v1/namespaces/ns/pods/p/binding");
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].Header("Content-Type"), "application/json");
  EXPECT_EQ(requests[0].JsonBody(), Json::parse(R"({
    "apiVersion": "v1", "kind": "Binding",
    "metadata": {"name": "p", "namespace": "ns", "uid": "uid-1"},
    "target": {"apiVersion": "v1", "kind": "Node", "name": "node-a"}})"));
}

// The placement rides on the Binding: one write sets the node and the annotations.
TEST(BindPodTest, AnnotationsRideOnTheBinding) {
  FakeApiServer server;
  server.On("POST", "/api/v1/namespaces/ns/pods/p/binding",
            [](const RecordedRequest&, httplib::Response& res) {
              ReplyJson(res, 201, {{"kind", "Status"}, {"status", "Success"}});
            });
  Client client(ConfigFor(server));
  Status s = BindPod(client, "ns", "p", "uid-1", "node-a",
                     {{"hami.io/bind-phase", "allocating"}, {"hami.io/vgpu-node", "node-a"}});
  ASSERT_TRUE(s.ok()) << s.message();
  const auto requests = server.Requests("POST", "/api/v1/namespaces/ns/pods/p/binding");
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].JsonBody()["metadata"]["annotations"],
            Json::parse(R"({"hami.io/bind-phase": "allocating", "hami.io/vgpu-node": "node-a"})"));
}

TEST(BindPodTest, AlreadyBoundNamesPodAndNode) {
  FakeApiServer server;
  server.On("POST", "/api/v1/namespaces/ns/pods/p/binding",
            [](const RecordedRequest&, httplib::Response& res) {
              ReplyJson(res, 409, StatusBody(409, "Conflict", "pod p is already assigned"));
            });
  Client client(ConfigFor(server));
  Response response;
  Status s = BindPod(client, "ns", "p", "uid-1", "node-a", {}, &response);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "bind pod ns/p to node node-a: HTTP 409: pod p is already assigned");
  EXPECT_EQ(response.status, 409);
}

}  // namespace
}  // namespace tessera::kube
