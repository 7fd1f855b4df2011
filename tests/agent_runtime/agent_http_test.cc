#include "agent_runtime/agent_http.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <vector>

#include "adapters/http/raw_client.h"

namespace tessera::agent_runtime {
namespace {

using http::testing::RawClient;

std::string StatusLine(int port, const std::string& path) {
  RawClient client("127.0.0.1", port);
  client.Send("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string answer = client.ReadUntil("\r\n\r\n");
  return answer.substr(0, answer.find("\r\n"));
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

TEST(AgentHttp, ABadAddressIsAClearError) {
  AgentMetrics metrics;
  AgentHttp server(metrics, [] { return true; });
  const Status s = server.Listen("9394");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "--http-bind 9394: expected HOST:PORT");
}

}  // namespace
}  // namespace tessera::agent_runtime
