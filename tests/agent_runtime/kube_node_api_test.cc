// KubeNodeApi::ReadPod against a scripted API server: the pod as the API server holds it now,
// absent only on the API server's own NotFound for that pod; any other answer proves nothing.

#include "agent_runtime/kube_node_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "adapters/kube/fake_api_server.h"

namespace tessera::agent_runtime {
namespace {

using kube::testing::ConfigFor;
using kube::testing::FakeApiServer;
using kube::testing::FastRetryOptions;
using kube::testing::RecordedRequest;
using kube::testing::ReplyJson;
using kube::testing::StatusBody;
using ::testing::HasSubstr;

constexpr const char* kPath = "/api/v1/namespaces/team-a/pods/p1";

TEST(KubeNodeApiTest, ReadPodIsAQuorumReadOfThePod) {
  FakeApiServer server;
  server.On("GET", kPath, [](const RecordedRequest&, httplib::Response& res) {
    ReplyJson(res, 200,
              {{"kind", "Pod"},
               {"metadata", {{"name", "p1"}, {"namespace", "team-a"}, {"uid", "uid-1"}}},
               {"spec", {{"nodeName", "n1"}}},
               {"status", {{"phase", "Running"}}}});
  });
  kube::Client client(ConfigFor(server), FastRetryOptions());
  KubeNodeApi api(client, "n1");
  auto read = api.ReadPod("team-a", "p1");
  ASSERT_TRUE(read.ok()) << read.error().message;
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ(read.value()->uid, "uid-1");
  EXPECT_EQ(read.value()->phase, "Running");
  const auto requests = server.Requests("GET", kPath);
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_FALSE(requests[0].HasParam("resourceVersion"));  // "most recent": from etcd
}

kube::Json NotFound(const std::string& name, const std::string& kind = "pods") {
  kube::Json body = StatusBody(404, "NotFound", kind + " \"" + name + "\" not found");
  body["details"] = {{"name", name}, {"kind", kind}};
  return body;
}

TEST(KubeNodeApiTest, ReadPodIsAbsentOnlyOnTheApiServersNotFoundForThePod) {
  FakeApiServer server;
  server.On("GET", kPath, [](const RecordedRequest&, httplib::Response& res) {
    ReplyJson(res, 404, NotFound("p1"));
  });
  // A NotFound for another object, or a 404 without one (a proxy, a wrong path), proves
  // nothing.
  server.On(
      "GET", "/api/v1/namespaces/team-a/pods/p2",
      [](const RecordedRequest&, httplib::Response& res) { ReplyJson(res, 404, NotFound("p1")); });
  server.On("GET", "/api/v1/namespaces/team-a/pods/p3",
            [](const RecordedRequest&, httplib::Response& res) {
              ReplyJson(res, 404, NotFound("p3", "namespaces"));
            });
  server.On("GET", "/api/v1/namespaces/team-a/pods/p4",
            [](const RecordedRequest&, httplib::Response& res) {
              res.status = 404;
              res.set_content("404 page not found", "text/plain");
            });
  kube::Client client(ConfigFor(server), FastRetryOptions());
  KubeNodeApi api(client, "n1");
  auto absent = api.ReadPod("team-a", "p1");
  ASSERT_TRUE(absent.ok()) << absent.error().message;
  EXPECT_FALSE(absent->has_value());

  for (const char* name : {"p2", "p3", "p4", "p5"}) {  // p5: the fake's 404 without details
    auto read = api.ReadPod("team-a", name);
    ASSERT_FALSE(read.ok()) << name;
    EXPECT_EQ(read.error().origin_code, 0) << name;
    EXPECT_THAT(read.error().message,
                HasSubstr("read pod team-a/" + std::string(name) + ": HTTP 404"));
  }
}

TEST(KubeNodeApiTest, ReadPodFailsOnAnyOtherAnswer) {
  FakeApiServer server;
  server.On("GET", kPath, [](const RecordedRequest&, httplib::Response& res) {
    ReplyJson(res, 403, StatusBody(403, "Forbidden", "pods \"p1\" is forbidden"));
  });
  kube::Client client(ConfigFor(server), FastRetryOptions());
  KubeNodeApi api(client, "n1");
  auto forbidden = api.ReadPod("team-a", "p1");
  ASSERT_FALSE(forbidden.ok());
  EXPECT_EQ(forbidden.error().origin_code, 403);
  EXPECT_THAT(forbidden.error().message, HasSubstr("read pod team-a/p1"));
  server.On("GET", kPath, [](const RecordedRequest&, httplib::Response& res) {
    ReplyJson(res, 200, {{"kind", "Status"}, {"metadata", "not an object"}});
  });
  EXPECT_FALSE(api.ReadPod("team-a", "p1").ok());
}

}  // namespace
}  // namespace tessera::agent_runtime
