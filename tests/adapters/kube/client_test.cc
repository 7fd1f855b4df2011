#include "adapters/kube/client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "fake_api_server.h"
#include "test_support.h"

namespace tessera::kube {
namespace {

using testing::ConfigFor;
using ::testing::ElementsAre;
using testing::FakeApiServer;
using testing::FastRetryOptions;
using testing::RecordedRequest;
using testing::ReplyJson;
using testing::StatusBody;
using testing::TempDir;
using testing::WaitUntil;

TEST(ClientTest, GetSendsTokenAcceptAndUserAgentAndReturnsTheAnswer) {
  FakeApiServer server;
  ASSERT_TRUE(server.running());
  server.On("GET", "/api/v1/nodes/n1", [](const RecordedRequest&, httplib::Response& res) {
    res.set_header("X-Custom-Header", "yes");
    ReplyJson(res, 200, {{"kind", "Node"}});
  });
  ClusterConfig config = ConfigFor(server);
  config.bearer_token = "secret";
  ClientOptions options;
  options.user_agent = "tessera-test/1";
  Client client(config, options);

  Response r = client.Get("/api/v1/nodes/n1");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(Json::parse(r.body)["kind"], "Node");
  EXPECT_EQ(r.headers["x-custom-header"], "yes");
  const auto requests = server.Requests("GET", "/api/v1/nodes/n1");
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].Header("Authorization"), "Bearer secret");
  EXPECT_EQ(requests[0].Header("Accept"), "application/json");
  EXPECT_EQ(requests[0].Header("User-Agent"), "tessera-test/1");
}

TEST(ClientTest, TokenFileIsReReadAfterUnauthorized) {
  FakeApiServer server;
  server.On("GET", "/api", [](const RecordedRequest& req, httplib::Response& res) {
    if (req.Header("Authorization") == "Bearer rotated") {
      ReplyJson(res, 200, Json::object());
    } else {
      ReplyJson(res, 401, StatusBody(401, "Unauthorized", "Unauthorized"));
    }
  });
  TempDir dir;
  ClusterConfig config = ConfigFor(server);
  config.bearer_token = "expired";
  config.token_file = dir.Write("token", "expired\n");
  Client client(config);
  dir.Write("token", "rotated\n");  // the kubelet refreshed it

  Response r = client.Get("/api");
  EXPECT_EQ(r.status, 200);
  std::vector<std::string> sent;
  for (const auto& req : server.Requests()) sent.push_back(req.Header("Authorization"));
  EXPECT_THAT(sent, ElementsAre("Bearer expired", "Bearer rotated"));
}

TEST(ClientTest, TokenFileIsReReadPeriodically) {
  FakeApiServer server;
  server.On("GET", "/api", [](const RecordedRequest&, httplib::Response& res) {
    ReplyJson(res, 200, Json::object());
  });
  TempDir dir;
  ClusterConfig config = ConfigFor(server);
  config.bearer_token = "first";
  config.token_file = dir.Write("token", "first\n");
  ClientOptions options;
  options.token_refresh_interval = std::chrono::milliseconds(1);
  Client client(config, options);
  EXPECT_EQ(client.Get("/api").status, 200);
  dir.Write("token", "second\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(client.Get("/api").status, 200);
  std::vector<std::string> sent;
  for (const auto& req : server.Requests()) sent.push_back(req.Header("Authorization"));
  EXPECT_THAT(sent, ElementsAre("Bearer first", "Bearer second"));
}

TEST(ClientTest, UnauthorizedWithoutATokenFileIsReturned) {
  FakeApiServer server;
  server.On("GET", "/api", [](const RecordedRequest&, httplib::Response& res) {
    ReplyJson(res, 401, StatusBody(401, "Unauthorized", "Unauthorized"));
  });
  Client client(ConfigFor(server), FastRetryOptions());
  Response r = client.Get("/api");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(server.Count("GET", "/api"), 1U);
  EXPECT_EQ(r.Describe(), "HTTP 401: Unauthorized");
}

TEST(ClientTest, TooManyRequestsIsRetriedAfterRetryAfterForAnyVerb) {
  FakeApiServer server;
  std::atomic<int> calls{0};
  server.On("POST", "/api/v1/namespaces/ns/events",
            [&calls](const RecordedRequest&, httplib::Response& res) {
              if (calls++ == 0) {
                res.set_header("Retry-After", "1");
                ReplyJson(res, 429, StatusBody(429, "TooManyRequests", "slow down"));
              } else {
                ReplyJson(res, 201, Json::object());
              }
            });
  ClientOptions options = FastRetryOptions();
  options.retry_after_max = std::chrono::milliseconds(300);  // Retry-After 1 s, capped
  Client client(ConfigFor(server), options);

  const auto start = std::chrono::steady_clock::now();
  Response r = client.Post("/api/v1/namespaces/ns/events", "{}");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(server.Count("POST", "/api/v1/namespaces/ns/events"), 2U);
  EXPECT_GE(elapsed, std::chrono::milliseconds(300));  // waited as told (up to the cap)
}

TEST(ClientTest, GetRetriesServerErrorsUpToMaxRetries) {
  FakeApiServer server;
  server.On("GET", "/api/v1/pods", [](const RecordedRequest&, httplib::Response& res) {
    ReplyJson(res, 503, StatusBody(503, "ServiceUnavailable", "etcd is down"));
  });
  ClientOptions options = FastRetryOptions();
  options.max_retries = 3;
  Client client(ConfigFor(server), options);
  Response r = client.Get("/api/v1/pods");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.Describe(), "HTTP 503: etcd is down");
  EXPECT_EQ(server.Count("GET", "/api/v1/pods"), 4U);
}

