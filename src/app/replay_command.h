#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/common/result.h"

namespace CLI {
class App;
}

namespace tessera::app {

struct ReplayOptions {
  std::string nodes_csv;
  // Pod list CSVs; a directory stands for every *pod_list*.csv in it.
  std::vector<std::string> pods_csv;
  std::vector<std::string> policies;
  std::string seeds = "42-51";
  double tune = 1.3;
  std::string out_dir;
  int jobs = 1;
  std::string reference_csv;  // published summary to compare with; optional
  std::string tie_break = "first";
  bool skip_bound = false;  // --no-bound: skip the LP upper bound
  // --define-node-policy NAME=PLUGIN:WEIGHT,...: replayed as the policy "tessera:NAME".
  std::vector<std::string> node_policy_definitions;
};

// "42-51", "1,2,3" or a mix; errors name --seeds.
Result<std::vector<uint64_t>> ParseSeeds(const std::string& text);

// `tessera replay`: the FGD paper's protocol on a trace; prints a table, writes CSV and HTML.
int RunReplayCommand(const ReplayOptions& options);

// Adds `tessera replay` with its flags to `app`: the trace replay (RunReplayCommand), or with
// --mig the MIG placement benchmark (RunMigReplayCommand), which shares --policy, --seeds,
// --out, --jobs and --define-node-policy with it. It runs when parsed and ends the parse with
// its exit code.
void AddReplayCommand(CLI::App& app);

}  // namespace tessera::app
