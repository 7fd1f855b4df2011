#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/common/result.h"
#include "core/sched/node_policy.h"
#include "sim/mig_replay/offline_guided.h"

namespace tessera::sim::mig_replay {

// `tessera replay --mig` (docs/mig-replay.md): the MIG placement benchmark.
struct MigReplayOptions {
  std::vector<std::string> fleets;     // empty: every fleet
  std::vector<std::string> workloads;  // empty: the synthetic and memory mixes, openb with a trace
  std::vector<std::string> policies;   // empty: the default set
  std::vector<uint64_t> seeds = {42, 43, 44, 45, 46};
  std::string trace_csv;  // openb pod list; optional
  int nodes_per_fleet = 16;
  std::vector<double> loads = {0.6, 0.9, 1.2};
  int stop_after_rejections = 100;
  bool skip_optimum = false;
  bool skip_pending = false;  // no pending-queue protocol
  // Fleets of at most this many GPUs also get the placement LP bound (0: never).
  int placement_bound_max_gpus = 16;
  // How hard offline-lp-guided searches where the placement bound runs.
  OfflineGuideOptions offline_guide;
  std::string out_dir;  // empty: no files
  int jobs = 1;
  // Operators' node policies (--define-node-policy): tessera under each is the policy
  // "tessera:NAME", which --policy may name.
  std::vector<sched::NodePolicy> node_policies;
  // Each N > 0 adds the policy "tessera+defrag-N" on the pending-queue protocols: tessera with
  // a defragmentation round every `defrag_interval_minutes`, at most N evictions per hour, a
  // mean lifetime taken as `mean_lifetime_minutes` (docs/defrag.md, "Measured in the
  // simulator"). Empty or 0: no defragmentation, nothing changes.
  std::vector<int> defrag_evictions_per_hour;
  double defrag_interval_minutes = 10;
  double mean_lifetime_minutes = 60;
};

// Checks the options, runs every cell, prints one line per cell (and the offline-optimum ratios)
// on stdout with a progress bar on a terminal's stderr, and writes summary.csv, runs.csv,
// optimum.csv and report.html under out_dir. An error names the option at fault.
Status ReplayMig(const MigReplayOptions& options);

// "42-46", "1, 5, 7-9": the seeds as a reader would write them.
std::string SeedsLabel(const std::vector<uint64_t>& seeds);

}  // namespace tessera::sim::mig_replay
