#include "scheduler_runtime/http_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include "core/mig/catalog.h"
#include "scheduler_runtime/embedded_cluster.h"
#include "sim/scenario.h"
#include "support/builders.h"
#include "support/k8s_json.h"

namespace tessera::scheduler_runtime {
namespace {

using codec::Json;
namespace fs = std::filesystem;

constexpr const char* kScenario = R"(
policy: { node: binpack, gpu: spread }
nodes:
  - name: node-a
    gpus:
      - model: "NVIDIA RTX PRO 6000 Blackwell Server Edition"
        mode: mig
        uuid: GPU-30512c46-708b-f374-5698-ee24be6cd626
  - name: node-b
    gpus: [{ model: "Tesla V100-PCIE-32GB", memoryMiB: 32768, uuid: GPU-b0 }]
)";

// A server on a free loopback port, serving an embedded cluster.
class ServerFixture {
 public:
  explicit ServerFixture(HttpOptions options = {},
                         std::unique_ptr<EmbeddedCluster> cluster = nullptr,
                         bool hami_node_lock = false)
      : cluster_(cluster ? std::move(cluster) : std::make_unique<EmbeddedCluster>()) {
    auto catalog = mig::GpuModelCatalog::Builtin();
    auto scenario = sim::LoadScenarioText(kScenario, catalog.value(), "test.yaml");
    EXPECT_TRUE(scenario.ok()) << scenario.error().message;
    scheduler::ServiceOptions so;
    so.ready_wait = std::chrono::milliseconds(10);
    so.hami_node_lock = hami_node_lock;
    service_ = std::make_unique<scheduler::SchedulerService>(scenario->config, so, *cluster_);
    EmbeddedCluster::Load(*scenario, service_->view);
    options.bind = "127.0.0.1:0";
    server_ = std::make_unique<HttpServer>(*service_, options);
    listen_status_ = server_->Listen();
    if (listen_status_.ok()) thread_ = std::thread([this] { server_->Serve(); });
  }
  ~ServerFixture() {
    server_->Stop();
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return server_->port(); }
  const Status& listen_status() const { return listen_status_; }
  HttpServer& server() { return *server_; }
  EmbeddedCluster& cluster() { return *cluster_; }

