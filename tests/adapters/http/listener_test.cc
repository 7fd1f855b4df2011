#include "adapters/http/listener.h"

#include <gtest/gtest.h>
#include <ifaddrs.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "adapters/http/query_string.h"
#include "adapters/http/raw_client.h"

namespace tessera::http {
namespace {

using std::chrono::milliseconds;
using testing::RawClient;

// A route whose handler waits until the test opens the gate: a worker held on purpose.
class Gate {
 public:
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// A listener on a free port serving /healthz (inline), /echo (the body back, on a worker),
// /hold, /open-hold and /bind-hold (wait for the gate on their lanes) and /local (only for
// callers on this host).
class ListenerFixture {
 public:
  explicit ListenerFixture(ListenerLimits limits = {}, const std::string& bind = "127.0.0.1:0") {
    std::vector<Route> routes;
    routes.push_back({"GET", "/healthz", Lane::kInline, http::Gate::kAnyone,
                      [](const Request&) { return Response::Text(200, "ok"); }});
    routes.push_back({"POST", "/echo", Lane::kWork, http::Gate::kAnyone,
                      [](const Request& r) { return Response::Text(200, r.body); }});
    routes.push_back({"GET", "/hold", Lane::kWork, http::Gate::kAnyone, [this](const Request&) {
                        started_.fetch_add(1);
                        gate_.Wait();
                        return Response::Text(200, "released");
                      }});
    routes.push_back(
        {"GET", "/open-hold", Lane::kOpen, http::Gate::kAnyone, [this](const Request&) {
           started_.fetch_add(1);
           gate_.Wait();
           return Response::Text(200, "released");
         }});
    routes.push_back(
        {"GET", "/bind-hold", Lane::kBind, http::Gate::kAnyone, [this](const Request&) {
           started_.fetch_add(1);
           gate_.Wait();
           return Response::Text(200, "released");
         }});
    routes.push_back({"GET", "/local", Lane::kWork, http::Gate::kLocalOrClientCertificate,
                      [](const Request&) { return Response::Text(200, "local"); }});
    ListenerOptions options;
    options.bind = bind;
    options.limits = limits;
    listener_ = std::make_unique<Listener>(options, std::move(routes));
    status_ = listener_->Listen();
    if (status_.ok()) thread_ = std::thread([this] { listener_->Serve(); });
  }
  ~ListenerFixture() {
    gate_.Open();
    listener_->Stop();
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return listener_->port(); }
  const Status& status() const { return status_; }
  Listener& listener() { return *listener_; }
  Gate& gate() { return gate_; }
  int started() const { return started_.load(); }

