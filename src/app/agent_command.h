#pragma once

#include <string>

namespace CLI {
class App;
}

namespace tessera::app {

struct AgentCommandOptions {
  std::string node_name;  // default $NODE_NAME
  std::string kubeconfig;
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string device_config;                        // HAMi device-config.yaml
  std::string node_config = "/config/config.json";  // per-node overrides; missing is fine
  std::string plugin_dir = "/var/lib/kubelet/device-plugins";
  std::string kubelet_socket = "kubelet.sock";  // "" = do not serve the kubelet
  std::string ledger = "/var/lib/tessera/agent/mig-ledger.json";
  std::string hook_path;  // HAMi's HOOK_PATH; "": ResolveHookPath (app/agent_flags.h)
  std::string http_bind = ":9394";
  // Who may read /metrics: auto (= delegated: the agent always has an API server), delegated
  // (TokenReview + SubjectAccessReview, as serve's) or none (anyone who reaches the port).
  std::string read_auth = "auto";
  std::string register_interval = "30s";
  std::string reconcile_interval = "5s";
  std::string reconcile_grace = "10s";
  std::string health_recovery = "5m";
  std::string fail_lost_after = "60s";
  std::string usage_interval = "10s";           // NVML utilisation and memory read; 0 = off
  std::string usage_annotation_refresh = "5m";  // usage-only Node write at most this often
  std::string device_list_strategy = "envvar";  // envvar, cdi-cri, cdi-annotations
  std::string cdi_annotation_prefix = "cdi.k8s.io/";
  std::string sysfs_root = "/sys";
  std::string cdi_spec_dir = "/var/run/cdi";      // tessera-mig.json, with a CDI strategy
  std::string driver_proc_root = "/proc/driver";  // device minors for the CDI spec
  bool reclaim_foreign = false;
  bool set_mig_mode = false;  // enable MIG mode on idle GPUs a "mig" node wants in MIG mode
  bool discover_only = false;
  std::string log_level = "info";
};

// `tessera agent`: the node agent (docs/agent.md).
int RunAgentCommand(const AgentCommandOptions& options);

// Adds `tessera agent` with its flags (AddAgentFlags) to `app`; it runs when parsed and ends the
// parse with its exit code.
void AddAgentCommand(CLI::App& app);

}  // namespace tessera::app
