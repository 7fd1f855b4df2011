#include "app/serve_flags.h"

#include <CLI/CLI.hpp>
#include <cctype>

#include "core/common/strings.h"

namespace tessera::app {
namespace {

bool AllDigits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> NormalizeServeArgs(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  out.reserve(args.size());
  size_t i = 0;
  if (!args.empty()) out.push_back(args[i++]);
  // The subcommand is the first argument that is not an option (the program has no options
  // that take a value before it).
  while (i < args.size() && StartsWith(args[i], "-")) out.push_back(args[i++]);
  if (i >= args.size() || args[i] != "serve") {
    out.insert(out.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
    return out;
  }
  out.push_back(args[i++]);
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      out.insert(out.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      break;
    }
    if (a == "-v" && i + 1 < args.size()) {
      out.push_back("--v=" + args[++i]);
    } else if (StartsWith(a, "-v=")) {
      out.push_back("--v=" + a.substr(3));
    } else if (StartsWith(a, "-v") && AllDigits(std::string_view(a).substr(2))) {
      out.push_back("--v=" + a.substr(2));
    } else {
      out.push_back(a);
    }
  }
  return out;
}

Result<std::map<std::string, std::string>> ParseNodeSelector(
    const std::vector<std::string>& values) {
  std::map<std::string, std::string> selector;
  for (const auto& value : values) {
    if (Trim(value).empty()) continue;  // --node-label-selector "" selects every node
    for (const auto& raw : SplitKeepEmpty(value, ',')) {
      const std::string item = Trim(raw);
      const size_t eq = item.find('=');
      if (item.empty()) {
        return Error{"--node-label-selector " + value + ": empty item (want key=value,...)"};
      }
      if (eq == std::string::npos) {
        return Error{"--node-label-selector: \"" + item + "\" is not key=value"};
      }
      const std::string key = Trim(item.substr(0, eq));
      const std::string val = Trim(item.substr(eq + 1));
      if (key.empty()) {
        return Error{"--node-label-selector: \"" + item + "\" has an empty key"};
      }
      auto [it, inserted] = selector.emplace(key, val);
      if (!inserted && it->second != val) {
        return Error{"--node-label-selector: key \"" + key + "\" given twice (\"" + it->second +
                     "\" and \"" + val + "\")"};
      }
    }
  }
  return selector;
}

Result<LeaderElectionFlags> ResolveLeaderElection(const ServeOptions& options) {
  LeaderElectionFlags out;
  const bool hami_spelling = !options.leader_elect_resource_name.empty() ||
                             !options.leader_elect_resource_namespace.empty();
  out.lease_namespace = options.leader_elect_resource_namespace.empty()
                            ? options.leader_elect_namespace
                            : options.leader_elect_resource_namespace;
  out.lease_name = options.leader_elect_resource_name.empty() ? options.leader_elect_name
                                                              : options.leader_elect_resource_name;
  if (options.leader_elect_mode.empty()) {
    out.follow = hami_spelling;
  } else if (options.leader_elect_mode == "follow" || options.leader_elect_mode == "campaign") {
    out.follow = options.leader_elect_mode == "follow";
  } else {
    return Error{"--leader-elect-mode: want campaign or follow, got " + options.leader_elect_mode};
  }
  return out;
}

std::string EffectiveLogLevel(const std::string& log_level, bool debug, int verbosity) {
  return debug || verbosity >= 4 ? "debug" : log_level;
}

void AddServeFlags(CLI::App& serve, ServeOptions& so) {
  serve.add_option("--kubeconfig", so.kubeconfig,
                   "kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  serve.add_option("--cluster", so.cluster,
                   "Serve an embedded in-memory cluster from a scenario file instead");
  serve.add_option("--http-bind,--http_bind", so.http_bind, "Listen address HOST:PORT")
      ->capture_default_str();
  serve.add_option("--tls-cert-file,--cert_file", so.tls_cert_file,
                   "TLS certificate (PEM, reloaded when it changes)");
  serve.add_option("--tls-key-file,--key_file", so.tls_key_file, "TLS private key (PEM)");
  serve.add_option("--extender-bind", so.extender_bind,
                   "Serve /filter, /prioritize and /bind on their own HOST:PORT (127.0.0.1 "
                   "unless --extender-client-ca); default: on --http-bind, for callers on this "
                   "host only");
  serve.add_option("--extender-client-ca", so.extender_client_ca,
                   "CA file: callers presenting a client certificate it signed may use the "
                   "extender verbs from another host (needs TLS)");
  serve
      .add_option("--read-auth", so.read_auth,
                  "Who may read /metrics, /ui/state and /explain: delegated (a token the API "
                  "server accepts, allowed by RBAC), none (anyone), auto (delegated when there "
                  "is an API server)")
      ->capture_default_str();
  serve
      .add_option("--request-timeout", so.request_timeout,
                  "Longest time from a request's first byte to its last")
      ->capture_default_str();
  serve
      .add_option("--max-request-bytes", so.max_request_bytes,
                  "Largest request body, decoded (bigger: 413)")
      ->capture_default_str();
  serve
      .add_option("--max-connections", so.max_connections,
                  "Open connections per listener; at the limit the longest idle one is closed")
      ->check(CLI::Range(16, 1000000))
      ->capture_default_str();
  serve.add_option("--http-workers", so.http_workers, "Threads that answer requests")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  serve
      .add_option("--http-queue", so.http_queue,
                  "Requests waiting for a worker at most (more: 503)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  serve
      .add_option("--bind-workers", so.bind_workers,
                  "Threads that answer kube-scheduler's binds (apart from --http-workers, so "
                  "that a filter never waits behind binds)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  serve
      .add_option("--bind-queue", so.bind_queue,
                  "Binds waiting for a bind worker at most (more: 503)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  serve
      .add_option("--scheduler-name", so.scheduler_name,
                  "Scheduler name the webhook sets and events carry")
      ->capture_default_str();
  serve.add_option("--device-config,--device-config-file", so.device_config,
                   "HAMi device-config.yaml");
  serve.add_option("--node-scheduler-policy", so.node_policy,
                   "tessera (default), HAMi's binpack or spread, or a policy defined with "
                   "--define-node-policy (docs/placement.md)");
  serve.add_option("--define-node-policy", so.node_policy_definitions,
                   "NAME=PLUGIN:WEIGHT[,PLUGIN:WEIGHT...]: a node policy pods and "
                   "--node-scheduler-policy may name; plugins: fragmentation, hami-node-score, "
                   "fullness (repeatable; `tessera plugins` lists them)");
  serve.add_option("--gpu-scheduler-policy", so.gpu_policy,
                   "tessera (default), or HAMi's binpack, spread, numa, topology-aware, mutex; "
                   "tessera,binpack keeps tessera's choice and packs among equals");
  serve.add_option("--mig-demand-prior", so.mig_demand_prior,
                   "Assumed MIG request mix by size, e.g. 1g=4,3g=1,7g=1 (default: all sizes "
                   "alike; docs/placement.md)");
  serve
      .add_option("--mig-prior-strength", so.mig_prior_strength,
                  "How many observed requests the prior is worth")
      ->capture_default_str();
  serve.add_flag("--mig-allow-larger-profile", so.mig_allow_larger_profile,
                 "Let an instance take a larger profile than the smallest that covers it when "
                 "that keeps more placeability");
  serve
      .add_option("--force-overwrite-default-scheduler", so.force_overwrite_default_scheduler,
                  "Webhook takes over pods that name default-scheduler")
      ->capture_default_str();
  serve
      .add_option("--node-lock", so.node_lock,
                  "none, or hami (write hami.io/mutex.lock for HAMi's device plugin)")
      ->capture_default_str();
  serve
      .add_option("--node-lock-timeout", so.node_lock_timeout,
                  "--node-lock=hami: a lock older than this is stale and taken over")
      ->capture_default_str();
  serve
      .add_option("--node-lock-retry-timeout", so.node_lock_retry_timeout,
                  "HAMi's PodGroup lock retry budget; accepted, no effect (no PodGroup locks)")
      ->capture_default_str();
  serve
      .add_option("--reservation-timeout", so.reservation_timeout,
                  "How long a filtered pod's devices stay reserved without a bind (60s, 2m)")
      ->capture_default_str();
  serve
      .add_option("--filter-threads", so.filter_threads,
                  "Threads one filter decision evaluates nodes on (1 = the request's own; more "
                  "helps only with thousands of nodes in different states)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  serve
      .add_option("--write-placement", so.write_placement,
                  "When placement annotations are written: bind (with bind-phase, one patch; the "
                  "fast path) or filter (as HAMi)")
      ->capture_default_str();
  serve
      .add_option("--node-label-selector", so.node_label_selector,
                  "Only nodes with these labels are registered: key=value,key2=value2")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  serve
      .add_option("--node-liveness-grace", so.node_liveness_grace,
                  "A node whose allocatable GPU count stays 0 this long gets no new GPU pods "
                  "(0 = off)")
      ->capture_default_str();
  serve
      .add_option("--requeue-after", so.requeue_after,
                  "A waiting pod that fits after a change kube-scheduler did not retry it on "
                  "(a deletion it saw first, a quota raised) is requeued after this long (0 = off)")
      ->capture_default_str();
  serve
      .add_option("--defrag-interval", so.defrag_interval,
                  "The defrag controller: every this long, on the leader, evict as a plan that "
                  "admits pending pods says, one pod at a time (docs/defrag.md; 0 = off)")
      ->capture_default_str();
  serve
      .add_option("--defrag-max-evictions", so.defrag_max_evictions,
                  "The defrag controller's evictions per plan")
      ->capture_default_str();
  serve
      .add_option("--defrag-max-evictions-per-hour", so.defrag_max_evictions_per_hour,
                  "The defrag controller's evictions in any hour, counted from the Events of "
                  "every defrag run")
      ->capture_default_str();
  serve.add_flag("--defrag-raise-placeability", so.defrag_raise_placeability,
                 "The defrag controller also carries out plans that only raise placeability "
                 "(mode b: with nothing pending, moves that each gain at least the minimum)");
  serve
      .add_option("--defrag-step-timeout", so.defrag_step_timeout,
                  "How long one step of the defrag controller may take to deliver")
      ->capture_default_str();
  serve.add_option("--kube-qps", so.kube_qps, "API requests per second (0 = unlimited)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  serve.add_option("--kube-burst", so.kube_burst, "API request burst with --kube-qps")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  serve
      .add_option("--kube-timeout", so.kube_timeout,
                  "Timeout of one API request, seconds or a duration (0 = 30s)")
      ->capture_default_str();
  serve.add_flag("--leader-elect", so.leader_elect, "Only the Lease holder serves");
  serve.add_option("--leader-elect-mode", so.leader_elect_mode,
                   "campaign (own Lease) or follow (the kube-scheduler's Lease); default "
                   "campaign, or follow with HAMi's --leader-elect-resource-* flags");
  serve.add_option("--leader-elect-namespace", so.leader_elect_namespace, "Lease namespace")
      ->capture_default_str();
  serve.add_option("--leader-elect-name", so.leader_elect_name, "Lease name")
      ->capture_default_str();
  serve.add_option("--leader-elect-resource-namespace", so.leader_elect_resource_namespace,
                   "HAMi's spelling of the Lease namespace (implies follow without a mode)");
  serve.add_option("--leader-elect-resource-name", so.leader_elect_resource_name,
                   "HAMi's spelling of the Lease name (implies follow without a mode)");
  serve.add_option("--leader-elect-identity", so.leader_elect_identity,
                   "Holder identity (campaign; default hostname_random) or identity prefix "
                   "(follow; default hostname)");
  serve
      .add_option("--metrics-bind-address", so.metrics_bind_address,
                  "Also serve /metrics, plain HTTP, on HOST:PORT (:9395 = all interfaces)")
      ->capture_default_str();
  serve.add_flag("--legacy-metrics", so.legacy_metrics,
                 "Also render HAMi's legacy metric names (GPUDeviceMemoryLimit, ...)");
  serve.add_flag("--profiling", so.profiling, "HAMi's pprof routes; accepted, no effect");
  serve.add_option("--log-level", so.log_level, "debug, info or warn")->capture_default_str();
  serve.add_flag("--debug", so.debug, "Same as --log-level debug");
  serve.add_option("--v", so.verbosity, "klog verbosity (-v=N too): 4 or more = --log-level debug")
      ->check(CLI::NonNegativeNumber);
}

}  // namespace tessera::app
