// Filter latency through the extender's HTTP endpoint, as kube-scheduler sees it: a keep-alive
// client POSTs ExtenderArgs (the pod plus every node name, nodeCacheCapable) to /filter on a
// loopback `tessera serve` HTTP server whose service holds 1000 or 5000 nodes of 8 A100-40GB GPUs.
// Node states differ (node i holds i % 5 pods), so the equivalence cache helps only within a fill
// level. Each probe pod is released after its filter, outside the timed region, so every request
// sees the same cluster. Prints p50/p90/p99/max per case, and the same decision made in-process
// (no HTTP, no JSON) for comparison.
//
// Build and run (Release): ninja -C build-bench tessera_http_bench &&
// build-bench/bench/tessera_http_bench

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "bench_cluster.h"
#include "serve/embedded_cluster.h"
#include "serve/http_server.h"
#include "service/extender_service.h"

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

void Run(int nodes, Kind kind, int probes) {
  serve::EmbeddedCluster cluster;
  service::ServiceOptions so;
  service::ExtenderService svc(config::SchedulerConfig{}, so, cluster);
  std::vector<std::string> names;
  for (int i = 0; i < nodes; ++i) {
    names.push_back(NodeName(i));
    svc.UpsertNodeModel(MakeNode(names.back(), kind));
  }
  svc.SetSynced(true);
  // Fill: node i holds i % 5 probe-shaped pods (different states side by side).
  int filled = 0;
  for (int i = 0; i < nodes; ++i) {
    for (int k = 0; k < i % 5; ++k) {
      model::Pod p = MakePod("fill-" + std::to_string(filled++), kind);
      Json args = {{"Pod", PodJson(p)}, {"NodeNames", {names[static_cast<size_t>(i)]}}};
      Json r = Json::parse(svc.Filter(args.dump()));
      if (!r["NodeNames"].is_array()) break;
    }
  }
  serve::HttpOptions ho;
  ho.bind = "127.0.0.1:0";
  serve::HttpServer server(svc, ho);
  if (Status s = server.Listen(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    std::exit(1);
  }
  std::thread thread([&] { server.Serve(); });
  httplib::Client client("127.0.0.1", server.port());
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);  // as Go's net/http, which kube-scheduler uses
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
    svc.DeletePod(pod);
    auto t2 = std::chrono::steady_clock::now();
    (void)svc.Filter(body);
    auto t3 = std::chrono::steady_clock::now();
    direct_ms.push_back(std::chrono::duration<double, std::milli>(t3 - t2).count());
    svc.DeletePod(pod);
  }
  server.Stop();
  thread.join();
  std::printf(
      "%-7s %5d nodes  HTTP p50 %7.2f  p90 %7.2f  p99 %7.2f  max %7.2f ms | in-process "
      "p50 %7.2f  p99 %7.2f ms  (body %zu KiB, %d probes)\n",
      kind == Kind::kSharing ? "sharing" : "mig", nodes, Percentile(http_ms, 0.5),
      Percentile(http_ms, 0.9), Percentile(http_ms, 0.99),
      *std::max_element(http_ms.begin(), http_ms.end()), Percentile(direct_ms, 0.5),
      Percentile(direct_ms, 0.99), Json{{"NodeNames", names}}.dump().size() / 1024, probes);
  std::fflush(stdout);
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);  // no per-event log lines
  const int probes = argc > 1 ? std::atoi(argv[1]) : 200;
  for (int nodes : {1000, 5000}) {
    tessera::Run(nodes, tessera::Kind::kSharing, probes);
    tessera::Run(nodes, tessera::Kind::kMig, probes);
  }
  return 0;
}