 private:
  Gate gate_;
  std::atomic<int> started_{0};
  std::unique_ptr<Listener> listener_;
  Status status_;
  std::thread thread_;
};

// The counter is bumped by the handler of the cut operation, which may run just after the client
// sees the close: wait for it a little.
uint64_t DeadlinesWithin(const Listener& listener, uint64_t expected,
                         milliseconds timeout = std::chrono::seconds(2)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (listener.counters().deadline_exceeded < expected &&
         std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  return listener.counters().deadline_exceeded;
}

std::string Get(const std::string& path) { return "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n"; }

// A GET /healthz on a new connection: its status line, "" when nothing came back in time.
std::string HealthStatusLine(int port, milliseconds timeout = std::chrono::seconds(5)) {
  RawClient client("127.0.0.1", port);
  client.Send(Get("/healthz"));
  const std::string answer = client.ReadUntil("\r\n", timeout);
  return answer.substr(0, answer.find("\r\n"));
}

TEST(Listener, KeepAliveServesRequestsOneAfterAnotherOnOneConnection) {
  ListenerFixture f;
  ASSERT_TRUE(f.status().ok()) << f.status().message();
  RawClient client("127.0.0.1", f.port());
  client.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nfirst" +
              std::string("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nsecond"));
  const std::string answer = client.ReadUntil("second");
  EXPECT_NE(answer.find("first"), std::string::npos) << answer;
  EXPECT_NE(answer.find("second"), std::string::npos) << answer;
  EXPECT_FALSE(client.ClosedWithin(milliseconds(100)));
}

// One byte at a time, slower than the deadline allows: the connection is cut at the deadline,
// and meanwhile other clients are served (no thread waits on the slow ones).
TEST(Listener, SlowClientsAreCutAtTheRequestDeadlineAndDoNotStallOthers) {
  ListenerLimits limits;
  limits.request_deadline = milliseconds(600);
  limits.work_threads = 2;
  ListenerFixture f(limits);
  ASSERT_TRUE(f.status().ok());
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 16; ++i) {
    slow.push_back(std::make_unique<RawClient>("127.0.0.1", f.port()));
    ASSERT_TRUE(slow.back()->Send("POST /echo HTTP/1.1\r\n"));
  }
  // Every slow client is still connected, yet a new one is answered.
  EXPECT_EQ(HealthStatusLine(f.port()), "HTTP/1.1 200 OK");
  RawClient echo("127.0.0.1", f.port());
  echo.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi");
  EXPECT_NE(echo.ReadUntil("hi").find("\r\n\r\nhi"), std::string::npos);
  for (auto& client : slow) client->Send("H");
  for (auto& client : slow) {
    // Trickling one byte per 100 ms never gets past the deadline.
    bool closed = false;
    for (int i = 0; i < 30 && !closed; ++i) {
      closed = !client->Send("o") || client->ClosedWithin(milliseconds(100));
    }
    EXPECT_TRUE(closed);
  }
  EXPECT_GE(DeadlinesWithin(f.listener(), 16), 16u);
}

TEST(Listener, ATlsClientThatNeverStartsTheHandshakeIsCutAtTheHandshakeDeadline) {
  const std::string dir = ::testing::TempDir() + "tessera-listener-tls";
  const std::string make = "mkdir -p " + dir +
                           " && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=x "
                           "-keyout " +
                           dir + "/k -out " + dir + "/c >/dev/null 2>&1";
  ASSERT_EQ(std::system(make.c_str()), 0);
  std::vector<Route> routes;
  routes.push_back({"GET", "/healthz", Lane::kInline, http::Gate::kAnyone,
                    [](const Request&) { return Response::Text(200, "ok"); }});
  ListenerOptions options;
  options.bind = "127.0.0.1:0";
  options.tls_cert_file = dir + "/c";
  options.tls_key_file = dir + "/k";
  options.limits.tls_handshake_deadline = milliseconds(300);
  Listener listener(options, std::move(routes));
  ASSERT_TRUE(listener.Listen().ok());
  std::thread serve([&] { listener.Serve(); });
  RawClient silent("127.0.0.1", listener.port());
  EXPECT_TRUE(silent.ClosedWithin(std::chrono::seconds(5)));
  EXPECT_EQ(DeadlinesWithin(listener, 1), 1u);
  listener.Stop();
  serve.join();
}

TEST(Listener, AChunkedBodyBeyondTheLimitIs413) {
  ListenerLimits limits;
  limits.max_body_bytes = 1024;
  ListenerFixture f(limits);
  ASSERT_TRUE(f.status().ok());
  RawClient client("127.0.0.1", f.port());
  std::string request = "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 4; ++i) request += "200\r\n" + std::string(512, 'a') + "\r\n";
  request += "0\r\n\r\n";
  client.Send(request);
  EXPECT_EQ(client.ReadUntil("\r\n").substr(0, 12), "HTTP/1.1 413");
  EXPECT_TRUE(client.ClosedWithin(std::chrono::seconds(5)));
}

TEST(Listener, AChunkedBodyWithinTheLimitIsServed) {
  ListenerFixture f;
  ASSERT_TRUE(f.status().ok());
  RawClient client("127.0.0.1", f.port());
  client.Send(
      "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
  EXPECT_NE(client.ReadUntil("abcde").find("\r\n\r\nabcde"), std::string::npos);
}

// The declared length alone refuses the request: no body is waited for.
TEST(Listener, AnAnnouncedLengthBeyondTheLimitIsRefusedAtOnce) {
  ListenerFixture f;
  ASSERT_TRUE(f.status().ok());
  RawClient client("127.0.0.1", f.port());
  client.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000000\r\n\r\n");
  EXPECT_EQ(client.ReadUntil("\r\n").substr(0, 12), "HTTP/1.1 413");
  EXPECT_TRUE(client.ClosedWithin(std::chrono::seconds(5)));
  EXPECT_EQ(f.listener().counters().too_large, 1u);
}

// The limit is on the bytes a handler gets: a compressed body would expand past it, so none is
// taken.
TEST(Listener, CompressedBodiesAreRefused) {
  ListenerFixture f;
  ASSERT_TRUE(f.status().ok());
  for (const char* header : {"Content-Encoding: gzip", "Content-Encoding: br"}) {
    RawClient client("127.0.0.1", f.port());
    client.Send(std::string("POST /echo HTTP/1.1\r\nHost: x\r\n") + header +
                "\r\nContent-Length: 3\r\n\r\nabc");
    EXPECT_EQ(client.ReadUntil("\r\n").substr(0, 12), "HTTP/1.1 415") << header;
  }
  // A transfer coding other than chunked: refused by the parser (400) or by the check (415).
  RawClient client("127.0.0.1", f.port());
  client.Send("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
  const std::string status = client.ReadUntil("\r\n").substr(0, 12);
  EXPECT_TRUE(status == "HTTP/1.1 400" || status == "HTTP/1.1 415") << status;
}

TEST(Listener, TooManyOrTooLargeHeadersAre431) {
  ListenerLimits limits;
  limits.max_header_fields = 20;
  limits.max_header_bytes = 4096;
  ListenerFixture f(limits);
  ASSERT_TRUE(f.status().ok());
  std::string many = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 30; ++i) many += "X-" + std::to_string(i) + ": y\r\n";
  RawClient a("127.0.0.1", f.port());
  a.Send(many + "\r\n");
  EXPECT_EQ(a.ReadUntil("\r\n").substr(0, 12), "HTTP/1.1 431");
  RawClient b("127.0.0.1", f.port());
  b.Send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(8192, 'b') + "\r\n\r\n");
  EXPECT_EQ(b.ReadUntil("\r\n").substr(0, 12), "HTTP/1.1 431");
}

TEST(Listener, AFullWorkQueueAnswers503AndLivenessStillAnswers) {
  ListenerLimits limits;
  limits.work_threads = 1;
  limits.work_queue = 1;
  ListenerFixture f(limits);
  ASSERT_TRUE(f.status().ok());
  RawClient running("127.0.0.1", f.port());
  running.Send(Get("/hold"));
  for (int i = 0; i < 500 && f.started() == 0; ++i) std::this_thread::sleep_for(milliseconds(2));
  ASSERT_EQ(f.started(), 1);
  RawClient queued("127.0.0.1", f.port());
  queued.Send(Get("/hold"));
  std::this_thread::sleep_for(milliseconds(100));  // in the queue by now
  RawClient refused("127.0.0.1", f.port());
  refused.Send(Get("/hold"));
  const std::string answer = refused.ReadUntil("\r\n");
  EXPECT_EQ(answer.substr(0, 12), "HTTP/1.1 503");
  EXPECT_EQ(HealthStatusLine(f.port()), "HTTP/1.1 200 OK");
  f.gate().Open();
  EXPECT_NE(running.ReadUntil("released").find("released"), std::string::npos);
  EXPECT_NE(queued.ReadUntil("released").find("released"), std::string::npos);
  EXPECT_EQ(f.listener().counters().overloaded, 1u);
}

TEST(Listener, BodiesBeyondTheSharedBudgetAre503BeforeTheyAreRead) {
  ListenerLimits limits;
  limits.max_body_bytes = 4096;
  limits.max_buffered_body_bytes = 3000;
  ListenerFixture f(limits);
  ASSERT_TRUE(f.status().ok());
  RawClient first("127.0.0.1", f.port());
  first.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n");  // body pending
  std::this_thread::sleep_for(milliseconds(100));
  RawClient second("127.0.0.1", f.port());
  second.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n");
  EXPECT_EQ(second.ReadUntil("\r\n").substr(0, 12), "HTTP/1.1 503");
  first.Send(std::string(2000, 'z'));
  EXPECT_EQ(first.ReadUntil("\r\n").substr(0, 15), "HTTP/1.1 200 OK");
}

// Any client may send the webhook and the read endpoints: when such requests hold every worker
// of their lane, kube-scheduler's verbs still find theirs free.
TEST(Listener, RequestsAnyoneMaySendCannotTakeTheTrustedCallersWorkers) {
  ListenerLimits limits;
  limits.open_threads = 1;
  limits.open_queue = 1;
  limits.work_threads = 1;
  ListenerFixture f(limits);
  ASSERT_TRUE(f.status().ok());
  RawClient held("127.0.0.1", f.port());
  held.Send(Get("/open-hold"));
  for (int i = 0; i < 500 && f.started() == 0; ++i) std::this_thread::sleep_for(milliseconds(2));
  ASSERT_EQ(f.started(), 1);
  RawClient echo("127.0.0.1", f.port());
  echo.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok");
  EXPECT_NE(echo.ReadUntil("\r\n\r\nok").find("\r\n\r\nok"), std::string::npos);
  f.gate().Open();
  EXPECT_NE(held.ReadUntil("released").find("released"), std::string::npos);
}

// Binds wait on the API server and kube-scheduler sends many at once; its filter is on the
// serial path: binds holding every bind worker, with more queued, leave the filter's worker free.
TEST(Listener, BindsHoldingEveryBindWorkerDoNotDelayAFilter) {
  ListenerLimits limits;
  limits.bind_threads = 2;
  limits.bind_queue = 8;
  limits.work_threads = 1;
  ListenerFixture f(limits);
  ASSERT_TRUE(f.status().ok());
  std::vector<std::unique_ptr<RawClient>> binds;
  for (int i = 0; i < 4; ++i) {  // two running, the others queued
    binds.push_back(std::make_unique<RawClient>("127.0.0.1", f.port()));
    binds.back()->Send(Get("/bind-hold"));
  }
  for (int i = 0; i < 500 && f.started() < 2; ++i) std::this_thread::sleep_for(milliseconds(2));
  ASSERT_EQ(f.started(), 2);
  RawClient filter("127.0.0.1", f.port());
  filter.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok");
  EXPECT_NE(filter.ReadUntil("\r\n\r\nok").find("\r\n\r\nok"), std::string::npos);
  f.gate().Open();
  for (auto& bind : binds)
    EXPECT_NE(bind->ReadUntil("released").find("released"), std::string::npos)
        << bind->ReadUntil("released");
}

// Parsing a few large bodies takes the cores: more at once than allowed are refused unread.
TEST(Listener, LargeBodiesBeyondTheirShareAre503BeforeTheyAreRead) {
  ListenerLimits limits;
  limits.large_body_bytes = 1000;
  limits.max_large_bodies = 1;
  ListenerFixture f(limits);
  ASSERT_TRUE(f.status().ok());
  RawClient first("127.0.0.1", f.port());
  first.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n");
  std::this_thread::sleep_for(milliseconds(100));
  RawClient second("127.0.0.1", f.port());
  second.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n");
  EXPECT_EQ(second.ReadUntil("\r\n").substr(0, 12), "HTTP/1.1 503");
  RawClient small("127.0.0.1", f.port());
  small.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n" +
             std::string(500, 's'));
  EXPECT_EQ(small.ReadUntil("\r\n").substr(0, 15), "HTTP/1.1 200 OK");
  first.Send(std::string(2000, 'z'));
  EXPECT_EQ(first.ReadUntil("\r\n").substr(0, 15), "HTTP/1.1 200 OK");
  // The place is free again once the first is answered.
  RawClient third("127.0.0.1", f.port());
  third.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n" +
             std::string(2000, 't'));
  EXPECT_EQ(third.ReadUntil("\r\n").substr(0, 15), "HTTP/1.1 200 OK");
}