TEST(ClientTest, GetServerErrorThenSuccess) {
  FakeApiServer server;
  std::atomic<int> calls{0};
  server.On("GET", "/api/v1/pods", [&calls](const RecordedRequest&, httplib::Response& res) {
    ReplyJson(res, calls++ < 2 ? 500 : 200, Json::object());
  });
  Client client(ConfigFor(server), FastRetryOptions());
  EXPECT_EQ(client.Get("/api/v1/pods").status, 200);
  EXPECT_EQ(server.Count("GET", "/api/v1/pods"), 3U);
}

TEST(ClientTest, WritesAreNotRetriedOnServerErrors) {
  FakeApiServer server;
  const auto fail = [](const RecordedRequest&, httplib::Response& res) {
    ReplyJson(res, 500, StatusBody(500, "InternalError", "oops"));
  };
  server.On("POST", "/x", fail);
  server.On("PATCH", "/x", fail);
  server.On("PUT", "/x", fail);
  server.On("DELETE", "/x", fail);
  Client client(ConfigFor(server), FastRetryOptions());
  EXPECT_EQ(client.Post("/x", "{}").status, 500);
  EXPECT_EQ(client.Patch("/x", "{}").status, 500);
  EXPECT_EQ(client.Put("/x", "{}").status, 500);
  EXPECT_EQ(client.Delete("/x").status, 500);
  EXPECT_EQ(server.Requests().size(), 4U);
}

TEST(ClientTest, ConnectionRefusedIsATransportErrorAfterRetries) {
  ClusterConfig config;
  {
    FakeApiServer gone;  // a port that was free a moment ago and is closed now
    config = ConfigFor(gone);
  }
  ClientOptions options = FastRetryOptions();
  options.max_retries = 2;
  Client client(config, options);
  Response r = client.Get("/api");
  EXPECT_EQ(r.status, 0);
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(r.transport_error.empty());
  EXPECT_EQ(r.Describe(), r.transport_error);
}

TEST(ClientTest, MethodsAndBodiesReachTheServer) {
  FakeApiServer server;
  const auto echo = [](const RecordedRequest& req, httplib::Response& res) {
    ReplyJson(res, 200, {{"method", req.method}, {"body", req.body}});
  };
  for (const char* method : {"POST", "PUT", "PATCH", "DELETE"}) server.On(method, "/o", echo);
  Client client(ConfigFor(server));
  EXPECT_EQ(Json::parse(client.Post("/o", R"({"a":1})").body)["body"], R"({"a":1})");
  EXPECT_EQ(Json::parse(client.Put("/o", R"({"b":2})").body)["method"], "PUT");
  EXPECT_EQ(Json::parse(client.Delete("/o").body)["method"], "DELETE");
  Response patched = client.Patch("/o", "[]", "application/json-patch+json");
  EXPECT_EQ(Json::parse(patched.body)["method"], "PATCH");
  const auto requests = server.Requests();
  ASSERT_EQ(requests.size(), 4U);
  EXPECT_EQ(requests[0].Header("Content-Type"), "application/json");
  EXPECT_EQ(requests[3].Header("Content-Type"), "application/json-patch+json");
}