 private:
  std::unique_ptr<EmbeddedCluster> cluster_;
  std::unique_ptr<scheduler::SchedulerService> service_;
  std::unique_ptr<HttpServer> server_;
  Status listen_status_;
  std::thread thread_;
};

std::string FilterBody(const model::Pod& pod) {
  return Json{{"Pod", testing::PodJson(pod)}, {"NodeNames", {"node-a", "node-b"}}}.dump();
}

TEST(HttpServer, FilterAndBindOverHttpUpdateTheEmbeddedCluster) {
  ServerFixture f;
  ASSERT_TRUE(f.listen_status().ok()) << f.listen_status().message();
  httplib::Client client("127.0.0.1", f.port());
  auto pod = testing::PodBuilder("default/p1").Container(2, 8000).MigMode().Build();
  auto res = client.Post("/filter", FilterBody(pod), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  Json r = Json::parse(res->body);
  ASSERT_EQ(r["NodeNames"], Json::parse(R"(["node-a"])")) << res->body;
  // The default --write-placement=bind: filter answered from memory, bind writes the placement.
  EXPECT_TRUE(f.cluster().Annotations("default/p1")["hami.io/vgpu-mig-allocations"].empty());
  auto bind = client.Post(
      "/bind", R"({"PodName":"p1","PodNamespace":"default","PodUID":"uid-p1","Node":"node-a"})",
      "application/json");
  ASSERT_TRUE(bind);
  EXPECT_EQ(Json::parse(bind->body)["Error"], "");
  EXPECT_EQ(f.cluster().BoundNode("default/p1"), "node-a");
  EXPECT_FALSE(f.cluster().Annotations("default/p1")["hami.io/vgpu-mig-allocations"].empty());
}

// A cluster whose binds wait until the test lets them go: an API server slow to bind.
class SlowBindCluster : public EmbeddedCluster {
 public:
  Status BindPod(const scheduler::PodRef& pod, const std::string& node,
                 const scheduler::BindingAnnotations& annotations) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++binding_;
      changed_.notify_all();
      changed_.wait(lock, [this] { return released_; });
    }
    return EmbeddedCluster::BindPod(pod, node, annotations);
  }
  bool WaitForBinds(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(5), [&] { return binding_ >= n; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  int binding_ = 0;
  bool released_ = false;
};

// Pod default/p1 filtered onto node-a, and its bind sent from a thread of its own, where it
// waits in the slow cluster until Finish (or the destructor) lets it go.
class BindInFlight {
 public:
  BindInFlight(ServerFixture& f, SlowBindCluster& cluster) : cluster_(cluster) {
    httplib::Client client("127.0.0.1", f.port());
    auto pod = testing::PodBuilder("default/p1").Container(1, 4000).MigMode().Build();
    filtered_ = static_cast<bool>(client.Post("/filter", FilterBody(pod), "application/json"));
    thread_ = std::thread([port = f.port()] {
      httplib::Client binder("127.0.0.1", port);
      auto res = binder.Post(
          "/bind", R"({"PodName":"p1","PodNamespace":"default","PodUID":"uid-p1","Node":"node-a"})",
          "application/json");
      EXPECT_TRUE(res && Json::parse(res->body)["Error"] == "");
    });
  }
  ~BindInFlight() { Finish(); }
  BindInFlight(const BindInFlight&) = delete;
  BindInFlight& operator=(const BindInFlight&) = delete;
  // Whether the bind reached the cluster (and waits there).
  bool Waiting() { return filtered_ && cluster_.WaitForBinds(1); }
  void Finish() {
    cluster_.Release();
    if (thread_.joinable()) thread_.join();
  }

 private:
  SlowBindCluster& cluster_;
  bool filtered_ = false;
  std::thread thread_;
};

// kube-scheduler binds concurrently, each bind waiting on the API server, while its filters come
// one at a time on its serial path: binds holding every bind worker leave the filter's worker
// free (before binds had a lane of their own, this filter waited for them).
TEST(HttpServer, AFilterIsAnsweredWhileBindsWaitOnTheApiServer) {
  HttpOptions options;
  options.limits.work_threads = 1;
  options.limits.bind_threads = 1;
  auto owned = std::make_unique<SlowBindCluster>();
  SlowBindCluster& cluster = *owned;
  ServerFixture f(options, std::move(owned));
  ASSERT_TRUE(f.listen_status().ok()) << f.listen_status().message();
  BindInFlight bind(f, cluster);
  ASSERT_TRUE(bind.Waiting());
  httplib::Client filter("127.0.0.1", f.port());
  filter.set_read_timeout(3, 0);
  auto second = testing::PodBuilder("default/p2").Container(1, 4000).MigMode().Build();
  auto res = filter.Post("/filter", FilterBody(second), "application/json");
  const bool answered = res && res->status == 200;
  bind.Finish();
  EXPECT_TRUE(answered) << "the filter waited behind a bind";
  EXPECT_EQ(f.cluster().BoundNode("default/p1"), "node-a");
}

// With HAMi's node lock a bind keeps the filter's worker while it runs: the filter waits for
// it, so it cannot run ahead and spread a burst past every node whose bind is under way.
TEST(HttpServer, WithTheNodeLockAFilterWaitsForTheBindsOnItsWorkers) {
  HttpOptions options;
  options.limits.work_threads = 1;
  auto owned = std::make_unique<SlowBindCluster>();
  SlowBindCluster& cluster = *owned;
  ServerFixture f(options, std::move(owned), /*hami_node_lock=*/true);
  ASSERT_TRUE(f.listen_status().ok()) << f.listen_status().message();
  BindInFlight bind(f, cluster);
  ASSERT_TRUE(bind.Waiting());
  std::atomic<bool> answered{false};
  std::thread filter([&f, &answered] {
    httplib::Client c("127.0.0.1", f.port());
    auto second = testing::PodBuilder("default/p2").Container(1, 4000).MigMode().Build();
    auto res = c.Post("/filter", FilterBody(second), "application/json");
    answered = res && res->status == 200;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(answered.load()) << "the filter ran while the bind held the worker";
  bind.Finish();
  filter.join();
  EXPECT_TRUE(answered.load());
}

// kube-scheduler's preemptVerb: the victims by uid; a malformed body is a failed call (the
// protocol has no error field).
TEST(HttpServer, PreemptNamesThePodsHoldingTheSlicesThePodNeeds) {
  ServerFixture f;
  ASSERT_TRUE(f.listen_status().ok()) << f.listen_status().message();
  httplib::Client client("127.0.0.1", f.port());
  auto low = testing::PodBuilder("default/p1").Container(2, 8000).MigMode().Build();
  ASSERT_TRUE(client.Post("/filter", FilterBody(low), "application/json"));
  auto bind = client.Post(
      "/bind", R"({"PodName":"p1","PodNamespace":"default","PodUID":"uid-p1","Node":"node-a"})",
      "application/json");
  ASSERT_TRUE(bind);
  ASSERT_EQ(Json::parse(bind->body)["Error"], "");
  // The whole GPU as one 4g.96gb instance: p1's two instances must go.
  auto high =
      testing::PodBuilder("default/big").Priority(1000).Container(1, 90000).MigMode().Build();
  const Json args = {{"Pod", testing::PodJson(high)},
                     {"NodeNameToMetaVictims", {{"node-a", {{"Pods", Json::array()}}}}}};
  auto res = client.Post("/preempt", args.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(Json::parse(res->body)["NodeNameToMetaVictims"]["node-a"]["Pods"],
            Json::parse(R"([{"UID":"uid-p1"}])"))
      << res->body;
  auto bad = client.Post("/preempt", R"({"Pod":1})", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
}

TEST(HttpServer, ExplainSaysWhyAFilteredPodFitsNowhereInTextAndJson) {
  ServerFixture f;
  ASSERT_TRUE(f.listen_status().ok()) << f.listen_status().message();
  httplib::Client client("127.0.0.1", f.port());
  // 40000 MiB on one GPU: more than node-b's V100 has, and not a MIG request for node-a.
  auto pod = testing::PodBuilder("default/huge").Container(1, 40000).Build();
  pod.annotations["nvidia.com/vgpu-mode"] = "hami-core";
  auto filtered = client.Post("/filter", FilterBody(pod), "application/json");
  ASSERT_TRUE(filtered);
  // Neither node can ever hold it: preemption cannot help on either.
  ASSERT_EQ(Json::parse(filtered->body)["FailedAndUnresolvableNodes"].size(), 2U) << filtered->body;

  auto text = client.Get("/explain?pod=default/huge");
  ASSERT_TRUE(text);
  EXPECT_EQ(text->status, 200);
  EXPECT_NE(text->body.find("fits nowhere now"), std::string::npos) << text->body;
  EXPECT_NE(text->body.find("node node-b: 1/1 CardInsufficientMemory"), std::string::npos)
      << text->body;
  EXPECT_NE(text->body.find("no node can hold it even empty"), std::string::npos) << text->body;

  auto json = client.Get("/explain?pod=default/huge&format=json");
  ASSERT_TRUE(json);
  EXPECT_EQ(json->get_header_value("Content-Type"), "application/json");
  Json j = Json::parse(json->body);
  EXPECT_EQ(j["pod"], "default/huge");
  EXPECT_FALSE(j["fits"].get<bool>());
  EXPECT_TRUE(j["neverFits"].get<bool>());
  ASSERT_EQ(j["nodes"].size(), 2U);
  EXPECT_EQ(j["nodes"][1]["gpus"][0]["reason"], "CardInsufficientMemory");
  EXPECT_EQ(j["nodes"][0]["gpus"][0]["reason"], "CardTypeMismatch");
}

TEST(HttpServer, ExplainRefusesMalformedQueriesAndUnknownPods) {
  ServerFixture f;
  ASSERT_TRUE(f.listen_status().ok()) << f.listen_status().message();
  httplib::Client client("127.0.0.1", f.port());
  auto status_of = [&](const std::string& path) {
    auto res = client.Get(path);
    return res ? res->status : -1;
  };
  EXPECT_EQ(status_of("/explain"), 400);
  EXPECT_EQ(status_of("/explain?pod=nonamespace"), 400);
  EXPECT_EQ(status_of("/explain?pod=Default/p"), 400);
  EXPECT_EQ(status_of("/explain?pod=default/p&format=xml"), 400);
  EXPECT_EQ(status_of("/explain?pod=default/p&namespace=n"), 400);
  EXPECT_EQ(status_of("/explain?pod=default/p&node=a/b"), 400);
  EXPECT_EQ(status_of("/explain?pod=default/p&node=n"), 404);  // a valid query, no such pod
  EXPECT_EQ(status_of("/explain?pod=default/a&pod=default/b"), 400);
  EXPECT_EQ(status_of("/explain?pod=default/nobody"), 404);
}

// /defrag plans on the scheduler's view (here: nothing to do) and counts the plan; it refuses
// what it does not understand and limits bounded by the server.
TEST(HttpServer, DefragAnswersAPlanAndRefusesMalformedQueries) {
  ServerFixture f;
  ASSERT_TRUE(f.listen_status().ok()) << f.listen_status().message();
  httplib::Client client("127.0.0.1", f.port());
  auto json = client.Get("/defrag?format=json&max-evictions=2&min-gain=0.5");
  ASSERT_TRUE(json);
  EXPECT_EQ(json->status, 200) << json->body;
  EXPECT_EQ(json->get_header_value("Content-Type"), "application/json");
  const Json plan = Json::parse(json->body);
  EXPECT_EQ(plan["mode"], "nothing");
  EXPECT_EQ(plan["limits"]["maxEvictions"], 2);
  auto text = client.Get("/defrag");
  ASSERT_TRUE(text);
  EXPECT_EQ(text->status, 200);
  EXPECT_NE(text->body.find("defrag plan"), std::string::npos) << text->body;
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("tessera_defrag_plans_total{mode=\"nothing\"} 2"), std::string::npos)
      << metrics->body;
  auto status_of = [&](const std::string& path) {
    auto res = client.Get(path);
    return res ? res->status : -1;
  };
  EXPECT_EQ(status_of("/defrag?format=xml"), 400);
  EXPECT_EQ(status_of("/defrag?pod=default/p"), 400);
  EXPECT_EQ(status_of("/defrag?max-evictions=33"), 400);
  EXPECT_EQ(status_of("/defrag?max-evictions=-1"), 400);
  EXPECT_EQ(status_of("/defrag?max-evictions=2x"), 400);
  EXPECT_EQ(status_of("/defrag?min-gain=0"), 400);
  EXPECT_EQ(status_of("/defrag?min-gain=nan"), 400);
  EXPECT_EQ(status_of("/defrag?min-fragmentation-drop=-1"), 400);
  EXPECT_EQ(status_of("/defrag?max-evictions=1&max-evictions=2"), 400);
}

TEST(HttpServer, EmptyBodyIs400AndGarbageGetsAnErrorField) {
  ServerFixture f;
  ASSERT_TRUE(f.listen_status().ok());
  httplib::Client client("127.0.0.1", f.port());
  auto empty = client.Post("/filter", "", "application/json");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->status, 400);
  auto garbage = client.Post("/filter", "\x01\x02not json", "application/json");
  ASSERT_TRUE(garbage);
  EXPECT_EQ(garbage->status, 200);
  EXPECT_NE(Json::parse(garbage->body)["Error"].get<std::string>(), "");
  auto webhook = client.Post("/webhook", "{]", "application/json");
  ASSERT_TRUE(webhook);
  EXPECT_FALSE(Json::parse(webhook->body)["response"]["allowed"].get<bool>());
}

TEST(HttpServer, OversizedBodyIsRefused) {
  HttpOptions o;
  o.limits.max_body_bytes = 1024;
  ServerFixture f(o);
  ASSERT_TRUE(f.listen_status().ok());
  httplib::Client client("127.0.0.1", f.port());
  auto res = client.Post("/filter", std::string(4096, ' '), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
}

TEST(HttpServer, HealthReadinessAndMetrics) {
  ServerFixture f;
  ASSERT_TRUE(f.listen_status().ok());
  httplib::Client client("127.0.0.1", f.port());
  auto health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto ready = client.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  auto pod = testing::PodBuilder("default/p").Container(1, 1000).Build();
  ASSERT_TRUE(client.Post("/filter", FilterBody(pod), "application/json"));
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("tessera_filter_requests_total{result=\"scheduled\"} 1"),
            std::string::npos)
      << metrics->body;
  EXPECT_NE(metrics->body.find("hami_gpu_memory_limit_bytes{"), std::string::npos);
  EXPECT_NE(metrics->body.find("node=\"node-b\""), std::string::npos);
}

TEST(HttpServer, MetricsOnlyListenerWithLegacyNames) {
  HttpOptions o;
  o.metrics_only = true;
  o.legacy_metrics = true;
  o.tls_cert_file = "/nonexistent/tls.crt";  // ignored: the metrics listener is plain HTTP
  o.tls_key_file = "/nonexistent/tls.key";
  ServerFixture f(o);
  ASSERT_TRUE(f.listen_status().ok()) << f.listen_status().message();
  httplib::Client client("127.0.0.1", f.port());
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("hami_gpu_memory_limit_bytes{"), std::string::npos);
  EXPECT_NE(metrics->body.find("GPUDeviceMemoryLimit{zone=\"vGPU\",nodeid=\"node-b\","
                               "deviceuuid=\"GPU-b0\",deviceidx=\"0\""),
            std::string::npos)
      << metrics->body;
  for (const char* name : {"GPUDeviceCoreLimit{", "GPUDeviceMemoryAllocated{",
                           "GPUDeviceSharedNum{", "GPUDeviceCoreAllocated{"}) {
    EXPECT_NE(metrics->body.find(name), std::string::npos) << name;
  }
  EXPECT_NE(metrics->body.find("devicecores=\""), std::string::npos);
  auto filter = client.Post("/filter", "{}", "application/json");
  ASSERT_TRUE(filter);
  EXPECT_EQ(filter->status, 404);
  auto ready = client.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 404);
}

TEST(HttpServer, NoLegacyMetricNamesByDefault) {
  ServerFixture f;
  ASSERT_TRUE(f.listen_status().ok());
  httplib::Client client("127.0.0.1", f.port());
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->body.find("GPUDevice"), std::string::npos);
}

TEST(HttpServer, BadMetricsAddressNamesItsFlag) {
  scheduler::ServiceOptions so;
  EmbeddedCluster cluster;
  scheduler::SchedulerService svc(config::SchedulerConfig{}, so, cluster);
  HttpOptions o;
  o.bind = "9395";
  o.metrics_only = true;
  o.flag = "--metrics-bind-address";
  HttpServer server(svc, o);
  Status s = server.Listen();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "--metrics-bind-address 9395: expected HOST:PORT");
}

