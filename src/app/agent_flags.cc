#include "app/agent_flags.h"

#include <CLI/CLI.hpp>

namespace tessera::app {

std::string ResolveHookPath(const std::string& hook_path_flag, const char* hook_path_env) {
  if (!hook_path_flag.empty()) return hook_path_flag;
  if (hook_path_env != nullptr) return hook_path_env;
  return kDefaultHookPath;
}

void AddAgentFlags(CLI::App& agent, AgentCommandOptions& ao) {
  agent.add_option("--node-name", ao.node_name, "This node (default: $NODE_NAME)");
  agent.add_option("--kubeconfig", ao.kubeconfig,
                   "kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
  agent
      .add_option("--nvml-library", ao.nvml_library,
                  "NVML to load: the driver's, or libtessera-nvml-sim.so")
      ->capture_default_str();
  agent.add_option("--device-config-file,--config-file", ao.device_config,
                   "HAMi device-config.yaml");
  agent.add_option("--node-config-file", ao.node_config, "Per-node overrides (HAMi config.json)")
      ->capture_default_str();
  agent.add_option("--plugin-dir", ao.plugin_dir, "The kubelet's device-plugin folder")
      ->capture_default_str();
  agent
      .add_option("--kubelet-socket", ao.kubelet_socket,
                  "The kubelet's registration socket (\"\" = do not serve the kubelet)")
      ->capture_default_str();
  agent.add_option("--ledger", ao.ledger, "Where the agent records the MIG instances it made")
      ->capture_default_str();
  agent.add_option("--hook-path", ao.hook_path,
                   std::string("HAMi's HOOK_PATH: HAMi-core is in its vgpu folder (default: "
                               "$HOOK_PATH or ") +
                       kDefaultHookPath + ")");
  agent.add_option("--http-bind", ao.http_bind, "/healthz, /readyz and /metrics (\"\" = off)")
      ->capture_default_str();
  agent
      .add_option("--read-auth", ao.read_auth,
                  "Who may read /metrics: auto (= delegated), delegated (a bearer token the API "
                  "server accepts and allows to get /metrics) or none")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "delegated", "none"}));
  agent.add_option("--register-interval", ao.register_interval, "Re-discovery period")
      ->capture_default_str();
  agent.add_option("--reconcile-interval", ao.reconcile_interval, "MIG reconcile period")
      ->capture_default_str();
  agent
      .add_option("--usage-interval", ao.usage_interval,
                  "How often NVML's utilisation and memory used are read for /metrics and "
                  "tessera.io/gpu-usage (0 = never)")
      ->capture_default_str();
  agent
      .add_option("--usage-annotation-refresh", ao.usage_annotation_refresh,
                  "tessera.io/gpu-usage rides on the registration's writes; when only the usage "
                  "changed, the Node is written for it at most this often (0 = never on its own)")
      ->capture_default_str();
  agent
      .add_option("--reconcile-grace", ao.reconcile_grace,
                  "An instance is reclaimed once a pod view newer than its ledger entry by this "
                  "shows its pod gone (the view may lag), or a read of the pod proves it gone")
      ->capture_default_str();
  agent
      .add_option("--fail-lost-after", ao.fail_lost_after,
                  "A live pod whose MIG instance is gone and cannot be made again for this long "
                  "is set Failed so its controller replaces it; one whose instance came back "
                  "under a new MIG UUID is failed at once (0s: never fail pods)")
      ->capture_default_str();
  agent
      .add_option("--health-recovery", ao.health_recovery,
                  "Quiet time after a fatal XID before a GPU is healthy again (0 = never)")
      ->capture_default_str();
  agent
      .add_option("--device-list-strategy", ao.device_list_strategy,
                  "envvar, cdi-cri, cdi-annotations (comma list)")
      ->capture_default_str();
  agent.add_option("--cdi-annotation-prefix", ao.cdi_annotation_prefix, "CDI annotation prefix")
      ->capture_default_str();
  agent
      .add_option("--cdi-spec-dir", ao.cdi_spec_dir,
                  "Where the CDI spec of tessera's MIG instances is written (CDI strategies)")
      ->capture_default_str();
  agent
      .add_option("--driver-proc-root", ao.driver_proc_root,
                  "Where the NVIDIA driver's /proc files are (device minors for the CDI spec)")
      ->capture_default_str();
  agent.add_option("--sysfs-root", ao.sysfs_root, "Where /sys is (NUMA lookup)")
      ->capture_default_str();
  agent.add_flag("--reclaim-foreign", ao.reclaim_foreign,
                 "Also destroy unclaimed MIG instances that tessera did not create");
  agent.add_flag("--set-mig-mode", ao.set_mig_mode,
                 "Enable MIG mode on a GPU of a mig node whose MIG mode is off, when no compute "
                 "process uses it (needs root; the driver may reset the GPU)");
  agent.add_flag("--discover-only", ao.discover_only,
                 "Print what NVML reports and what would be registered, then exit (read-only)");
  agent.add_option("--log-level", ao.log_level, "debug, info or warn")->capture_default_str();
}

}  // namespace tessera::app
