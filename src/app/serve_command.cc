#include "app/serve_command.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "adapters/threads/thread_pool.h"
#include "adapters/yaml/yaml_json.h"
#include "app/device_config_file.h"
#include "app/serve_flags.h"
#include "core/common/duration.h"
#include "core/config/config_codec.h"
#include "core/mig/catalog.h"
#include "core/sched/preferences.h"
#include "scheduler/extender_service.h"
#include "scheduler_runtime/embedded_cluster.h"
#include "scheduler_runtime/http_server.h"
#include "scheduler_runtime/kube_cluster.h"
#include "sim/scenario.h"

namespace tessera::app {
namespace {

int Fail(const std::string& message) {
  spdlog::error("{}", message);
  return 1;
}

std::string Hostname() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "tessera");
  return host;
}

std::string DefaultIdentity() {
  std::random_device rd;
  std::ostringstream id;
  id << Hostname() << "_" << std::hex << rd();
  return id.str();
}

// A Go-style duration flag rounded up to whole seconds; negative or malformed is an error.
Result<std::chrono::seconds> DurationFlag(const std::string& flag, const std::string& text) {
  auto d = ParseDuration(text);
  if (!d.ok()) return Error{flag + " " + text + ": want a duration such as 60s, 5m or 1m30s"};
  return std::chrono::ceil<std::chrono::seconds>(d.value());
}

// Blocks SIGINT/SIGTERM in every thread; one waiter turns them into a clean stop.
sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

}  // namespace

