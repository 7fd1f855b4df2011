#pragma once

#include <string>

namespace CLI {
class App;
}

namespace tessera::app {

struct DefragOptions {
  std::string cluster;        // a scenario file, run first (as `tessera simulate`)
  std::string kubeconfig;     // else a real cluster (kubeconfig, $KUBECONFIG, in-cluster)
  std::string device_config;  // HAMi device-config.yaml, for a real cluster
  std::string scheduler_name = "tessera-scheduler";  // whose unbound pods are pending
  std::string output = "text";                       // text or json
  int max_evictions = 4;
  double min_gain = 1.0;                // GiB of MIG placeability per move
  double min_fragmentation_drop = 0.1;  // GPUs of sharing fragmentation per move
  // --execute (a real cluster only): evict as planned, one admitted pod at a time.
  bool execute = false;
  int max_evictions_per_hour = 6;  // counted from the Events of earlier runs
  int step_timeout_seconds = 120;
  int grace_period_seconds = -1;  // the evicted pods'; -1: each pod's own
};

// `tessera defrag --cluster SCENARIO | --kubeconfig F`: the evictions that would admit the
// pending pods, or raise the cluster's placeability, and where each evicted pod would go; a dry
// run unless --execute (docs/defrag.md).
int RunDefragCommand(const DefragOptions& options);

// Adds `tessera defrag` with its flags to `app`; it runs RunDefragCommand when parsed and ends
// the parse with its exit code.
void AddDefragCommand(CLI::App& app);

}  // namespace tessera::app