TEST(ClientTest, ConcurrentCallersAllGetTheirAnswers) {
  FakeApiServer server;
  server.On("GET", "/api/v1/nodes", [](const RecordedRequest& req, httplib::Response& res) {
    ReplyJson(res, 200, {{"caller", req.Param("caller")}});
  });
  Client client(ConfigFor(server));
  std::atomic<int> correct{0};
  std::vector<std::thread> threads;
  threads.reserve(6);
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&client, &correct, t] {
      for (int i = 0; i < 15; ++i) {
        const std::string caller = std::to_string(t) + "-" + std::to_string(i);
        Response r = client.Get("/api/v1/nodes?caller=" + caller);
        if (r.ok() && Json::parse(r.body)["caller"] == caller) ++correct;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(correct.load(), 90);
}

// tessera serve sends up to 32 binds at once: every caller's connection is kept for the next
// request, so a second burst opens no new connection (a pool of 16 closed the rest, and each
// next request paid a TCP and TLS handshake).
TEST(ClientTest, ConnectionsOfAsManyConcurrentCallersAsBindWorkersAreKept) {
  constexpr int kCallers = 20;  // more than the old pool, within the fake server's threads
  FakeApiServer server;
  std::mutex mu;
  std::condition_variable all_in;
  int in_flight = 0;
  server.On("GET", "/api/v1/nodes", [&](const RecordedRequest&, httplib::Response& res) {
    std::unique_lock<std::mutex> lock(mu);
    ++in_flight;
    all_in.notify_all();
    // The first burst overlaps whole, so that each caller holds a connection of its own.
    all_in.wait_for(lock, std::chrono::seconds(5), [&] { return in_flight >= kCallers; });
    ReplyJson(res, 200, {{"kind", "NodeList"}});
  });
  Client client(ConfigFor(server));
  for (int burst = 0; burst < 2; ++burst) {
    std::vector<std::thread> threads;
    threads.reserve(kCallers);
    for (int t = 0; t < kCallers; ++t) {
      threads.emplace_back([&client] { EXPECT_TRUE(client.Get("/api/v1/nodes").ok()); });
    }
    for (auto& thread : threads) thread.join();
  }
  std::set<int> connections;
  for (const RecordedRequest& r : server.Requests("GET", "/api/v1/nodes")) {
    connections.insert(r.remote_port);
  }
  EXPECT_EQ(server.Count("GET", "/api/v1/nodes"), 2U * kCallers);
  EXPECT_EQ(connections.size(), static_cast<size_t>(kCallers));
}

TEST(ClientTest, SendStopsWaitingForARetryWhenAsked) {
  FakeApiServer server;
  server.On("GET", "/slow", [](const RecordedRequest&, httplib::Response& res) {
    res.set_header("Retry-After", "30");
    ReplyJson(res, 429, StatusBody(429, "TooManyRequests", "later"));
  });
  ClientOptions options;
  options.retry_after_max = std::chrono::seconds(30);
  Client client(ConfigFor(server), options);
  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    WaitUntil([&] { return server.Count("GET", "/slow") >= 1; });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // usually in the 30 s wait now
    stop = true;
  });
  const auto start = std::chrono::steady_clock::now();
  Response r = client.Send({"GET", "/slow", "", ""}, [&] { return stop.load(); });
  stopper.join();
  // The 429 itself, or on a very slow machine the cancelled first attempt; never a retry.
  EXPECT_TRUE(r.status == 429 || r.cancelled) << r.Describe();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(server.Count("GET", "/slow"), 1U);
}

TEST(ClientStreamTest, DeliversCompleteLinesAcrossChunks) {
  FakeApiServer server;
  server.On("GET", "/watch", [&server](const RecordedRequest&, httplib::Response& res) {
    server.Stream(res, {"first\nsec", "ond\r\n", "\nthird\n", "partial"}, /*hang=*/false);
  });
  Client client(ConfigFor(server));
  std::vector<std::string> lines;
  Response r = client.Stream(
      "/watch",
      [&](std::string_view line) {
        lines.emplace_back(line);
        return true;
      },
      [] { return false; });
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.transport_error.empty()) << r.transport_error;
  EXPECT_THAT(lines, ElementsAre("first", "second", "", "third"));  // "partial" never ended
}

