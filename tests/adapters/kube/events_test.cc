#include "adapters/kube/events.h"

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

EventSpec FailedScheduling() {
  EventSpec event;
  event.ns = "team-a";
  event.pod_name = "trainer-0";
  event.pod_uid = "uid-9";
  event.type = "Warning";
  event.reason = "FilteringFailed";
  event.message = "0/3 nodes are available";
  return event;
}

TEST(CreateEventTest, PostsACoreV1EventAboutThePod) {
  FakeApiServer server;
  server.On("POST", "/api/v1/namespaces/team-a/events",
            [](const RecordedRequest&, httplib::Response& res) { ReplyJson(res, 201, {}); });
  Client client(ConfigFor(server));
  Status s = CreateEvent(client, FailedScheduling());
  ASSERT_TRUE(s.ok()) << s.message();

  const auto requests = server.Requests("POST", "/api/v1/namespaces/team-a/events");
  ASSERT_EQ(requests.size(), 1U);
  const Json body = requests[0].JsonBody();
  EXPECT_EQ(body["kind"], "Event");
  EXPECT_EQ(body["metadata"]["generateName"], "trainer-0.");
  EXPECT_EQ(body["metadata"]["namespace"], "team-a");
  EXPECT_EQ(body["involvedObject"], Json::parse(R"({"apiVersion": "v1", "kind": "Pod",
      "namespace": "team-a", "name": "trainer-0", "uid": "uid-9"})"));
  EXPECT_EQ(body["type"], "Warning");
  EXPECT_EQ(body["reason"], "FilteringFailed");
  EXPECT_EQ(body["message"], "0/3 nodes are available");
  EXPECT_EQ(body["reportingComponent"], "tessera");
  EXPECT_EQ(body["source"]["component"], "tessera");
  EXPECT_EQ(body["count"], 1);
  EXPECT_TRUE(body["firstTimestamp"].is_string());
}

TEST(CreateEventTest, LongMessagesAreCutAtACharacterBoundary) {
  EventSpec event = FailedScheduling();
  event.message = std::string(1023, 'x') + "\xc3\xa9" + "tail";  // é straddles byte 1024
  const Json object = EventObject(event);
  EXPECT_EQ(object["message"].get<std::string>(), std::string(1023, 'x'));
}

TEST(CreateEventTest, InvalidTypeIsAnErrorWithoutARequest) {
  FakeApiServer server;
  Client client(ConfigFor(server));
  EventSpec event = FailedScheduling();
  event.type = "Error";
  Status s = CreateEvent(client, event);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("event FilteringFailed on pod team-a/trainer-0"));
  EXPECT_THAT(s.message(), HasSubstr("\"Error\""));
  EXPECT_TRUE(server.Requests().empty());
}

TEST(CreateEventTest, ServerErrorsAreReturnedNotThrown) {
  FakeApiServer server;  // 404 for everything
  Client client(ConfigFor(server));
  Status s = CreateEvent(client, FailedScheduling());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("create event FilteringFailed on pod team-a/trainer-0: "
                                     "HTTP 404"));
}

TEST(CreateEventTest, NodeEventsNameTheNodeInTheDefaultNamespace) {
  const Json object = EventObject(NodeEvent("gpu-1", true, "MigModeOff", "GPU-a is not in MIG"));
  EXPECT_EQ(object["metadata"]["namespace"], "default");
  EXPECT_EQ(object["involvedObject"],
            Json::parse(R"({"apiVersion": "v1", "kind": "Node", "name": "gpu-1"})"));
  EXPECT_EQ(object["type"], "Warning");
  EXPECT_EQ(object["reason"], "MigModeOff");
}

}  // namespace
}  // namespace tessera::kube
