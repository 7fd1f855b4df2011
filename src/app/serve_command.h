#pragma once

#include <string>

namespace tessera::app {

struct ServeOptions {
  std::string kubeconfig;  // a real cluster (else in-cluster config)
  std::string cluster;     // an embedded cluster from a scenario file
  std::string http_bind = "127.0.0.1:8080";
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string scheduler_name = "tessera-scheduler";
  std::string device_config;  // HAMi device-config.yaml
  std::string node_policy = "binpack";
  std::string gpu_policy = "spread";
  std::string mig_demand_prior;   // "1g=4,3g=1"; empty = every size alike
  double mig_prior_strength = 8;  // observations the prior is worth
  bool mig_allow_larger_profile = false;
  bool force_overwrite_default_scheduler = true;
  std::string node_lock = "none";           // none | hami
  std::string write_placement = "filter";   // filter | bind
  std::string reservation_timeout = "60s";  // Go-style duration: 90s, 2m, 1m30s, or seconds
  bool leader_elect = false;
  std::string leader_elect_mode = "campaign";  // campaign | follow (kube-scheduler's lease)
  std::string leader_elect_namespace = "kube-system";
  std::string leader_elect_name = "tessera-scheduler";
  std::string leader_elect_identity;  // default: hostname + random suffix
  std::string log_level = "info";
};

// `tessera serve`: the kube-scheduler extender and mutating webhook (docs/serve.md).
int RunServeCommand(const ServeOptions& options);

}  // namespace tessera::app