TEST(ClientStreamTest, ReceiverCanEndTheStream) {
  FakeApiServer server;
  server.On("GET", "/watch", [&server](const RecordedRequest&, httplib::Response& res) {
    server.Stream(res, {"a\n", "b\n", "c\n"}, /*hang=*/true);
  });
  Client client(ConfigFor(server));
  std::vector<std::string> lines;
  Response r = client.Stream(
      "/watch",
      [&](std::string_view line) {
        lines.emplace_back(line);
        return line != "b";
      },
      [] { return false; });
  EXPECT_EQ(r.status, 200);
  EXPECT_THAT(lines, ElementsAre("a", "b"));
}

TEST(ClientStreamTest, ErrorStatusReturnsTheBody) {
  FakeApiServer server;
  server.On("GET", "/watch", [](const RecordedRequest&, httplib::Response& res) {
    ReplyJson(res, 403, StatusBody(403, "Forbidden", "pods is forbidden"));
  });
  Client client(ConfigFor(server));
  int lines = 0;
  Response r = client.Stream(
      "/watch",
      [&](std::string_view) {
        ++lines;
        return true;
      },
      [] { return false; });
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(lines, 0);
  EXPECT_EQ(r.Describe(), "HTTP 403: pods is forbidden");
}

TEST(ClientStreamTest, ShouldStopEndsAHangingStreamPromptly) {
  FakeApiServer server;
  server.On("GET", "/watch", [&server](const RecordedRequest&, httplib::Response& res) {
    server.Stream(res, {"hello\n"}, /*hang=*/true);
  });
  Client client(ConfigFor(server));
  std::atomic<bool> got_line{false};
  std::atomic<bool> stop{false};
  std::chrono::steady_clock::time_point stop_requested;
  std::thread stopper([&] {
    WaitUntil([&] { return got_line.load(); });
    stop_requested = std::chrono::steady_clock::now();
    stop = true;
  });
  Response r = client.Stream(
      "/watch",
      [&](std::string_view) {
        got_line = true;
        return true;
      },
      [&] { return stop.load(); });
  const auto returned = std::chrono::steady_clock::now();
  stopper.join();
  EXPECT_TRUE(r.cancelled);
  EXPECT_TRUE(got_line.load());
  EXPECT_LT(returned - stop_requested, std::chrono::seconds(2));  // polled every 100 ms
}

TEST(ClientTest, QpsLimitsRequestsAndUnlimitedIsTheDefault) {
  FakeApiServer server;
  server.On("GET", "/api", [](const RecordedRequest&, httplib::Response& res) {
    ReplyJson(res, 200, Json::object());
  });
  ClientOptions options;
  options.qps = 20;  // one token every 50 ms
  options.burst = 2;
  Client limited(ConfigFor(server), options);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(limited.Get("/api").ok());
  // Two from the burst, then four more at 50 ms each.
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(190));

  Client unlimited(ConfigFor(server));
  const auto fast = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(unlimited.Get("/api").ok());
  EXPECT_LT(std::chrono::steady_clock::now() - fast, std::chrono::milliseconds(900));
}

TEST(ClientTest, ShouldStopEndsTheWaitForTheRateLimit) {
  FakeApiServer server;
  server.On("GET", "/api", [](const RecordedRequest&, httplib::Response& res) {
    ReplyJson(res, 200, Json::object());
  });
  ClientOptions options;
  options.qps = 0.01;  // the second request would wait 100 s
  Client client(ConfigFor(server), options);
  EXPECT_TRUE(client.Get("/api").ok());
  const auto start = std::chrono::steady_clock::now();
  Response r = client.Send({"GET", "/api", "", ""}, [&] {
    return std::chrono::steady_clock::now() - start > std::chrono::milliseconds(100);
  });
  EXPECT_TRUE(r.cancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(server.Requests("GET", "/api").size(), 1U);
}

}  // namespace
}  // namespace tessera::kube
