#include "agent_runtime/agent_http.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "adapters/http/raw_client.h"

namespace tessera::agent_runtime {
namespace {

using http::testing::RawClient;

// The status line and headers of one GET, with `extra_headers` ("Name: value\r\n"...).
std::string Head(int port, const std::string& path, const std::string& extra_headers = "") {
  RawClient client("127.0.0.1", port);
  client.Send("GET " + path + " HTTP/1.1\r\nHost: x\r\n" + extra_headers + "\r\n");
  const std::string answer = client.ReadUntil("\r\n\r\n");
  return answer.substr(0, answer.find("\r\n\r\n"));
}

std::string StatusLine(int port, const std::string& path, const std::string& extra_headers = "") {
  const std::string head = Head(port, path, extra_headers);
  return head.substr(0, head.find("\r\n"));
}

TEST(AgentHttp, ProbesAndMetricsAnswer) {
  AgentMetrics metrics;
  std::atomic<bool> ready{false};
  AgentHttp server(metrics, [&ready] { return ready.load(); });
  ASSERT_TRUE(server.Listen("127.0.0.1:0").ok());
  EXPECT_EQ(StatusLine(server.port(), "/healthz"), "HTTP/1.1 200 OK");
  EXPECT_EQ(StatusLine(server.port(), "/readyz"), "HTTP/1.1 503 Service Unavailable");
  ready = true;
  EXPECT_EQ(StatusLine(server.port(), "/readyz"), "HTTP/1.1 200 OK");
  EXPECT_EQ(StatusLine(server.port(), "/metrics"), "HTTP/1.1 200 OK");
  EXPECT_EQ(StatusLine(server.port(), "/nothing"), "HTTP/1.1 404 Not Found");
}

// cpp-httplib's fixed workers were held by clients that never finish a request, and the kubelet's
// liveness probe then timed out: slow clients now hold no worker and are cut at the deadline.
TEST(AgentHttp, SlowClientsDoNotStallTheProbes) {
  AgentMetrics metrics;
  http::ListenerLimits limits = AgentHttp::AgentLimits();
  limits.request_deadline = std::chrono::milliseconds(500);
  AgentHttp server(
      metrics, [] { return true; }, limits);
  ASSERT_TRUE(server.Listen("127.0.0.1:0").ok());
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 32; ++i) {
    slow.push_back(std::make_unique<RawClient>("127.0.0.1", server.port()));
    ASSERT_TRUE(slow.back()->Send("GET /metrics HTTP/1.1\r\nHost"));
  }
  EXPECT_EQ(StatusLine(server.port(), "/healthz"), "HTTP/1.1 200 OK");
  EXPECT_EQ(StatusLine(server.port(), "/readyz"), "HTTP/1.1 200 OK");
  for (auto& client : slow) EXPECT_TRUE(client->ClosedWithin(std::chrono::seconds(5)));
}

// --read-auth=delegated: /metrics answers only what the check (the API server, in the agent)
// allows; the kubelet's probes carry no token and stay open.
TEST(AgentHttp, MetricsNeedReadAccessAndProbesDoNot) {
  AgentMetrics metrics;
  AgentHttp server(metrics, [] { return true; });
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> asked;  // (Authorization, path)
  server.RequireReadAccess([&](std::string_view header, std::string_view path) {
    {
      std::lock_guard lock(mu);
      asked.emplace_back(std::string(header), std::string(path));
    }
    if (header.empty()) return kube::AccessDecision{401, "", "no bearer token"};
    if (header == "Bearer reader") return kube::AccessDecision{200, "reader", ""};
    if (header == "Bearer down") return kube::AccessDecision{503, "", "API server unreachable"};
    return kube::AccessDecision{403, "someone", "someone may not get /metrics"};
  });
  ASSERT_TRUE(server.Listen("127.0.0.1:0").ok());
  const int port = server.port();

  const std::string anonymous = Head(port, "/metrics");
  EXPECT_EQ(anonymous.substr(0, anonymous.find("\r\n")), "HTTP/1.1 401 Unauthorized");
  EXPECT_NE(anonymous.find("WWW-Authenticate: Bearer"), std::string::npos) << anonymous;
  EXPECT_EQ(StatusLine(port, "/metrics", "Authorization: Bearer someone\r\n"),
            "HTTP/1.1 403 Forbidden");
  EXPECT_EQ(StatusLine(port, "/metrics", "Authorization: Bearer down\r\n"),
            "HTTP/1.1 503 Service Unavailable");
  RawClient reader("127.0.0.1", port);
  reader.Send("GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer reader\r\n\r\n");
  const std::string allowed = reader.ReadUntil("tessera_agent_allocations_total");
  EXPECT_EQ(allowed.substr(0, allowed.find("\r\n")), "HTTP/1.1 200 OK");
  EXPECT_NE(allowed.find("tessera_agent_allocations_total"), std::string::npos);

  // The probes are answered without asking the check.
  EXPECT_EQ(StatusLine(port, "/healthz"), "HTTP/1.1 200 OK");
  EXPECT_EQ(StatusLine(port, "/readyz"), "HTTP/1.1 200 OK");
  std::lock_guard lock(mu);
  ASSERT_EQ(asked.size(), 4u);
  for (const auto& [header, path] : asked) EXPECT_EQ(path, "/metrics");
  EXPECT_EQ(asked[0].first, "");
  EXPECT_EQ(asked[3].first, "Bearer reader");
}

TEST(AgentHttp, ABadAddressIsAClearError) {
  AgentMetrics metrics;
  AgentHttp server(metrics, [] { return true; });
  const Status s = server.Listen("9394");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "--http-bind 9394: expected HOST:PORT");
}

}  // namespace
}  // namespace tessera::agent_runtime
