#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace tessera::app {

struct ServeOptions {
  std::string kubeconfig;  // a real cluster (else in-cluster config)
  std::string cluster;     // an embedded cluster from a scenario file
  std::string http_bind = "127.0.0.1:8080";
  std::string tls_cert_file;
  std::string tls_key_file;
  // Listeners and their limits (docs/security.md).
  std::string extender_bind;       // "": the verbs on --http-bind, for local callers only
  std::string extender_client_ca;  // TLS: callers with a certificate it signed may use the verbs
  std::string read_auth = "auto";  // auto | delegated | none: who may read /metrics, /explain
  std::string request_timeout = "10s";  // a request's first byte to its last
  int64_t max_request_bytes = 16 << 20;
  int max_connections = 10000;
  int http_workers = 8;
  int http_queue = 64;
  int bind_workers = 32;
  int bind_queue = 512;
  std::string scheduler_name = "tessera-scheduler";
  std::string device_config;  // HAMi device-config.yaml
  std::string node_policy;    // empty: the scenario's, else tessera
  // Operators' node policies, "NAME=PLUGIN:WEIGHT,..." (docs/placement.md, "Node policies").
  std::vector<std::string> node_policy_definitions;
  std::string gpu_policy;
  std::string mig_demand_prior;   // "1g=4,3g=1"; empty = every size alike
  double mig_prior_strength = 8;  // observations the prior is worth
  bool mig_allow_larger_profile = false;
  bool force_overwrite_default_scheduler = true;
  std::string node_lock = "none";           // none | hami
  std::string write_placement = "bind";     // bind | filter
  std::string reservation_timeout = "60s";  // Go-style duration: 90s, 2m, 1m30s, or seconds
  int filter_threads = 1;                   // threads one filter decision's nodes are evaluated on
  bool leader_elect = false;
  // campaign | follow (kube-scheduler's lease); empty: follow when the Lease is named with HAMi's
  // --leader-elect-resource-* flags (HAMi's meaning), campaign otherwise.
  std::string leader_elect_mode;
  std::string leader_elect_namespace = "kube-system";
  std::string leader_elect_name = "tessera-scheduler";
  std::string leader_elect_resource_namespace;  // HAMi's spelling; non-empty wins
  std::string leader_elect_resource_name;       // HAMi's spelling; non-empty wins
  std::string leader_elect_identity;  // default: campaign hostname + random suffix, follow hostname
  std::string log_level = "info";
  bool debug = false;  // --debug: as --log-level debug
  int verbosity = 0;   // klog's -v: 4 or more = debug
  // A second, plain-HTTP listener for GET /metrics alone ("" = none; ":9395" = 0.0.0.0:9395).
  std::string metrics_bind_address;
  bool legacy_metrics = false;                   // also HAMi's legacy metric names
  std::vector<std::string> node_label_selector;  // key=value,... (repeatable)
  std::string node_liveness_grace = "60s";       // 0 = off
  std::string requeue_after = "500ms";           // 0 = off (ServiceOptions::requeue_after)
  double kube_qps = 0;                           // API requests per second; 0 = unlimited
  int kube_burst = 0;                            // with kube_qps; below 1 counts as 1
  std::string kube_timeout = "0";                // per API request; 0 = the client's (30 s)
  std::string node_lock_timeout = "5m";          // --node-lock=hami: when a lock is stale
  std::string node_lock_retry_timeout = "28s";   // HAMi's PodGroup lock budget: no effect here
  bool profiling = false;                        // HAMi's pprof routes: no effect here
  // The defrag controller (docs/defrag.md): a round every this long on the leader (0 = off).
  std::string defrag_interval = "0";
  int defrag_max_evictions = 4;           // per plan
  int defrag_max_evictions_per_hour = 6;  // across rounds and `tessera defrag --execute` runs
  std::string defrag_step_timeout = "120s";
  bool defrag_raise_placeability = false;  // mode (b) plans carried out too
};

// `tessera serve`: the kube-scheduler extender and mutating webhook (docs/serve.md).
int RunServeCommand(const ServeOptions& options);

// Adds `tessera serve` with its flags (AddServeFlags) to `app`; it runs when parsed and ends the
// parse with its exit code.
void AddServeCommand(CLI::App& app);

}  // namespace tessera::app
