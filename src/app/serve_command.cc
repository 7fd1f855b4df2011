#include "app/serve_command.h"

#include <spdlog/spdlog.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
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
#include "app/command_support.h"
#include "app/defrag_controller.h"
#include "app/serve_flags.h"
#include "app/serve_listeners.h"
#include "core/common/duration.h"
#include "core/config/config_codec.h"
#include "core/mig/catalog.h"
#include "core/sched/preferences.h"
#include "core/state/node_liveness.h"
#include "scheduler/scheduler_service.h"
#include "scheduler_runtime/embedded_cluster.h"
#include "scheduler_runtime/http_server.h"
#include "scheduler_runtime/kube_cluster.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

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

// A duration flag (DurationFlag) rounded up to whole seconds, the unit these settings take.
Result<std::chrono::seconds> SecondsFlag(const std::string& flag, const std::string& text) {
  auto duration = DurationFlag(flag, text);
  if (!duration.ok()) return duration.error();
  return std::chrono::ceil<std::chrono::seconds>(duration.value());
}

// What the flags and files resolve to before anything starts.
struct ServeSetup {
  scheduler::ServiceOptions service;
  config::SchedulerConfig config;
  std::optional<sim::Scenario> scenario;  // --cluster
  std::chrono::seconds kube_timeout{};
  DefragControllerOptions defrag;  // interval 0: off
};

// The cluster file (--cluster) and the device configuration (--device-config-file).
Status LoadClusterAndConfig(const ServeOptions& options, ServeSetup& setup) {
  if (!options.kubeconfig.empty() && !options.cluster.empty()) {
    return Error{"--kubeconfig and --cluster are exclusive: one cluster source at a time"};
  }
  auto catalog = mig::GpuModelCatalog::Builtin();
  if (!catalog.ok()) return Error{"built-in MIG table: " + catalog.error().message};
  if (!options.cluster.empty()) {
    auto loaded = sim::LoadScenarioFile(options.cluster, catalog.value());
    if (!loaded.ok()) return loaded.error();
    setup.scenario = std::move(loaded.value());
    setup.config = setup.scenario->config;
    setup.service.policy = setup.scenario->policy;
  }
  if (!options.device_config.empty()) {
    auto cfg = LoadDeviceConfig(options.device_config);
    if (!cfg.ok()) return cfg.error();
    setup.config = std::move(cfg.value());
  }
  for (const auto& w : setup.config.warnings) spdlog::warn("{}", w);
  return Status::Ok();
}

// The scheduling policies: a policy flag overrides the scenario's; without either, tessera's
// own ranking decides.
Status ResolvePolicies(const ServeOptions& options, bool from_scenario,
                       sched::PolicyDefaults& policy) {
  if (Status s = sched::AddNodePolicyDefinitions(options.node_policy_definitions,
                                                 &policy.defined_node_policies);
      !s.ok()) {
    return Error{"--define-node-policy: " + s.message()};
  }
  if (!options.node_policy.empty()) {
    auto np = sched::ParseNodePolicy(options.node_policy, policy.defined_node_policies);
    if (!np.ok()) return Error{"--node-scheduler-policy: " + np.error().message};
    policy.node = np.value();
  }
  if (!options.gpu_policy.empty()) {
    auto gp = sched::ParseGpuPolicy(options.gpu_policy);
    if (!gp.ok()) return Error{"--gpu-scheduler-policy: " + gp.error().message};
    policy.gpu = options.gpu_policy;
  }
  if (!from_scenario || !options.mig_demand_prior.empty()) {
    auto prior = sched::ParseMigPrior(options.mig_demand_prior, options.mig_prior_strength);
    if (!prior.ok()) return Error{"--mig-demand-prior: " + prior.error().message};
    policy.mig_prior = std::move(prior.value());
  }
  if (options.mig_allow_larger_profile) policy.mig_allow_larger_profiles = true;
  spdlog::info("node policy: {} (gpu policy: {})", policy.node.Definition(), policy.gpu);
  for (const sched::NodePolicy& defined : policy.defined_node_policies) {
    spdlog::info("defined node policy: {}", defined.Definition());
  }
  return Status::Ok();
}