// With SO_REUSEPORT (cpp-httplib's default) a second server on the same address started and
// took half the requests with a state of its own: it must fail to start instead.
TEST(HttpServer, ASecondServerOnATakenPortFailsToStart) {
  ServerFixture first;
  ASSERT_TRUE(first.listen_status().ok());
  httplib::Client client("127.0.0.1", first.port());
  auto health = client.Get("/healthz");  // serving (and so stoppable) before the test ends
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  scheduler::ServiceOptions so;
  EmbeddedCluster cluster;
  scheduler::SchedulerService svc(config::SchedulerConfig{}, so, cluster);
  HttpOptions o;
  o.bind = "127.0.0.1:" + std::to_string(first.port());
  HttpServer second(svc, o);
  Status s = second.Listen();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "--http-bind " + o.bind +
                             ": cannot listen (Address already in use; is another process using "
                             "the port?)");
}

TEST(HttpServer, BadBindAddressIsAClearError) {
  scheduler::ServiceOptions so;
  EmbeddedCluster cluster;
  scheduler::SchedulerService svc(config::SchedulerConfig{}, so, cluster);
  HttpOptions o;
  o.bind = "127.0.0.1:notaport";
  HttpServer server(svc, o);
  Status s = server.Listen();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "--http-bind 127.0.0.1:notaport: bad port");
}