int RunServeCommand(const ServeOptions& options) {
  const std::string log_level =
      EffectiveLogLevel(options.log_level, options.debug, options.verbosity);
  if (log_level == "debug") spdlog::set_level(spdlog::level::debug);
  if (log_level == "warn") spdlog::set_level(spdlog::level::warn);
  if (!options.kubeconfig.empty() && !options.cluster.empty()) {
    return Fail("--kubeconfig and --cluster are exclusive: one cluster source at a time");
  }
  auto catalog = mig::GpuModelCatalog::Builtin();
  if (!catalog.ok()) return Fail("built-in MIG table: " + catalog.error().message);

  scheduler::ServiceOptions so;
  std::optional<sim::Scenario> scenario;
  config::SchedulerConfig config;
  if (!options.cluster.empty()) {
    auto loaded = sim::LoadScenarioFile(options.cluster, catalog.value());
    if (!loaded.ok()) return Fail(loaded.error().message);
    scenario = std::move(loaded.value());
    config = scenario->config;
    so.policy = scenario->policy;
  }
  if (!options.device_config.empty()) {
    auto cfg = LoadDeviceConfig(options.device_config);
    if (!cfg.ok()) return Fail(cfg.error().message);
    config = std::move(cfg.value());
  }
  for (const auto& w : config.warnings) spdlog::warn("{}", w);
  // A policy flag overrides the scenario's; without either, tessera's own ranking decides.
  if (Status s = sched::AddNodePolicyDefinitions(options.node_policy_definitions,
                                                 &so.policy.defined_node_policies);
      !s.ok()) {
    return Fail("--define-node-policy: " + s.message());
  }
  if (!options.node_policy.empty()) {
    auto np = sched::ParseNodePolicy(options.node_policy, so.policy.defined_node_policies);
    if (!np.ok()) return Fail("--node-scheduler-policy: " + np.error().message);
    so.policy.node = np.value();
  }
  if (!options.gpu_policy.empty()) {
    auto gp = sched::ParseGpuPolicy(options.gpu_policy);
    if (!gp.ok()) return Fail("--gpu-scheduler-policy: " + gp.error().message);
    so.policy.gpu = options.gpu_policy;
  }
  if (scenario == std::nullopt || !options.mig_demand_prior.empty()) {
    auto prior = sched::ParseMigPrior(options.mig_demand_prior, options.mig_prior_strength);
    if (!prior.ok()) return Fail("--mig-demand-prior: " + prior.error().message);
    so.policy.mig_prior = std::move(prior.value());
  }
  if (options.mig_allow_larger_profile) so.policy.mig_allow_larger_profiles = true;
  spdlog::info("node policy: {} (gpu policy: {})", so.policy.node.Definition(), so.policy.gpu);
  for (const sched::NodePolicy& defined : so.policy.defined_node_policies) {
    spdlog::info("defined node policy: {}", defined.Definition());
  }
  so.webhook.scheduler_name = options.scheduler_name;
  so.webhook.force_overwrite_default_scheduler = options.force_overwrite_default_scheduler;
  auto timeout = ParseDuration(options.reservation_timeout);
  if (!timeout.ok() || timeout.value().count() <= 0) {
    return Fail("--reservation-timeout " + options.reservation_timeout +
                ": want a positive duration such as 60s, 2m or 1m30s");
  }
  so.reservation_timeout = timeout.value();
  if (options.node_lock != "none" && options.node_lock != "hami") {
    return Fail("--node-lock: want none or hami, got " + options.node_lock);
  }
  so.hami_node_lock = options.node_lock == "hami";
  if (options.write_placement != "filter" && options.write_placement != "bind") {
    return Fail("--write-placement: want filter or bind, got " + options.write_placement);
  }
  so.write_placement_in_bind = options.write_placement == "bind";
  auto selector = ParseNodeSelector(options.node_label_selector);
  if (!selector.ok()) return Fail(selector.error().message);
  so.node_selector = std::move(selector.value());
  auto grace = DurationFlag("--node-liveness-grace", options.node_liveness_grace);
  if (!grace.ok()) return Fail(grace.error().message);
  so.node_liveness_grace = grace.value();
  // An embedded cluster has no kubelet to keep nodes' allocatable GPU counts up.
  if (scenario) so.node_liveness_grace = std::chrono::seconds(0);
  auto requeue = DurationFlag("--requeue-after", options.requeue_after);
  if (!requeue.ok()) return Fail(requeue.error().message);
  so.requeue_after = requeue.value();
  auto lock_timeout = DurationFlag("--node-lock-timeout", options.node_lock_timeout);
  if (!lock_timeout.ok() || lock_timeout.value().count() <= 0) {
    return Fail("--node-lock-timeout " + options.node_lock_timeout +
                ": want a positive duration such as 5m");
  }
  auto retry_timeout = DurationFlag("--node-lock-retry-timeout", options.node_lock_retry_timeout);
  if (!retry_timeout.ok()) return Fail(retry_timeout.error().message);
  // HAMi retries a PodGroup member's node lock for this long; tessera takes no PodGroup locks.
  spdlog::debug("--node-lock-retry-timeout {}: no effect (tessera takes no PodGroup locks)",
                options.node_lock_retry_timeout);
  auto kube_timeout = DurationFlag("--kube-timeout", options.kube_timeout);
  if (!kube_timeout.ok()) return Fail(kube_timeout.error().message);
  if (options.profiling) {
    spdlog::warn("--profiling: tessera serves no pprof routes; the flag has no effect");
  }
  if (!options.node_label_selector.empty()) {
    std::string text;
    for (const auto& [k, v] : so.node_selector) text += (text.empty() ? "" : ",") + k + "=" + v;
    spdlog::info("node label selector: {}", text.empty() ? "(every node)" : text);
  }

  sigset_t stop_signals = BlockStopSignals();

  std::unique_ptr<scheduler::ClusterWriter> writer;
  scheduler_runtime::EmbeddedCluster* embedded = nullptr;
  scheduler_runtime::KubeCluster* kube = nullptr;
  if (scenario) {
    if (options.leader_elect) {
      spdlog::info("--leader-elect: no effect with --cluster (no API server, no Lease)");
    }
    auto e = std::make_unique<scheduler_runtime::EmbeddedCluster>();
    embedded = e.get();
    writer = std::move(e);
  } else {
    scheduler_runtime::KubeClusterOptions ko;
    ko.kubeconfig = options.kubeconfig;
    ko.scheduler_name = options.scheduler_name;
    ko.node_lock_timeout = lock_timeout.value();
    ko.client.qps = options.kube_qps;
    ko.client.burst = options.kube_burst;
    if (kube_timeout.value().count() > 0) ko.client.request_timeout = kube_timeout.value();
    if (options.leader_elect) {
      auto le = ResolveLeaderElection(options);
      if (!le.ok()) return Fail(le.error().message);
      ko.leader_election = le->follow ? scheduler_runtime::LeaderElectionMode::kFollow
                                      : scheduler_runtime::LeaderElectionMode::kCampaign;
      ko.lease_namespace = le->lease_namespace;
      ko.lease_name = le->lease_name;
      // Following, the identity is the prefix of the kube-scheduler's holder identity
      // (`<hostname>_<uuid>`): the hostname alone, as HAMi's extender checks it.
      ko.identity = !options.leader_elect_identity.empty() ? options.leader_elect_identity
                    : le->follow                           ? Hostname()
                                                           : DefaultIdentity();
      spdlog::info("leader election: {} Lease {}/{} as {}", le->follow ? "follow" : "campaign",
                   ko.lease_namespace, ko.lease_name, ko.identity);
    }
    auto k = scheduler_runtime::KubeCluster::Connect(ko);
    if (!k.ok()) return Fail(k.error().message);
    kube = k.value().get();
    writer = std::move(k.value());
  }

  // Started before the service and stopped after it: the scheduler hands it work.
  std::optional<threads::ThreadPool> filter_pool;
  if (options.filter_threads > 1) {
    filter_pool.emplace(static_cast<size_t>(options.filter_threads));
    so.filter_runner = &*filter_pool;
  }
  scheduler::ExtenderService service(config, so, *writer);
  scheduler_runtime::HttpOptions ho;
  ho.bind = options.http_bind;
  ho.tls_cert_file = options.tls_cert_file;
  ho.tls_key_file = options.tls_key_file;
  ho.legacy_metrics = options.legacy_metrics;
  scheduler_runtime::HttpServer http(service, ho);
  if (Status s = http.Listen(); !s.ok()) return Fail(s.message());
  // HAMi serves /metrics on its own port (--metrics-bind-address); tessera keeps it on the main
  // port too, so both kinds of scrape configuration work.
  std::unique_ptr<scheduler_runtime::HttpServer> metrics_http;
  if (!options.metrics_bind_address.empty()) {
    scheduler_runtime::HttpOptions mo;
    mo.bind = options.metrics_bind_address;
    mo.metrics_only = true;
    mo.legacy_metrics = options.legacy_metrics;
    mo.threads = 2;
    mo.flag = "--metrics-bind-address";
    metrics_http = std::make_unique<scheduler_runtime::HttpServer>(service, mo);
    if (Status s = metrics_http->Listen(); !s.ok()) return Fail(s.message());
  }

  if (embedded != nullptr) {
    size_t adopted = scheduler_runtime::EmbeddedCluster::Load(*scenario, service);
    spdlog::info("embedded cluster from {}: {} nodes, {} placed pods", options.cluster,
                 scenario->nodes.size(), adopted);
  } else {
    kube->Start(service);
  }
  spdlog::info("tessera serve listening on {}:{} ({})", ho.bind.substr(0, ho.bind.rfind(':')),
               http.port(), ho.tls_cert_file.empty() ? "http" : "https");

  if (metrics_http) {
    const std::string& mb = options.metrics_bind_address;
    const std::string host = mb.substr(0, mb.rfind(':'));
    spdlog::info("metrics listening on {}:{} (http, /metrics)", host.empty() ? "0.0.0.0" : host,
                 metrics_http->port());
  }

  std::atomic<bool> stopping{false};
  std::thread server_thread([&] { http.Serve(); });
  std::thread metrics_thread([&] {
    if (metrics_http) metrics_http->Serve();
  });
  std::thread expiry_thread([&] {
    while (!stopping.load()) {
      service.ExpireReservations();
      service.CheckNodeLiveness();  // every second: a scan of the nodes seen at 0 only
      service.RequeueWaitingPods();
      for (int i = 0; i < 10 && !stopping.load(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  });
  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("signal {}: shutting down", sig);
  stopping = true;
  if (kube != nullptr) kube->Stop();  // releases a held lease first, so a standby takes over fast
  http.Stop();
  if (metrics_http) metrics_http->Stop();
  server_thread.join();
  metrics_thread.join();
  expiry_thread.join();
  return 0;
}

}  // namespace tessera::app