// The webhook, the reservations, the node lock and the timings.
Status ResolveServiceFlags(const ServeOptions& options, ServeSetup& setup) {
  scheduler::ServiceOptions& so = setup.service;
  so.webhook.scheduler_name = options.scheduler_name;
  so.webhook.force_overwrite_default_scheduler = options.force_overwrite_default_scheduler;
  auto timeout = ParseDuration(options.reservation_timeout);
  if (!timeout.ok() || timeout.value().count() <= 0) {
    return Error{"--reservation-timeout " + options.reservation_timeout +
                 ": want a positive duration such as 60s, 2m or 1m30s"};
  }
  so.reservation_timeout = timeout.value();
  if (options.node_lock != "none" && options.node_lock != "hami") {
    return Error{"--node-lock: want none or hami, got " + options.node_lock};
  }
  so.hami_node_lock = options.node_lock == "hami";
  if (options.write_placement != "filter" && options.write_placement != "bind") {
    return Error{"--write-placement: want filter or bind, got " + options.write_placement};
  }
  so.write_placement_in_bind = options.write_placement == "bind";
  auto selector = ParseNodeSelector(options.node_label_selector);
  if (!selector.ok()) return selector.error();
  so.node_selector = std::move(selector.value());
  auto grace = SecondsFlag("--node-liveness-grace", options.node_liveness_grace);
  if (!grace.ok()) return grace.error();
  so.node_liveness_grace = grace.value();
  // An embedded cluster has no kubelet: nodes' allocatable GPU counts are the file's, and the
  // file is a snapshot, so the grace is taken as over (the least there is: LoadEmbeddedCluster
  // waits it out once).
  if (setup.scenario) so.node_liveness_grace = std::chrono::seconds(1);
  auto requeue = DurationFlag("--requeue-after", options.requeue_after);
  if (!requeue.ok()) return requeue.error();
  so.requeue_after = requeue.value();
  auto lock_timeout = SecondsFlag("--node-lock-timeout", options.node_lock_timeout);
  if (!lock_timeout.ok() || lock_timeout.value().count() <= 0) {
    return Error{"--node-lock-timeout " + options.node_lock_timeout +
                 ": want a positive duration such as 5m"};
  }
  so.node_lock_timeout = lock_timeout.value();
  auto retry_timeout = SecondsFlag("--node-lock-retry-timeout", options.node_lock_retry_timeout);
  if (!retry_timeout.ok()) return retry_timeout.error();
  // HAMi retries a PodGroup member's node lock for this long; tessera takes no PodGroup locks.
  spdlog::debug("--node-lock-retry-timeout {}: no effect (tessera takes no PodGroup locks)",
                options.node_lock_retry_timeout);
  auto kube_timeout = SecondsFlag("--kube-timeout", options.kube_timeout);
  if (!kube_timeout.ok()) return kube_timeout.error();
  setup.kube_timeout = kube_timeout.value();
  auto defrag_interval = DurationFlag("--defrag-interval", options.defrag_interval);
  if (!defrag_interval.ok()) return defrag_interval.error();
  setup.defrag.interval = defrag_interval.value();
  auto step_timeout = DurationFlag("--defrag-step-timeout", options.defrag_step_timeout);
  if (!step_timeout.ok() || step_timeout.value().count() <= 0) {
    return Error{"--defrag-step-timeout " + options.defrag_step_timeout +
                 ": want a positive duration such as 120s"};
  }
  setup.defrag.step_timeout = step_timeout.value();
  if (options.defrag_max_evictions < 0 || options.defrag_max_evictions_per_hour < 0) {
    return Error{"--defrag-max-evictions and --defrag-max-evictions-per-hour must be 0 or more"};
  }
  setup.defrag.max_evictions = options.defrag_max_evictions;
  setup.defrag.max_evictions_per_hour = options.defrag_max_evictions_per_hour;
  setup.defrag.raise_placeability = options.defrag_raise_placeability;
  if (setup.defrag.interval.count() > 0 && setup.scenario) {
    spdlog::info("--defrag-interval: no effect with --cluster (nothing to evict)");
  }
  if (options.profiling) {
    spdlog::warn("--profiling: tessera serves no pprof routes; the flag has no effect");
  }
  if (!options.node_label_selector.empty()) {
    std::string text;
    for (const auto& [k, v] : so.node_selector) text += (text.empty() ? "" : ",") + k + "=" + v;
    spdlog::info("node label selector: {}", text.empty() ? "(every node)" : text);
  }
  return Status::Ok();
}