TEST(Listener, AtTheConnectionLimitTheLongestIdleConnectionMakesRoom) {
  ListenerLimits limits;
  limits.max_connections = 4;
  ListenerFixture f(limits);
  ASSERT_TRUE(f.status().ok());
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 4; ++i) {
    idle.push_back(std::make_unique<RawClient>("127.0.0.1", f.port()));
    ASSERT_TRUE(idle.back()->connected());
    std::this_thread::sleep_for(milliseconds(20));  // accepted in this order
  }
  EXPECT_EQ(HealthStatusLine(f.port()), "HTTP/1.1 200 OK");
  EXPECT_TRUE(idle.front()->ClosedWithin(std::chrono::seconds(5)));
  EXPECT_GE(f.listener().counters().connections_evicted, 1u);
}

TEST(Listener, ExpectContinueGetsA100BeforeTheBody) {
  ListenerFixture f;
  ASSERT_TRUE(f.status().ok());
  RawClient client("127.0.0.1", f.port());
  client.Send(
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(client.ReadUntil("\r\n\r\n").substr(0, 25), "HTTP/1.1 100 Continue\r\n\r\n");
  client.Send("body");
  EXPECT_NE(client.ReadUntil("\r\n\r\nbody").find("\r\n\r\nbody"), std::string::npos);
}

TEST(Listener, UnknownPathsAndMethodsAreAnsweredNotServed) {
  ListenerFixture f;
  ASSERT_TRUE(f.status().ok());
  RawClient a("127.0.0.1", f.port());
  a.Send(Get("/nothing"));
  EXPECT_EQ(a.ReadUntil("\r\n").substr(0, 12), "HTTP/1.1 404");
  RawClient b("127.0.0.1", f.port());
  b.Send("POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(b.ReadUntil("\r\n").substr(0, 12), "HTTP/1.1 405");
  RawClient c("127.0.0.1", f.port());
  c.Send("NOT HTTP AT ALL\r\n\r\n");
  EXPECT_EQ(c.ReadUntil("\r\n").substr(0, 12), "HTTP/1.1 400");
}

// An address of this host that is not loopback: connecting to it makes the peer non-local.
std::string NonLoopbackAddress() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* i = list; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN];
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    if (std::string(text).rfind("127.", 0) != 0) found = text;
  }
  freeifaddrs(list);
  return found;
}

