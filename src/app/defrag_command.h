#pragma once

#include <string>

namespace CLI {
class App;
}

namespace tessera::app {

struct DefragOptions {
  std::string cluster;          // a scenario file, run first (as `tessera simulate`)
  std::string output = "text";  // text or json
  int max_evictions = 4;
  double min_gain = 1.0;                // GiB of MIG placeability per move
  double min_fragmentation_drop = 0.1;  // GPUs of sharing fragmentation per move
};

// `tessera defrag --cluster SCENARIO`: the evictions that would admit the pending pods, or raise
// the cluster's placeability, and where each evicted pod would go; a dry run (docs/defrag.md).
int RunDefragCommand(const DefragOptions& options);

// Adds `tessera defrag` with its flags to `app`; it runs RunDefragCommand when parsed and ends
// the parse with its exit code.
void AddDefragCommand(CLI::App& app);

}  // namespace tessera::app