// Writes a self-signed certificate for 127.0.0.1 with the openssl CLI.
bool MakeCert(const fs::path& dir, const std::string& cn) {
  const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=" + cn +
                          " -addext subjectAltName=IP:127.0.0.1 -keyout " +
                          (dir / "tls.key").string() + " -out " + (dir / "tls.crt").string() +
                          " >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

TEST(HttpServer, ServesHttpsAndReloadsARotatedCertificate) {
  const fs::path dir = fs::temp_directory_path() / ("tessera-tls-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  ASSERT_TRUE(MakeCert(dir, "first")) << "openssl CLI missing?";
  HttpOptions o;
  o.tls_cert_file = (dir / "tls.crt").string();
  o.tls_key_file = (dir / "tls.key").string();
  ServerFixture f(o);
  ASSERT_TRUE(f.listen_status().ok()) << f.listen_status().message();
  EXPECT_EQ(f.server().tls_reloads(), 1u);
  {
    httplib::SSLClient client("127.0.0.1", f.port());
    client.set_ca_cert_path(o.tls_cert_file.c_str());
    client.enable_server_certificate_verification(true);
    auto res = client.Get("/healthz");
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200);
  }
  // Rotate: new key pair in place; the next handshake (after the 1 s check interval) uses it.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  ASSERT_TRUE(MakeCert(dir, "second"));
  for (int i = 0; i < 50 && f.server().tls_reloads() < 2; ++i) {
    httplib::SSLClient client("127.0.0.1", f.port());
    client.enable_server_certificate_verification(false);
    (void)client.Get("/healthz");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(f.server().tls_reloads(), 2u);
  httplib::SSLClient client("127.0.0.1", f.port());
  client.set_ca_cert_path(o.tls_cert_file.c_str());
  client.enable_server_certificate_verification(true);
  auto res = client.Get("/healthz");
  ASSERT_TRUE(res) << "the new certificate verifies: " << httplib::to_string(res.error());
  fs::remove_all(dir);
}

// The data endpoints ask the read check (serve wires it to TokenReview + SubjectAccessReview) and
// answer its refusal; the probes, the static page and the webhook do not ask it.
TEST(HttpServer, ReadEndpointsAnswerOnlyWhatTheReadCheckAllows) {
  std::vector<std::string> asked;
  std::mutex mu;
  HttpOptions o;
  o.read_access = [&](std::string_view header, std::string_view path) {
    std::lock_guard<std::mutex> lock(mu);
    asked.emplace_back(path);
    if (header.empty()) return ReadAccessDecision{401, "no token"};
    if (header != "Bearer reader") return ReadAccessDecision{403, "may not read"};
    return ReadAccessDecision{200, ""};
  };
  ServerFixture f(o);
  ASSERT_TRUE(f.listen_status().ok());
  httplib::Client client("127.0.0.1", f.port());
  for (const char* path : {"/metrics", "/ui/state", "/explain?pod=default/p", "/defrag"}) {
    auto anonymous = client.Get(path);
    ASSERT_TRUE(anonymous);
    EXPECT_EQ(anonymous->status, 401) << path;
    EXPECT_EQ(anonymous->get_header_value("WWW-Authenticate"), "Bearer");
    auto other = client.Get(path, {{"Authorization", "Bearer someone"}});
    ASSERT_TRUE(other);
    EXPECT_EQ(other->status, 403) << path;
    auto reader = client.Get(path, {{"Authorization", "Bearer reader"}});
    ASSERT_TRUE(reader);
    EXPECT_NE(reader->status, 401) << path;
    EXPECT_NE(reader->status, 403) << path;
  }
  const size_t checks = asked.size();
  EXPECT_EQ(checks, 12u);
  for (const char* path : {"/healthz", "/readyz", "/ui"}) {
    auto res = client.Get(path);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << path;
  }
  EXPECT_EQ(asked.size(), checks);
}

TEST(HttpServer, MissingCertificateIsAClearError) {
  HttpOptions o;
  o.tls_cert_file = "/nonexistent/tls.crt";
  o.tls_key_file = "/nonexistent/tls.key";
  ServerFixture f(o);
  ASSERT_FALSE(f.listen_status().ok());
  EXPECT_EQ(f.listen_status().message(), "TLS certificate /nonexistent/tls.crt: cannot stat");
}

}  // namespace
}  // namespace tessera::scheduler_runtime
