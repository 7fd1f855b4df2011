#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace tessera::app {

struct ExplainOptions {
  std::string pod;            // NAMESPACE/NAME
  std::string cluster;        // a scenario file, run first (as `tessera simulate`)
  std::string kubeconfig;     // else a real cluster (kubeconfig, $KUBECONFIG, in-cluster)
  std::string device_config;  // HAMi device-config.yaml, for a real cluster
  std::string node_policy;    // as `serve --node-scheduler-policy` (empty: tessera)
  std::vector<std::string> node_policy_definitions;  // as `serve --define-node-policy`
  std::string gpu_policy;
  std::string output = "text";  // text or json
  std::string node;             // shown with its GPUs in full
};

// `tessera explain NS/NAME`: why the pod fits where it does or nowhere, per node and GPU, and
// what would make it fit (docs/explain.md).
int RunExplainCommand(const ExplainOptions& options);

// Adds `tessera explain NS/NAME` with its flags to `app`; it runs RunExplainCommand when parsed
// and ends the parse with its exit code.
void AddExplainCommand(CLI::App& app);

}  // namespace tessera::app