Result<ServeSetup> ResolveServeSetup(const ServeOptions& options) {
  ServeSetup setup;
  if (Status s = LoadClusterAndConfig(options, setup); !s.ok()) return Error{s.message()};
  if (Status s = ResolvePolicies(options, setup.scenario.has_value(), setup.service.policy);
      !s.ok()) {
    return Error{s.message()};
  }
  if (Status s = ResolveServiceFlags(options, setup); !s.ok()) return Error{s.message()};
  return setup;
}

// Where the cluster comes from: the scenario file (embedded) or the API server.
struct ClusterSource {
  std::unique_ptr<scheduler::ClusterWriter> writer;
  scheduler_runtime::EmbeddedCluster* embedded = nullptr;  // owned by writer
  scheduler_runtime::KubeCluster* kube = nullptr;          // owned by writer
};

Result<ClusterSource> OpenClusterSource(const ServeOptions& options, const ServeSetup& setup) {
  ClusterSource source;
  if (setup.scenario) {
    if (options.leader_elect) {
      spdlog::info("--leader-elect: no effect with --cluster (no API server, no Lease)");
    }
    auto e = std::make_unique<scheduler_runtime::EmbeddedCluster>();
    source.embedded = e.get();
    source.writer = std::move(e);
    return source;
  }
  scheduler_runtime::KubeClusterOptions ko;
  ko.kubeconfig = options.kubeconfig;
  ko.scheduler_name = options.scheduler_name;
  ko.node_lock_timeout = setup.service.node_lock_timeout;
  ko.client.qps = options.kube_qps;
  ko.client.burst = options.kube_burst;
  if (setup.kube_timeout.count() > 0) ko.client.request_timeout = setup.kube_timeout;
  if (options.leader_elect) {
    auto le = ResolveLeaderElection(options);
    if (!le.ok()) return le.error();
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
  if (!k.ok()) return k.error();
  source.kube = k.value().get();
  source.writer = std::move(k.value());
  return source;
}

// --cluster: the scenario run to its end by the simulator, with the config and policies served,
// so the view holds the state `tessera simulate` ends in (docs/serve.md): the nodes as the steps
// left them, the pods holding devices as an informer shows running pods, and the pods still
// pending as kube-scheduler's next try of them leaves them (refused, with their reasons).
void LoadEmbeddedCluster(const ServeOptions& options, const ServeSetup& setup,
                         scheduler::ClusterView& view) {
  sim::Scenario scenario = *setup.scenario;
  scenario.config = setup.config;
  scenario.policy = setup.service.policy;
  const size_t steps = scenario.steps.size();
  sim::Scenario final_state = sim::FinalStateScenario(std::move(scenario));
  // The simulator takes a node whose allocatable names no GPU count as live; the view's rule
  // (a kubelet that reports none has no device plugin) would not, so such a node gets one.
  const std::string& count = setup.config.nvidia.resource_count_name;
  state::NodeLiveness zero_count(count, setup.service.node_liveness_grace);
  bool any_not_live = false;
  for (model::Node& node : final_state.nodes) {
    node.allocatable.try_emplace(count, "1");
    zero_count.Observe(node, {});
    any_not_live = any_not_live || zero_count.ZeroSince(node.name).has_value();
  }
  const size_t running = scheduler_runtime::EmbeddedCluster::Load(final_state, view);
  if (any_not_live) {
    std::this_thread::sleep_for(setup.service.node_liveness_grace);
    view.CheckNodeLiveness();
  }
  size_t pending = 0;
  for (const sim::ScenarioStep& step : final_state.steps) {
    if (!step.pod.node_name.empty()) continue;  // running: adopted by Load
    ++pending;
    view.UpsertPodModel(step.pod);
    if (view.Schedule(step.pod, nullptr).decision.scheduled()) {
      spdlog::warn("pod {}: pending at the end of {} but placed now", step.pod.Key(),
                   options.cluster);
    }
  }
  spdlog::info("embedded cluster from {}: {} steps run, {} nodes, {} running pods, {} pending",
               options.cluster, steps, final_state.nodes.size(), running, pending);
}

// Serves until SIGINT or SIGTERM, with the periodic work: reservation expiry and node liveness
// once a second, requeues four times a second (a pod kube-scheduler missed is asked again within
// a second of the change); then stops the cluster source first (a held lease goes at once, so a
// standby takes over fast) and the servers.
void ServeUntilStopped(sigset_t stop_signals, scheduler::Housekeeping& housekeeping,
                       Listeners& listeners, scheduler_runtime::KubeCluster* kube) {
  std::atomic<bool> stopping{false};
  std::vector<scheduler_runtime::HttpServer*> servers{listeners.http.get()};
  if (listeners.extender) servers.push_back(listeners.extender.get());
  if (listeners.metrics) servers.push_back(listeners.metrics.get());
  std::vector<std::thread> server_threads;
  server_threads.reserve(servers.size());
  for (auto* server : servers) server_threads.emplace_back([server] { server->Serve(); });
  std::thread expiry_thread([&] {
    constexpr int kRequeuePassesPerSecond = 4;
    for (int tick = 0; !stopping.load(); tick = (tick + 1) % kRequeuePassesPerSecond) {
      if (tick == 0) {
        housekeeping.ExpireReservations();
        housekeeping.CheckNodeLiveness();  // a scan of the nodes seen at 0 only
      }
      housekeeping.RequeueWaitingPods();
      for (int i = 0; i < 5 && !stopping.load(); ++i) {  // 250 ms, stopping seen within 50
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
  });
  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("signal {}: shutting down", sig);
  stopping = true;
  if (kube != nullptr) kube->Stop();
  for (auto* server : servers) server->Stop();
  for (auto& thread : server_threads) thread.join();
  expiry_thread.join();
}

}  // namespace

int RunServeCommand(const ServeOptions& options) {
  const std::string log_level =
      EffectiveLogLevel(options.log_level, options.debug, options.verbosity);
  if (log_level == "debug") spdlog::set_level(spdlog::level::debug);
  if (log_level == "warn") spdlog::set_level(spdlog::level::warn);
  auto setup = ResolveServeSetup(options);
  if (!setup.ok()) return Fail(setup.error().message);

  sigset_t stop_signals = BlockStopSignals();
  auto source = OpenClusterSource(options, *setup);
  if (!source.ok()) return Fail(source.error().message);

  // Started before the service and stopped after it: the scheduler hands it work.
  std::optional<threads::ThreadPool> filter_pool;
  if (options.filter_threads > 1) {
    filter_pool.emplace(static_cast<size_t>(options.filter_threads));
    setup->service.filter_runner = &*filter_pool;
  }
  scheduler::SchedulerService service(setup->config, setup->service, *source->writer);
  auto listeners =
      OpenListeners(options, service, source->kube ? &source->kube->client() : nullptr);
  if (!listeners.ok()) return Fail(listeners.error().message);

  if (source->embedded != nullptr) {
    LoadEmbeddedCluster(options, *setup, service.view);
  } else {
    source->kube->Start(service.view);
  }
  LogListening(options, *listeners);
  // The defrag controller (opt-in): its own thread, stopped after the servers.
  std::atomic<bool> defrag_stopping{false};
  std::thread defrag_thread;
  if (setup->defrag.interval.count() > 0 && source->kube != nullptr) {
    defrag_thread = std::thread([&] {
      RunDefragController(service, source->kube->client(), setup->defrag, defrag_stopping);
    });
  }
  ServeUntilStopped(stop_signals, service.housekeeping, *listeners, source->kube);
  defrag_stopping = true;
  if (defrag_thread.joinable()) defrag_thread.join();
  return 0;
}

void AddServeCommand(CLI::App& app) {
  auto* serve = app.add_subcommand(
      "serve", "Run the kube-scheduler extender and mutating webhook (docs/serve.md)");
  auto options = std::make_shared<ServeOptions>();
  AddServeFlags(*serve, *options);
  serve->callback([options] { EndCommand(RunServeCommand(*options)); });
}

}  // namespace tessera::app