TEST(Listener, LocalOnlyRoutesRefuseAPeerFromAnotherAddress) {
  const std::string address = NonLoopbackAddress();
  if (address.empty()) GTEST_SKIP() << "this host has no non-loopback IPv4 address";
  ListenerFixture f({}, "0.0.0.0:0");
  ASSERT_TRUE(f.status().ok());
  RawClient remote(address, f.port());
  ASSERT_TRUE(remote.connected());
  remote.Send(Get("/local"));
  EXPECT_EQ(remote.ReadUntil("\r\n").substr(0, 12), "HTTP/1.1 403");
  RawClient local("127.0.0.1", f.port());
  local.Send(Get("/local"));
  EXPECT_EQ(local.ReadUntil("\r\n").substr(0, 15), "HTTP/1.1 200 OK");
  EXPECT_EQ(f.listener().counters().forbidden, 1u);
}

TEST(QueryString, DecodesEscapesPlusesAndEmptyValues) {
  std::vector<std::pair<std::string, std::string>> query;
  ASSERT_TRUE(DecodeQuery("pod=ns%2Fname&format=json&flag&&x=a+b", &query));
  ASSERT_EQ(query.size(), 4u);
  EXPECT_EQ(query[0], (std::pair<std::string, std::string>{"pod", "ns/name"}));
  EXPECT_EQ(query[2], (std::pair<std::string, std::string>{"flag", ""}));
  EXPECT_EQ(query[3], (std::pair<std::string, std::string>{"x", "a b"}));
  EXPECT_FALSE(DecodeQuery("pod=%2", &query));
  EXPECT_FALSE(DecodeQuery("pod=%zz", &query));
}

}  // namespace
}  // namespace tessera::http
