#pragma once

#include <string>
#include <vector>

namespace tessera::app {

struct MigReplayOptions {
  std::vector<std::string> fleets;  // empty: every fleet
  std::vector<std::string>
      workloads;  // empty: the synthetic and memory mixes, and openb with --trace
  std::vector<std::string> policies;  // empty: every policy
  std::string seeds = "42-46";
  std::string trace_csv;  // openb pod list; optional
  int nodes_per_fleet = 16;
  std::vector<double> loads = {0.6, 0.9, 1.2};
  int stop_after_rejections = 100;
  bool skip_optimum = false;
  bool skip_pending = false;  // no pending-queue protocol
  std::string out_dir;
  int jobs = 1;
};

// `tessera replay --mig`: the MIG placement benchmark (docs/mig-replay.md). Prints one line per
// cell, writes summary.csv, runs.csv, optimum.csv and report.html under --out.
// Parses the seeds and hands the rest to sim::mig_replay::ReplayMig.
int RunMigReplayCommand(const MigReplayOptions& options);

}  // namespace tessera::app
