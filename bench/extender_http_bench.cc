// Filter latency through the extender's HTTP endpoint, as kube-scheduler sees it: a keep-alive
// client POSTs ExtenderArgs (the pod plus every node name, nodeCacheCapable) to /filter on a
// loopback `tessera serve` HTTP server whose service holds 1000 or 5000 nodes of 8 A100-40GB GPUs.
// Node states differ (node i holds i % 5 pods), so the equivalence cache helps only within a fill
// level. Each probe pod is released after its filter, outside the timed region, so every request
// sees the same cluster. Prints p50/p90/p99/max per case, and the same decision made in-process
// (no HTTP, no JSON) for comparison.
//
// Build and run (Release): ninja -C build-bench tessera_http_bench &&
// build-bench/bench/tessera_http_bench [PROBES]
// `--polled [SECONDS]`: filter latency at 1000 nodes while /ui/state and /explain are polled
// (RunPolled).

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_cluster.h"
#include "scheduler/scheduler_service.h"
#include "scheduler_runtime/embedded_cluster.h"
#include "scheduler_runtime/http_server.h"

namespace tessera {
namespace {

using codec::Json;

Json ContainerJson(const model::Container& c) {
  return {{"name", c.name}, {"image", "cuda"}, {"resources", {{"limits", c.limits}}}};
}

Json PodJson(const model::Pod& pod) {
  Json spec = {{"containers", Json::array()}, {"schedulerName", "tessera-scheduler"}};
  for (const auto& c : pod.containers) spec["containers"].push_back(ContainerJson(c));
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", pod.name},
            {"namespace", pod.ns},
            {"uid", pod.uid},
            {"annotations", pod.annotations}}},
          {"spec", spec},
          {"status", {{"phase", "Pending"}}}};
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

// A service over `nodes` nodes where node i holds i % 5 probe-shaped pods (different states
// side by side), served over loopback HTTP.
struct Served {
  scheduler_runtime::EmbeddedCluster cluster;
  scheduler::SchedulerService svc{config::SchedulerConfig{}, scheduler::ServiceOptions{}, cluster};
  std::vector<std::string> names;
  std::unique_ptr<scheduler_runtime::HttpServer> server;
  std::thread thread;

  Served(int nodes, Kind kind) {
    for (int i = 0; i < nodes; ++i) {
      names.push_back(NodeName(i));
      svc.view.UpsertNodeModel(MakeNode(names.back(), kind));
    }
    svc.view.SetSynced(true);
    int filled = 0;
    for (int i = 0; i < nodes; ++i) {
      for (int k = 0; k < i % 5; ++k) {
        model::Pod p = MakePod("fill-" + std::to_string(filled++), kind);
        Json args = {{"Pod", PodJson(p)}, {"NodeNames", {names[static_cast<size_t>(i)]}}};
        Json r = Json::parse(svc.verbs.Filter(args.dump()));
        if (!r["NodeNames"].is_array()) break;
      }
    }
    scheduler_runtime::HttpOptions ho;
    ho.bind = "127.0.0.1:0";
    server = std::make_unique<scheduler_runtime::HttpServer>(svc, ho);
    if (Status s = server->Listen(); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      std::exit(1);
    }
    thread = std::thread([this] { server->Serve(); });
  }
  ~Served() {
    server->Stop();
    thread.join();
  }
  Served(const Served&) = delete;
  Served& operator=(const Served&) = delete;

  httplib::Client Client() const {
    httplib::Client client("127.0.0.1", server->port());
    client.set_keep_alive(true);
    client.set_tcp_nodelay(true);  // as Go's net/http, which kube-scheduler uses
    return client;
  }
};

void Run(int nodes, Kind kind, int probes) {
  Served served(nodes, kind);
  scheduler::SchedulerService& svc = served.svc;
  const std::vector<std::string>& names = served.names;
  httplib::Client client = served.Client();
  std::vector<double> http_ms;
  std::vector<double> direct_ms;
  for (int i = 0; i < probes; ++i) {
    model::Pod p = MakePod("probe-" + std::to_string(i), kind);
    const Json pod = PodJson(p);
    const std::string body = Json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", names}}.dump();
    auto t0 = std::chrono::steady_clock::now();
    auto res = client.Post("/filter", body, "application/json");
    auto t1 = std::chrono::steady_clock::now();
    if (!res || res->status != 200 || res->body.find("\"NodeNames\":[\"") == std::string::npos) {
      std::fprintf(stderr, "filter failed: %s\n", res ? res->body.c_str() : "no answer");
      std::exit(1);
    }
    http_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    svc.view.DeletePod(pod);
    auto t2 = std::chrono::steady_clock::now();
    (void)svc.verbs.Filter(body);
    auto t3 = std::chrono::steady_clock::now();
    direct_ms.push_back(std::chrono::duration<double, std::milli>(t3 - t2).count());
    svc.view.DeletePod(pod);
  }
  std::printf(
      "%-7s %5d nodes  HTTP p50 %7.2f  p90 %7.2f  p99 %7.2f  max %7.2f ms | in-process "
      "p50 %7.2f  p99 %7.2f ms  (body %zu KiB, %d probes)\n",
      kind == Kind::kSharing ? "sharing" : "mig", nodes, Percentile(http_ms, 0.5),
      Percentile(http_ms, 0.9), Percentile(http_ms, 0.99),
      *std::max_element(http_ms.begin(), http_ms.end()), Percentile(direct_ms, 0.5),
      Percentile(direct_ms, 0.99), Json{{"NodeNames", names}}.dump().size() / 1024, probes);
  std::fflush(stdout);
}

