#include "adapters/kube/event_recorder.h"

#include <gtest/gtest.h>

#include <atomic>

#include "fake_api_server.h"
#include "test_support.h"

namespace tessera::kube {
namespace {

using testing::ConfigFor;
using testing::FakeApiServer;
using testing::RecordedRequest;
using testing::ReplyJson;
using testing::WaitUntil;

constexpr const char* kEvents = "/api/v1/namespaces/ns/events";

EventSpec Event(int i) {
  EventSpec event;
  event.ns = "ns";
  event.pod_name = "pod-" + std::to_string(i);
  event.reason = "Scheduled";
  event.message = "placed";
  return event;
}

TEST(EventRecorderTest, SendsInTheBackgroundWithItsComponent) {
  FakeApiServer server;
  server.On("POST", kEvents,
            [](const RecordedRequest&, httplib::Response& res) { ReplyJson(res, 201, {}); });
  Client client(ConfigFor(server));
  EventRecorder recorder(client, "tessera-scheduler");
  recorder.Start();
  EXPECT_TRUE(recorder.Record(Event(1)));
  ASSERT_TRUE(WaitUntil([&] { return recorder.sent() == 1; }));
  recorder.Stop();
  const auto requests = server.Requests("POST", kEvents);
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].JsonBody()["reportingComponent"], "tessera-scheduler");
  EXPECT_EQ(recorder.dropped(), 0U);
}

TEST(EventRecorderTest, RateLimitsBeyondTheBurst) {
  FakeApiServer server;
  server.On("POST", kEvents,
            [](const RecordedRequest&, httplib::Response& res) { ReplyJson(res, 201, {}); });
  Client client(ConfigFor(server));
  EventRecorder recorder(client, "tessera", {/*events_per_second=*/20, /*burst=*/2, 100});
  recorder.Start();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(recorder.Record(Event(i)));
  ASSERT_TRUE(WaitUntil([&] { return recorder.sent() == 6; }));
  // Two go at once, the other four wait a token each at 20/s.
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(190));
  recorder.Stop();
}

TEST(EventRecorderTest, DropsAndCountsWhenTheQueueIsFull) {
  FakeApiServer server;
  std::atomic<bool> release{false};
  server.On("POST", kEvents, [&release](const RecordedRequest&, httplib::Response& res) {
    WaitUntil([&] { return release.load(); });
    ReplyJson(res, 201, {});
  });
  Client client(ConfigFor(server));
  EventRecorder recorder(client, "tessera", {1000, 1000, /*queue_capacity=*/2});
  recorder.Start();
  ASSERT_TRUE(recorder.Record(Event(0)));
  ASSERT_TRUE(WaitUntil([&] { return server.Count("POST", kEvents) == 1; }));  // in flight
  int accepted = 0;
  for (int i = 1; i < 10; ++i) accepted += recorder.Record(Event(i)) ? 1 : 0;
  EXPECT_EQ(accepted, 2);
  EXPECT_EQ(recorder.dropped(), 7U);
  release = true;
  ASSERT_TRUE(WaitUntil([&] { return recorder.sent() == 3; }));
  recorder.Stop();
  EXPECT_EQ(server.Count("POST", kEvents), 3U);
}

TEST(EventRecorderTest, FailuresAreCountedNotThrown) {
  FakeApiServer server;  // 404 for everything
  Client client(ConfigFor(server));
  EventRecorder recorder(client);
  recorder.Start();
  recorder.Record(Event(1));
  ASSERT_TRUE(WaitUntil([&] { return recorder.failed() == 1; }));
  recorder.Stop();
  EXPECT_EQ(recorder.sent(), 0U);
  EXPECT_FALSE(recorder.Record(Event(2)));  // stopped
}

}  // namespace
}  // namespace tessera::kube