// Filter latency while an operator's page polls: for `seconds`, filters as in Run, and another
// client GETs /ui/state (with the ETag it last got, as a browser does) and /explain for a pod
// that fits nowhere, every `poll_ms` (0: nobody polls). Each filter's probe is released, so the
// nodes it touched change between polls and /ui/state re-encodes them.
void RunPolled(int nodes, Kind kind, double seconds) {
  Served served(nodes, kind);
  model::Pod stuck = MakePod("stuck", kind);
  stuck.containers[0].limits["nvidia.com/gpumem"] = "900000";  // larger than any GPU
  served.svc.view.UpsertPodModel(stuck);
  (void)served.svc.verbs.Filter(
      Json{{"Pod", PodJson(stuck)}, {"Nodes", nullptr}, {"NodeNames", served.names}}.dump());
  std::printf("%-7s %5d nodes, filters for %.0f s while polled every:\n",
              kind == Kind::kSharing ? "sharing" : "mig", nodes, seconds);
  struct Variant {
    const char* name;
    int poll_ms;  // 0: nobody polls
    bool ui, explain;
  };
  for (const Variant& v :
       {Variant{"never", 0, false, false}, Variant{"ui 1 s", 1000, true, false},
        Variant{"explain 1 s", 1000, false, true}, Variant{"both 1 s", 1000, true, true},
        Variant{"both 100 ms", 100, true, true}, Variant{"never", 0, false, false}}) {
    const int poll_ms = v.poll_ms;
    std::atomic<bool> stop{false};
    std::vector<double> ui_ms;
    std::thread poller([&] {
      if (poll_ms == 0) return;
      httplib::Client client = served.Client();
      std::string etag;
      while (!stop) {
        auto t0 = std::chrono::steady_clock::now();
        httplib::Headers headers;
        if (!etag.empty()) headers.emplace("If-None-Match", etag);
        bool ok = true;
        if (v.ui) {
          auto ui = client.Get("/ui/state", headers);
          ok = ok && ui && (ui->status == 200 || ui->status == 304);
          if (ui && ui->status == 200) etag = ui->get_header_value("ETag");
        }
        if (v.explain) {
          auto ex = client.Get("/explain?pod=bench/stuck");
          ok = ok && ex && ex->status == 200;
        }
        if (!ok) {
          std::fprintf(stderr, "poll failed\n");
          std::exit(1);
        }
        ui_ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
        std::this_thread::sleep_until(t0 + std::chrono::milliseconds(poll_ms));
      }
    });
    httplib::Client client = served.Client();
    std::vector<double> ms;
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (int i = 0; std::chrono::steady_clock::now() < end; ++i) {
      model::Pod p = MakePod("probe-" + std::to_string(i), kind);
      const Json pod = PodJson(p);
      const std::string body =
          Json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", served.names}}.dump();
      auto t0 = std::chrono::steady_clock::now();
      auto res = client.Post("/filter", body, "application/json");
      auto t1 = std::chrono::steady_clock::now();
      if (!res || res->status != 200) {
        std::fprintf(stderr, "filter failed\n");
        std::exit(1);
      }
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      served.svc.view.DeletePod(pod);
    }
    stop = true;
    poller.join();
    std::printf("  %-12s filter p50 %6.2f  p99 %6.2f  max %6.2f ms (%zu filters)", v.name,
                Percentile(ms, 0.5), Percentile(ms, 0.99), *std::max_element(ms.begin(), ms.end()),
                ms.size());
    if (!ui_ms.empty()) {
      std::printf(" | poll p50 %6.2f  max %6.2f ms (%zu polls)", Percentile(ui_ms, 0.5),
                  *std::max_element(ui_ms.begin(), ui_ms.end()), ui_ms.size());
    }
    std::printf("\n");
    std::fflush(stdout);
  }
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);  // no per-event log lines
  if (argc > 1 && std::string(argv[1]) == "--polled") {
    const double seconds = argc > 2 ? std::atof(argv[2]) : 10;
    tessera::RunPolled(1000, tessera::Kind::kSharing, seconds);
    tessera::RunPolled(1000, tessera::Kind::kMig, seconds);
    return 0;
  }
  const int probes = argc > 1 ? std::atoi(argv[1]) : 200;
  for (int nodes : {1000, 5000}) {
    tessera::Run(nodes, tessera::Kind::kSharing, probes);
    tessera::Run(nodes, tessera::Kind::kMig, probes);
  }
  return 0;
}
